#pragma once

/// @file
/// AFEM_CUDA_TRY: turns a failed CUDA runtime call into afem::CudaError with file:line and the
/// CUDA error name. Included only by sources compiled in CUDA builds.

#include <cuda_runtime_api.h>

#include <string>

#include "arenafem/memory/error.hpp"

#define AFEM_CUDA_TRY(call)                                                                     \
  do {                                                                                          \
    const cudaError_t afem_cuda_status = (call);                                                \
    if (afem_cuda_status != cudaSuccess) {                                                      \
      throw ::afem::CudaError(std::string(#call) + " failed with " +                            \
                              cudaGetErrorName(afem_cuda_status) + " (" +                       \
                              cudaGetErrorString(afem_cuda_status) + ") at " + __FILE__ + ":" + \
                              std::to_string(__LINE__));                                        \
    }                                                                                           \
  } while (false)
