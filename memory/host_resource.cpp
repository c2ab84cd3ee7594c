#include "memory/host_resource.hpp"

#include <new>
#include <string>

#include "memory/config.hpp"
#include "memory/error.hpp"

namespace afem::memory {

void* HostResource::allocate(std::size_t bytes, const Stream& stream) {
  AFEM_EXPECTS(stream.device().is_cpu(), "HostResource::allocate: stream on " +
                                             stream.device().name() + "; expected a cpu stream");
  void* pointer = ::operator new (bytes, std::align_val_t{block_alignment}, std::nothrow);
  if (pointer == nullptr) {
    throw OutOfMemory("HostResource: the system allocator refused " + std::to_string(bytes) +
                      " bytes");
  }
  return pointer;
}

void HostResource::deallocate(void* pointer, std::size_t /*bytes*/,
                              const Stream& /*stream*/) noexcept {
  ::operator delete (pointer, std::align_val_t{block_alignment});
}

HostResource& HostResource::instance() {
  static HostResource resource;
  return resource;
}

}  // namespace afem::memory
