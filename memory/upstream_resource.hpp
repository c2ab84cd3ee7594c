#pragma once

/// @file
/// UpstreamResource: where a Pool gets its memory from (aligned host memory, CUDA stream-ordered
/// memory, or a test's checked resource).

#include <cstddef>

#include "arenafem/memory/device.hpp"

namespace afem::memory {

/// The interface a Pool draws blocks from. Implementations hand out blocks aligned to
/// afem::block_alignment and take them back with the same size and stream.
/// Host-side only: kernels never see a resource.
class UpstreamResource {
public:
  UpstreamResource() = default;
  UpstreamResource(const UpstreamResource&) = delete;
  UpstreamResource& operator=(const UpstreamResource&) = delete;
  UpstreamResource(UpstreamResource&&) = delete;
  UpstreamResource& operator=(UpstreamResource&&) = delete;
  virtual ~UpstreamResource() = default;

  /// Allocates `bytes` (> 0) usable in stream order on `stream`; throws afem::OutOfMemory when
  /// the resource cannot provide them.
  [[nodiscard]] virtual void* allocate(std::size_t bytes, const Stream& stream) = 0;

  /// Gives back a block from allocate() with the same size, in stream order on `stream`.
  virtual void deallocate(void* pointer, std::size_t bytes, const Stream& stream) noexcept = 0;

  /// The device whose memory this resource hands out.
  [[nodiscard]] virtual Device device() const = 0;
};

}  // namespace afem::memory
