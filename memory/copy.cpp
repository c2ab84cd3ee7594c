#include "arenafem/memory/copy.hpp"

#include <cstring>

#include "arenafem/memory/config.hpp"

#if AFEM_HAS_CUDA
#include <cuda_runtime_api.h>

#include "arenafem/memory/detail/cuda_check.hpp"
#include "arenafem/memory/detail/cuda_device_guard.hpp"
#endif

namespace afem::memory::detail {

void copy_bytes(void* destination, const void* source, std::size_t bytes, const Device& device,
                bool to_device, const Stream& stream) {
  if (bytes == 0) {
    return;
  }
  if (device.is_cpu()) {
    std::memcpy(destination, source, bytes);
    return;
  }
#if AFEM_HAS_CUDA
  const CudaDeviceGuard guard(device.ordinal());
  const auto native = static_cast<cudaStream_t>(stream.native_handle());
  AFEM_CUDA_TRY(cudaMemcpyAsync(destination, source, bytes,
                                to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                                native));
  AFEM_CUDA_TRY(cudaStreamSynchronize(native));
#else
  (void)to_device;
  (void)stream;
  throw Error("copy: device " + device.name() + " in a build without CUDA");
#endif
}

}  // namespace afem::memory::detail
