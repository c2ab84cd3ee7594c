#include "arenafem/memory/cuda_resource.hpp"

#include <string>

#include "arenafem/memory/config.hpp"
#include "arenafem/memory/error.hpp"

#if AFEM_HAS_CUDA
#include <cuda_runtime_api.h>

#include "arenafem/memory/detail/cuda_check.hpp"
#include "arenafem/memory/detail/cuda_device_guard.hpp"
#endif

namespace afem::memory {

namespace {
#if AFEM_HAS_CUDA
cudaStream_t native(const Stream& stream) {
  return static_cast<cudaStream_t>(stream.native_handle());
}
#endif
}  // namespace

CudaAsyncResource::CudaAsyncResource(int ordinal) : device_(Device::cuda(ordinal)) {
#if !AFEM_HAS_CUDA
  throw Error("CudaAsyncResource: this build has no CUDA backend; rebuild with ARENAFEM_CUDA=ON");
#endif
}

void* CudaAsyncResource::allocate(std::size_t bytes, const Stream& stream) {
  AFEM_EXPECTS(stream.device() == device_, "CudaAsyncResource::allocate: stream on " +
                                               stream.device().name() + "; expected " +
                                               device_.name());
#if AFEM_HAS_CUDA
  const detail::CudaDeviceGuard guard(device_.ordinal());
  void* pointer = nullptr;
  const cudaError_t status = cudaMallocAsync(&pointer, bytes, native(stream));
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw OutOfMemory("CudaAsyncResource: " + device_.name() + " refused " + std::to_string(bytes) +
                      " bytes");
  }
  AFEM_CUDA_TRY(status);
  return pointer;
#else
  (void)bytes;
  throw Error("CudaAsyncResource: this build has no CUDA backend");
#endif
}

void CudaAsyncResource::deallocate(void* pointer, std::size_t /*bytes*/,
                                   const Stream& stream) noexcept {
#if AFEM_HAS_CUDA
  int previous = 0;
  (void)cudaGetDevice(&previous);
  (void)cudaSetDevice(device_.ordinal());
  const cudaError_t status = cudaFreeAsync(pointer, native(stream));
  (void)cudaSetDevice(previous);
  if (status != cudaSuccess) {
    ::afem::detail::report_noexcept_failure(cudaGetErrorName(status), __FILE__, __LINE__);
  }
#else
  (void)pointer;
  (void)stream;
#endif
}

}  // namespace afem::memory
