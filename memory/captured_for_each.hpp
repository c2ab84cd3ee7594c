#pragma once

/// @file
/// captured_for_each: records a for_each over [0, n) as one launch of a captured step. Include it
/// from sources that run Thrust kernels (compiled by nvcc in the CUDA build).

#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstddef>

#include "arenafem/memory/capture_cache.hpp"
#include "arenafem/memory/config.hpp"

namespace afem::memory {

/// Records functor(i) for every i in [0, n) on the replay's stream (on the host for a CPU stream),
/// without a synchronization (a CUDA graph cannot hold one). `functor` is copied into the
/// recording: it must hold views, not handles.
template <class Functor>
void captured_for_each(CaptureRecorder& recorder, std::size_t n, Functor functor) {
  recorder.launch([n, functor](const Stream& stream) {
#if AFEM_HAS_CUDA
    if (stream.device().is_cuda()) {
      thrust::for_each_n(
          thrust::cuda::par_nosync.on(static_cast<cudaStream_t>(stream.native_handle())),
          thrust::counting_iterator<std::size_t>(0), n, functor);
      return;
    }
    thrust::for_each_n(thrust::host, thrust::counting_iterator<std::size_t>(0), n, functor);
#else
    (void)stream;
    thrust::for_each_n(thrust::device, thrust::counting_iterator<std::size_t>(0), n, functor);
#endif
  });
}

}  // namespace afem::memory
