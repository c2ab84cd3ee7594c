#pragma once

/// @file
/// HostResource: aligned host memory from the system allocator.

#include "arenafem/memory/upstream_resource.hpp"

namespace afem::memory {

/// Aligned host memory from operator new: afem::block_alignment, and 2 MiB for blocks of 4 MiB or
/// more, so that where transparent huge pages are on for every mapping the kernel can back them
/// with huge pages. No madvise(MADV_HUGEPAGE): where huge pages are only on request, that request
/// makes the first touch of a block compact memory synchronously (a first matrix assembly of a
/// 1M-node grid 3.3x slower on a cold pool) for a gain within noise once warm. Stateless; blocks
/// are released at once when given back.
class HostResource final : public UpstreamResource {
public:
  [[nodiscard]] void* allocate(std::size_t bytes, const Stream& stream) override;
  void deallocate(void* pointer, std::size_t bytes, const Stream& stream) noexcept override;
  [[nodiscard]] Device device() const override { return Device::cpu(); }

  /// The process-wide instance that Pools use by default.
  [[nodiscard]] static HostResource& instance();
};

}  // namespace afem::memory
