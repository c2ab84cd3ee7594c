#pragma once

/// @file
/// In the OpenMP build, Thrust's for_each, for_each_n, fill, reduce and copy_if on an arena_policy
/// run on the parallel_for team instead of an OpenMP parallel region: the caller never waits for a
/// thread the OS has not scheduled, and loops shorter than a grain stay on the calling thread.
/// Thrust finds these overloads by argument-dependent lookup on the policy (its allocator is ours),
/// and so do Thrust's own algorithms built on them (copy, transform, count, ...). Reductions
/// and copy_if cut their input into blocks that depend only on its length, so their results do not
/// depend on the thread count, floating-point sums included.

#include <algorithm>
#include <array>
#include <cstddef>
#include <type_traits>

#include <thrust/detail/execute_with_allocator.h>
#include <thrust/detail/function.h>
#include <thrust/detail/raw_reference_cast.h>
#include <thrust/functional.h>
#include <thrust/iterator/iterator_traits.h>
#include <thrust/system/omp/detail/reduce.h>
#include <thrust/system/omp/execution_policy.h>

#include "arenafem/memory/parallel_for.hpp"

namespace afem::memory {

class ArenaThrustAllocator;

/// The policy arena_policy returns in the OpenMP build.
using ArenaOmpPolicy =
    thrust::detail::execute_with_allocator<ArenaThrustAllocator,
                                           thrust::system::omp::detail::execution_policy>;

namespace detail {

/// Indices per chunk of a Thrust for_each on the team: loops below two grains stay serial.
inline constexpr std::size_t thrust_for_each_grain = 256;

/// The fixed blocks of a reduction or copy_if of `n` elements: at most `max_blocks` blocks of at
/// least `min_block` elements each.
struct Blocks {
  static constexpr std::size_t max_blocks = 256;
  static constexpr std::size_t min_block = 4096;

  explicit Blocks(std::size_t n)
      : size(std::max(min_block, (n + max_blocks - 1) / max_blocks)),
        count((n + size - 1) / size),
        total(n) {}

  [[nodiscard]] std::size_t begin(std::size_t b) const { return b * size; }
  [[nodiscard]] std::size_t end(std::size_t b) const { return std::min(total, (b + 1) * size); }

  std::size_t size;
  std::size_t count;
  std::size_t total;
};

/// The sum of the `n` (>= 1) elements from `it` in four interleaved partial sums (element i into
/// sum i % 4, the last n % 4 into sum 0, then (s0 + s1) + (s2 + s3)): one running sum would make
/// every addition wait for the previous one, which bounds a dot product by the adder's latency
/// rather than by memory. The order depends on n alone.
template <class T, class Iterator>
T interleaved_block_sum(Iterator it, std::size_t n) {
  using Difference = thrust::detail::it_difference_t<Iterator>;
  if (n < 8) {
    T sum = thrust::raw_reference_cast(*it);
    for (std::size_t i = 1; i < n; ++i) {
      sum += thrust::raw_reference_cast(*(it + static_cast<Difference>(i)));
    }
    return sum;
  }
  T lane[4];
  for (std::size_t l = 0; l < 4; ++l) {
    lane[l] = thrust::raw_reference_cast(*(it + static_cast<Difference>(l)));
  }
  std::size_t i = 4;
  for (; i + 4 <= n; i += 4) {
    for (std::size_t l = 0; l < 4; ++l) {
      lane[l] += thrust::raw_reference_cast(*(it + static_cast<Difference>(i + l)));
    }
  }
  for (; i < n; ++i) {
    lane[0] += thrust::raw_reference_cast(*(it + static_cast<Difference>(i)));
  }
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

/// Whether a reduction is a floating-point sum, which reduce() splits into interleaved partial
/// sums (interleaved_block_sum); other operations fold in element order.
template <class T, class BinaryFunction>
inline constexpr bool interleaved_sum = std::is_floating_point_v<T> &&
                                        (std::is_same_v<BinaryFunction, thrust::plus<T>> ||
                                         std::is_same_v<BinaryFunction, thrust::plus<void>>);

}  // namespace detail

/// Thrust's for_each_n on an arena policy: parallel_for over [0, n).
template <class Iterator, class Size, class Function>
Iterator for_each_n(ArenaOmpPolicy& /*policy*/, Iterator first, Size n, Function f) {
  if (n <= 0) {
    return first;
  }
  using Difference = thrust::detail::it_difference_t<Iterator>;
  const thrust::detail::wrapped_function<Function, void> call{f};
  parallel_for(static_cast<std::size_t>(n), detail::thrust_for_each_grain,
               [&](std::size_t i) { call(*(first + static_cast<Difference>(i))); });
  return first + static_cast<Difference>(n);
}

/// Thrust's for_each on an arena policy (copy comes here, and fill of anything but a pointer
/// range): parallel_for over the range.
template <class Iterator, class Function>
Iterator for_each(ArenaOmpPolicy& policy, Iterator first, Iterator last, Function f) {
  return for_each_n(policy, first, last - first, f);
}

/// Thrust's fill on an arena policy over contiguous memory: std::fill (a memset for bytes) on
/// blocks of 64 KiB, on the team from two blocks on. (A fill through for_each stores one element
/// per call, and a byte store may alias anything, so nothing of the loop stays in registers.)
template <class T, class Value>
requires std::is_trivially_copyable_v<T> && std::is_convertible_v<const Value&, T>
void fill(ArenaOmpPolicy& /*policy*/, T* first, T* last, const Value& value) {
  const auto n = static_cast<std::size_t>(last - first);
  constexpr std::size_t block = std::max<std::size_t>(1, (std::size_t{1} << 16) / sizeof(T));
  const T fill_value = value;
  parallel_for((n + block - 1) / block, 1, [&](std::size_t b) {
    std::fill(first + b * block, first + std::min(n, (b + 1) * block), fill_value);
  });
}

/// Thrust's reduce on an arena policy: each fixed block reduced on the team, then the blocks in
/// order on the calling thread.
template <class Iterator, class T, class BinaryFunction>
T reduce(ArenaOmpPolicy& policy, Iterator first, Iterator last, T init, BinaryFunction op) {
  if constexpr (!std::is_default_constructible_v<T>) {
    return thrust::system::omp::detail::reduce(policy, first, last, init, op);
  } else {
    const auto n = static_cast<std::size_t>(last - first);
    if (n == 0) {
      return init;
    }
    using Difference = thrust::detail::it_difference_t<Iterator>;
    const detail::Blocks blocks(n);
    std::array<T, detail::Blocks::max_blocks> partial{};
    parallel_for(blocks.count, 1, [&](std::size_t b) {
      auto it = first + static_cast<Difference>(blocks.begin(b));
      if constexpr (detail::interleaved_sum<T, BinaryFunction>) {
        partial[b] = detail::interleaved_block_sum<T>(it, blocks.end(b) - blocks.begin(b));
      } else {
        T sum = thrust::raw_reference_cast(*it);
        for (std::size_t i = blocks.begin(b) + 1; i < blocks.end(b); ++i) {
          ++it;
          sum = op(sum, thrust::raw_reference_cast(*it));
        }
        partial[b] = sum;
      }
    });
    T result = init;
    for (std::size_t b = 0; b < blocks.count; ++b) {
      result = op(result, partial[b]);
    }
    return result;
  }
}

/// Thrust's copy_if on an arena policy: the kept elements of each fixed block counted, then each
/// block written after the blocks before it, as two phases of one parallel_phases region. The
/// predicate runs twice per element, so it must be a pure function of the element (as Thrust's
/// parallel backends require).
template <class InputIterator, class OutputIterator, class Predicate>
OutputIterator copy_if(ArenaOmpPolicy& /*policy*/, InputIterator first, InputIterator last,
                       OutputIterator result, Predicate pred) {
  const auto n = static_cast<std::size_t>(last - first);
  using InDifference = thrust::detail::it_difference_t<InputIterator>;
  using OutDifference = thrust::detail::it_difference_t<OutputIterator>;
  const thrust::detail::wrapped_function<Predicate, bool> keep{pred};
  const detail::Blocks blocks(n);
  std::array<std::size_t, detail::Blocks::max_blocks> kept{};
  parallel_phases(LoopPhase{blocks.count, 1,
                            [&](std::size_t b) {
                              std::size_t count = 0;
                              for (std::size_t i = blocks.begin(b); i < blocks.end(b); ++i) {
                                count += keep(*(first + static_cast<InDifference>(i))) ? 1 : 0;
                              }
                              kept[b] = count;
                            }},
                  LoopPhase{blocks.count, 1, [&](std::size_t b) {
                              // At most max_blocks counts before it: each block sums its own.
                              std::size_t start = 0;
                              for (std::size_t before = 0; before < b; ++before) {
                                start += kept[before];
                              }
                              auto out = result + static_cast<OutDifference>(start);
                              for (std::size_t i = blocks.begin(b); i < blocks.end(b); ++i) {
                                const auto in = first + static_cast<InDifference>(i);
                                if (keep(*in)) {
                                  *out = *in;
                                  ++out;
                                }
                              }
                            }});
  std::size_t total = 0;
  for (std::size_t b = 0; b < blocks.count; ++b) {
    total += kept[b];
  }
  return result + static_cast<OutDifference>(total);
}

}  // namespace afem::memory
