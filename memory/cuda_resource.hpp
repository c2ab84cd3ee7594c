#pragma once

/// @file
/// CudaAsyncResource: stream-ordered device memory (cudaMallocAsync / cudaFreeAsync).
/// Available in builds with ARENAFEM_CUDA=ON.

#include "arenafem/memory/upstream_resource.hpp"

namespace afem::memory {

/// Device memory of one CUDA GPU from the driver's stream-ordered allocator. A block is
/// allocated and freed in the order of the stream passed in; it owns nothing between calls.
class CudaAsyncResource final : public UpstreamResource {
public:
  /// Memory of the GPU with this ordinal; throws afem::Error in builds without CUDA.
  explicit CudaAsyncResource(int ordinal);

  [[nodiscard]] void* allocate(std::size_t bytes, const Stream& stream) override;
  void deallocate(void* pointer, std::size_t bytes, const Stream& stream) noexcept override;
  [[nodiscard]] Device device() const override { return device_; }

private:
  Device device_;
};

}  // namespace afem::memory
