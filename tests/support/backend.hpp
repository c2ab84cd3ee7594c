#pragma once

/// @file
/// The device backend of this build for backend-generic tests: where device memory comes from,
/// and copies between it and host vectors (a failed CUDA copy throws afem::CudaError naming the
/// call, so a test never reads a vector that was not filled).

#include <cstring>
#include <memory>
#include <vector>

#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/device_resource.hpp"

#if AFEM_HAS_CUDA
#include "arenafem/memory/detail/cuda_check.hpp"
#endif

namespace afem::test {

/// True when this build's device backend can run here (always on the CPU build; a GPU and driver
/// on the CUDA build).
inline bool device_available() {
#if AFEM_HAS_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
  return true;
#endif
}

template <class T>
void copy_to_device(memory::ArrayView<T> destination, const std::vector<T>& source) {
  if (source.empty()) {
    return;  // nothing to copy, and an empty vector may hold no pointer
  }
#if AFEM_HAS_CUDA
  AFEM_CUDA_TRY(cudaMemcpy(destination.data(), source.data(), source.size() * sizeof(T),
                           cudaMemcpyHostToDevice));
#else
  std::memcpy(destination.data(), source.data(), source.size() * sizeof(T));
#endif
}

template <class T>
std::vector<T> copy_to_host(memory::ArrayView<const T> source) {
  std::vector<T> destination(source.size());
  if (destination.empty()) {
    return destination;
  }
#if AFEM_HAS_CUDA
  AFEM_CUDA_TRY(cudaMemcpy(destination.data(), source.data(), source.size() * sizeof(T),
                           cudaMemcpyDeviceToHost));
#else
  std::memcpy(destination.data(), source.data(), source.size() * sizeof(T));
#endif
  return destination;
}

}  // namespace afem::test
