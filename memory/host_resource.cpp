#include "arenafem/memory/host_resource.hpp"

#include <new>
#include <string>

#include "arenafem/memory/config.hpp"
#include "arenafem/memory/error.hpp"

namespace afem::memory {

namespace {
constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;
constexpr std::size_t huge_page_threshold = std::size_t{4} << 20;

std::align_val_t alignment_for(std::size_t bytes) {
  return std::align_val_t{bytes >= huge_page_threshold ? huge_page_bytes : block_alignment};
}
}  // namespace

void* HostResource::allocate(std::size_t bytes, const Stream& stream) {
  AFEM_EXPECTS(stream.device().is_cpu(), "HostResource::allocate: stream on " +
                                             stream.device().name() + "; expected a cpu stream");
  void* pointer = ::operator new(bytes, alignment_for(bytes), std::nothrow);
  if (pointer == nullptr) {
    throw OutOfMemory("HostResource: the system allocator refused " + std::to_string(bytes) +
                      " bytes");
  }
  return pointer;
}

void HostResource::deallocate(void* pointer, std::size_t bytes, const Stream& /*stream*/) noexcept {
  ::operator delete(pointer, alignment_for(bytes));
}

HostResource& HostResource::instance() {
  static HostResource resource;
  return resource;
}

}  // namespace afem::memory
