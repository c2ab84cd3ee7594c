#pragma once

/// @file
/// ArenaThrustAllocator and arena_policy: Thrust/CUB algorithms take their scratch from an Arena.

#include <cstddef>
#include <string>
#include <string_view>

#include <thrust/execution_policy.h>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/error.hpp"

#if AFEM_HAS_CUDA
#if !defined(__CUDACC__)
#error "memory/thrust_allocator.hpp runs Thrust on CUDA in this build: include it from CUDA sources"
#endif
#include <thrust/system/cuda/execution_policy.h>
#endif

namespace afem::memory {

/// A Thrust temporary allocator drawing from an Arena under one label. Holds a pointer to the
/// arena and owns nothing. Thrust gives every scratch buffer back before the algorithm returns,
/// and the arena then stands where it stood before, so a sequence of sorts and scans reuses the
/// same bytes. The OpenMP backend asks for scratch from inside parallel regions, so requests go
/// through Arena::allocate_scratch, which is safe for that; an exception cannot leave such a
/// region, so there a request beyond a hard capacity ends the program with the OutOfMemory
/// message (the CUDA backend throws it). The arena must not be reset while an algorithm runs.
class ArenaThrustAllocator {
public:
  using value_type = char;

  /// Scratch from `arena` under `label`, which must outlive the allocator (a literal, typically).
  explicit ArenaThrustAllocator(Arena& arena, std::string_view label = "thrust.scratch")
      : arena_(&arena), label_(label) {}

  /// Borrows `bytes` of scratch; throws afem::OutOfMemory when the arena cannot provide them.
  [[nodiscard]] char* allocate(std::ptrdiff_t bytes) {
    AFEM_EXPECTS(bytes >= 0,
                 "ArenaThrustAllocator: negative request of " + std::to_string(bytes) + " bytes");
    if (bytes == 0) {
      return nullptr;
    }
    return static_cast<char*>(arena_->allocate_scratch(static_cast<std::size_t>(bytes), label_));
  }

  /// Gives back scratch from allocate().
  void deallocate(char* pointer, std::size_t bytes) noexcept {
    if (pointer != nullptr) {
      arena_->deallocate_scratch(pointer, bytes, label_);
    }
  }

  [[nodiscard]] Arena& arena() const noexcept { return *arena_; }

private:
  Arena* arena_;
  std::string_view label_;
};

/// The Thrust execution policy of this build's device backend (OpenMP on the CPU build, CUDA on
/// the arena's stream in the CUDA build) with its scratch drawn from `arena`. Pass it as the first
/// argument of thrust::sort, exclusive_scan, reduce_by_key and the like. On CUDA an algorithm does
/// not synchronize the stream when it returns (so that a step can be captured into a graph):
/// results are ordered on the stream, and the host reads them through copy_to_host and a stream
/// synchronize, as everywhere here; algorithms that return a value (reduce, count) still wait.
[[nodiscard]] inline auto arena_policy(Arena& arena, std::string_view label = "thrust.scratch") {
  AFEM_EXPECTS(arena.device().is_cuda() == has_cuda,
               "arena_policy: arena '" + std::string(arena.name()) + "' holds " +
                   arena.device().name() + " memory; this build's Thrust backend runs on " +
                   (has_cuda ? "CUDA" : "the CPU") + " and needs an arena of that memory");
#if AFEM_HAS_CUDA
  return thrust::cuda::par_nosync(ArenaThrustAllocator(arena, label))
      .on(static_cast<cudaStream_t>(arena.stream().native_handle()));
#else
  return thrust::device(ArenaThrustAllocator(arena, label));
#endif
}

}  // namespace afem::memory

#if !AFEM_HAS_CUDA && THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
#include "arenafem/memory/detail/thrust_omp_dispatch.hpp"
#endif
