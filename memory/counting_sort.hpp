#pragma once

/// @file
/// counting_sort_indices: the positions 0..n-1 of an array of small integer keys, sorted stably by
/// key, with the start of every key's run. Binning particles into cells and gathering element
/// contributions by node are such sorts; the answer does not depend on the thread count.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "memory/arena.hpp"
#include "memory/array_view.hpp"
#include "memory/error.hpp"
#include "memory/temporary.hpp"

#if AFEM_HAS_CUDA
#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include "memory/thrust_allocator.hpp"
#elif defined(_OPENMP)
#include <omp.h>
#endif

namespace afem::memory {

namespace detail {

/// Below this many keys a CPU sort runs on one thread: a fork/join costs more than it saves.
inline constexpr std::size_t counting_sort_grain = std::size_t{1} << 14;

/// One thread's part of the CPU counting sort: `part` of `parts` equal ranges of the keys, with
/// `counts` (parts x key_count) and `run_starts` (parts) shared by all parts. `barrier` separates
/// the phases (an OpenMP barrier, or nothing on one thread). A thread whose `part` is `parts` or
/// more has no range and only meets the barriers, so that the team keeps its size (an OpenMP
/// runtime ends and later restarts the threads a smaller team leaves out).
template <class Barrier>
void counting_sort_phases(ArrayView<const std::int32_t> keys, std::size_t key_count,
                          ArrayView<std::int32_t> sorted, ArrayView<std::int32_t> offsets,
                          std::int32_t* counts, std::int64_t* run_starts, std::size_t parts,
                          std::size_t part, Barrier barrier) {
  if (part >= parts) {
    barrier();
    barrier();
    barrier();
    return;
  }
  const std::size_t n = keys.size();
  const std::size_t begin = n * part / parts;
  const std::size_t end = n * (part + 1) / parts;
  std::int32_t* count = counts + part * key_count;
  std::fill(count, count + key_count, 0);
  for (std::size_t i = begin; i < end; ++i) {
    ++count[keys[i]];
  }
  barrier();
  // Key k of part p starts after every smaller key and after key k of the parts before p. Each
  // part sums a range of keys, then turns that range into starts.
  const std::size_t key_begin = key_count * part / parts;
  const std::size_t key_end = key_count * (part + 1) / parts;
  std::int64_t total = 0;
  for (std::size_t k = key_begin; k < key_end; ++k) {
    for (std::size_t p = 0; p < parts; ++p) {
      total += counts[p * key_count + k];
    }
  }
  run_starts[part] = total;
  barrier();
  std::int64_t running = 0;
  for (std::size_t p = 0; p < part; ++p) {
    running += run_starts[p];
  }
  for (std::size_t k = key_begin; k < key_end; ++k) {
    if (k < offsets.size()) {
      offsets[k] = static_cast<std::int32_t>(running);
    }
    for (std::size_t p = 0; p < parts; ++p) {
      const std::int32_t c = counts[p * key_count + k];
      counts[p * key_count + k] = static_cast<std::int32_t>(running);
      running += c;
    }
  }
  barrier();
  for (std::size_t i = begin; i < end; ++i) {
    sorted[static_cast<std::size_t>(count[keys[i]]++)] = static_cast<std::int32_t>(i);
  }
}

}  // namespace detail

/// Writes to `sorted` the positions 0..n-1 of `keys` (each in [0, key_count)) ordered by key, and
/// positions with equal keys in increasing order (a stable sort), and to `offsets[k]` where key k's
/// run starts in `sorted`, for every k < offsets.size() (key_count entries, or key_count + 1 to
/// have n at the end). All arrays are in the arena's memory. Scratch (a count per key and thread
/// on the CPU, the sort's on CUDA) comes from `scratch` and is given back on return. The result
/// is the same for any thread count. Throws afem::Error when the sizes disagree or n does not fit
/// 32-bit positions; keys outside [0, key_count) are the caller's error (not checked).
/// CPU: one pass to count per part, one to scatter. Below 16384 keys, or with fewer than two
/// positions per key value, one thread does it all; otherwise at most one part per thread and
/// n / key_count parts (each part keeps a count per key value), the other threads of the team idle.
/// CUDA: a stable radix sort of the keys and a search for every key's first position.
inline void counting_sort_indices(ArrayView<const std::int32_t> keys, std::int32_t key_count,
                                  ArrayView<std::int32_t> sorted, ArrayView<std::int32_t> offsets,
                                  Arena& scratch) {
  const std::size_t n = keys.size();
  AFEM_EXPECTS(key_count >= 0 && key_count < std::numeric_limits<std::int32_t>::max(),
               "counting_sort_indices: key_count is " + std::to_string(key_count));
  AFEM_EXPECTS(sorted.size() == n, "counting_sort_indices: " + std::to_string(sorted.size()) +
                                       " places for " + std::to_string(n) + " keys");
  AFEM_EXPECTS(offsets.size() == static_cast<std::size_t>(key_count) ||
                   offsets.size() == static_cast<std::size_t>(key_count) + 1,
               "counting_sort_indices: " + std::to_string(offsets.size()) + " offsets for " +
                   std::to_string(key_count) + " keys, expected key_count or key_count + 1");
  AFEM_EXPECTS(n < std::size_t{1} << 31,
               "counting_sort_indices: " + std::to_string(n) + " keys overflow 32-bit positions");
  const auto keys_total = static_cast<std::size_t>(key_count);
#if AFEM_HAS_CUDA
  auto policy = arena_policy(scratch, "counting_sort.thrust");
  auto sorted_keys = borrow_temporary<std::int32_t>(scratch, n, "counting_sort.keys");
  thrust::copy(policy, keys.begin(), keys.end(), sorted_keys.data());
  thrust::sequence(policy, sorted.begin(), sorted.end());
  thrust::stable_sort_by_key(policy, sorted_keys.data(), sorted_keys.data() + n, sorted.begin());
  thrust::lower_bound(
      policy, sorted_keys.data(), sorted_keys.data() + n,
      thrust::counting_iterator<std::int32_t>(0),
      thrust::counting_iterator<std::int32_t>(static_cast<std::int32_t>(offsets.size())),
      offsets.begin());
  (void)keys_total;
#else
  std::size_t parts = 1;
#if defined(_OPENMP)
  if (n >= detail::counting_sort_grain) {
    parts = static_cast<std::size_t>(std::max(1, omp_get_max_threads()));
    // Each part keeps a count per key value: with few positions per value, fewer parts are faster.
    parts = std::min(parts, std::max<std::size_t>(1, n / std::max<std::size_t>(keys_total, 1)));
  }
#endif
  auto counts = borrow_temporary<std::int32_t>(
      scratch, std::max<std::size_t>(parts * keys_total, 1), "counting_sort.counts");
  auto run_starts = borrow_temporary<std::int64_t>(scratch, parts, "counting_sort.run_starts");
  if (parts == 1) {
    detail::counting_sort_phases(keys, keys_total, sorted, offsets, counts.data(),
                                 run_starts.data(), 1, 0, [] {});
  } else {
#if defined(_OPENMP)
    std::int32_t* count_data = counts.data();
    std::int64_t* start_data = run_starts.data();
    // The whole team, as Thrust's regions have it; threads past `parts` idle. A team smaller
    // than asked for splits the keys into its own number of parts (the result is the same).
#pragma omp parallel
    {
      const auto team = static_cast<std::size_t>(omp_get_num_threads());
      detail::counting_sort_phases(keys, keys_total, sorted, offsets, count_data, start_data,
                                   std::min(parts, team),
                                   static_cast<std::size_t>(omp_get_thread_num()), [] {
#pragma omp barrier
                                   });
    }
#endif
  }
  if (offsets.size() > keys_total) {
    offsets[keys_total] = static_cast<std::int32_t>(n);
  }
#endif
}

}  // namespace afem::memory
