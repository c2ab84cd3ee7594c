#pragma once

/// @file
/// HostResource: aligned host memory from the system allocator.

#include "memory/upstream_resource.hpp"

namespace afem::memory {

/// Aligned host memory from operator new: afem::block_alignment, and for blocks of 4 MiB or more
/// 2 MiB alignment with a transparent-huge-page hint (madvise), since Pools and Arenas keep such
/// blocks and sweep them step after step (fewer TLB misses). Stateless; blocks are released at
/// once when given back.
class HostResource final : public UpstreamResource {
public:
  [[nodiscard]] void* allocate(std::size_t bytes, const Stream& stream) override;
  void deallocate(void* pointer, std::size_t bytes, const Stream& stream) noexcept override;
  [[nodiscard]] Device device() const override { return Device::cpu(); }

  /// The process-wide instance that Pools use by default.
  [[nodiscard]] static HostResource& instance();
};

}  // namespace afem::memory
