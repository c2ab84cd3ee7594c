#include "arenafem/memory/owned_stream.hpp"

#include "arenafem/memory/config.hpp"
#include "arenafem/memory/error.hpp"

#if AFEM_HAS_CUDA
#include <cuda_runtime_api.h>

#include "arenafem/memory/detail/cuda_check.hpp"
#include "arenafem/memory/detail/cuda_device_guard.hpp"
#endif

namespace afem::memory {

OwnedStream::OwnedStream(Device device) {
  if (device.is_cpu()) {
    return;
  }
#if AFEM_HAS_CUDA
  const detail::CudaDeviceGuard guard(device.ordinal());
  cudaStream_t created = nullptr;
  AFEM_CUDA_TRY(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
  stream_ = Stream::from_native(device, created);
#else
  throw Error("OwnedStream: a stream on " + device.name() +
              " in a build without CUDA; rebuild with ARENAFEM_CUDA=ON");
#endif
}

OwnedStream::~OwnedStream() {
#if AFEM_HAS_CUDA
  if (stream_.device().is_cuda()) {
    const detail::CudaDeviceGuard guard(stream_.device().ordinal());
    auto* const native = static_cast<cudaStream_t>(stream_.native_handle());
    (void)cudaStreamSynchronize(native);
    (void)cudaStreamDestroy(native);
  }
#endif
}

}  // namespace afem::memory
