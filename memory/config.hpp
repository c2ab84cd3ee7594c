#pragma once

/// @file
/// Build configuration shared by every layer: the host/device marker and backend facts.

#if defined(__CUDACC__)
/// Marks a function callable from host code and from device kernels.
#define AFEM_HOST_DEVICE __host__ __device__
#else
#define AFEM_HOST_DEVICE
#endif

/// Asks the compiler to inline a small kernel helper whose constants must fold into its caller.
#if defined(__CUDACC__)
#define AFEM_INLINE __forceinline__
#elif defined(__GNUC__)
#define AFEM_INLINE inline __attribute__((always_inline))
#else
#define AFEM_INLINE inline
#endif

/// Keeps a large, rarely taken branch of a kernel helper out of line, so that the helper's other
/// branches inline into their callers without it.
#if defined(__CUDACC__)
#define AFEM_NOINLINE __noinline__
#elif defined(__GNUC__)
#define AFEM_NOINLINE __attribute__((noinline))
#else
#define AFEM_NOINLINE
#endif

#if defined(ARENAFEM_WITH_CUDA)
#define AFEM_HAS_CUDA 1
#else
#define AFEM_HAS_CUDA 0
#endif

#include <cstddef>

namespace afem {

/// True in builds whose device memory and kernels live on a CUDA GPU; false for the OpenMP backend.
inline constexpr bool has_cuda = AFEM_HAS_CUDA != 0;

/// Alignment in bytes of every block a Pool or Arena hands out (matches CUDA's allocation
/// alignment).
inline constexpr std::size_t block_alignment = 256;

namespace memory {

/// Asks the CPU to bring the cache line at `address` in ahead of its use (nothing on the GPU).
/// A prefetch never faults, but the address must still be formed inside its array (callers clamp
/// their look-ahead to the array's end). Call it from a function that inlines into the loop it
/// serves (AFEM_INLINE): GCC deems a prefetch free of side effects and deletes the calls to an
/// out-of-line function that only prefetches.
AFEM_HOST_DEVICE AFEM_INLINE void prefetch(const void* address) {
#if !defined(__CUDA_ARCH__) && defined(__GNUC__)
  __builtin_prefetch(address);
#else
  (void)address;
#endif
}

}  // namespace memory

}  // namespace afem
