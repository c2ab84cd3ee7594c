#pragma once

/// @file
/// CudaDeviceGuard: makes a GPU current for a scope and restores the caller's afterwards.
/// Included only by sources compiled in CUDA builds.

#include <cuda_runtime_api.h>

#include "arenafem/memory/detail/cuda_check.hpp"

namespace afem::memory::detail {

/// Sets the current CUDA device to `ordinal` and puts the previous one back at scope end.
class CudaDeviceGuard {
public:
  explicit CudaDeviceGuard(int ordinal) {
    AFEM_CUDA_TRY(cudaGetDevice(&previous_));
    if (previous_ != ordinal) {
      AFEM_CUDA_TRY(cudaSetDevice(ordinal));
    }
  }
  ~CudaDeviceGuard() { (void)cudaSetDevice(previous_); }
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard(CudaDeviceGuard&&) = delete;
  CudaDeviceGuard& operator=(CudaDeviceGuard&&) = delete;

private:
  int previous_ = 0;
};

}  // namespace afem::memory::detail
