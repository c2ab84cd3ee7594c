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

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/temporary.hpp"

#if AFEM_HAS_CUDA
#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include "arenafem/memory/thrust_allocator.hpp"
#else
#include "arenafem/memory/parallel_for.hpp"
#endif

namespace afem::memory {

namespace detail {

/// Below this many keys a CPU sort runs on one thread: a fork/join costs more than it saves.
inline constexpr std::size_t counting_sort_grain = std::size_t{1} << 14;

/// The CPU counting sort cut into `parts` equal ranges of the keys, with `counts` (parts x
/// key_count) and `run_starts` (parts) shared by all parts. Each phase runs for every part before
/// the next phase starts; the parts of one phase are independent of one another.
struct CountingSortParts {
  ArrayView<const std::int32_t> keys;
  std::size_t key_count = 0;
  ArrayView<std::int32_t> sorted;
  ArrayView<std::int32_t> offsets;
  std::int32_t* counts = nullptr;
  std::int64_t* run_starts = nullptr;
  std::size_t parts = 1;

  [[nodiscard]] std::size_t key_begin(std::size_t part) const { return keys.size() * part / parts; }
  [[nodiscard]] std::size_t value_begin(std::size_t part) const { return key_count * part / parts; }

  /// Phase 1: how many of the part's keys hold each value.
  void count(std::size_t part) const {
    std::int32_t* count = counts + part * key_count;
    std::fill(count, count + key_count, 0);
    for (std::size_t i = key_begin(part); i < key_begin(part + 1); ++i) {
      ++count[keys[i]];
    }
  }

  /// Phase 2: how many keys of all parts hold the values of the part's range of values.
  void sum_values(std::size_t part) const {
    std::int64_t total = 0;
    for (std::size_t k = value_begin(part); k < value_begin(part + 1); ++k) {
      for (std::size_t p = 0; p < parts; ++p) {
        total += counts[p * key_count + k];
      }
    }
    run_starts[part] = total;
  }

  /// Phase 3: value k of part p starts after every smaller value and after value k of the parts
  /// before p; the counts become those starts.
  void start(std::size_t part) const {
    std::int64_t running = 0;
    for (std::size_t p = 0; p < part; ++p) {
      running += run_starts[p];
    }
    for (std::size_t k = value_begin(part); k < value_begin(part + 1); ++k) {
      if (k < offsets.size()) {
        offsets[k] = static_cast<std::int32_t>(running);
      }
      for (std::size_t p = 0; p < parts; ++p) {
        const std::int32_t c = counts[p * key_count + k];
        counts[p * key_count + k] = static_cast<std::int32_t>(running);
        running += c;
      }
    }
  }

  /// Phase 4: every position of the part to its place.
  void scatter(std::size_t part) const {
    std::int32_t* count = counts + part * key_count;
    for (std::size_t i = key_begin(part); i < key_begin(part + 1); ++i) {
      sorted[static_cast<std::size_t>(count[keys[i]]++)] = static_cast<std::int32_t>(i);
    }
  }
};

}  // namespace detail

/// Writes to `sorted` the positions 0..n-1 of `keys` (each in [0, key_count)) ordered by key, and
/// positions with equal keys in increasing order (a stable sort), and to `offsets[k]` where key k's
/// run starts in `sorted`, for every k < offsets.size() (key_count entries, or key_count + 1 to
/// have n at the end). All arrays are in the arena's memory. Scratch (a count per key and thread
/// on the CPU, the sort's on CUDA) comes from `scratch` and is given back on return. The result
/// is the same for any thread count. Throws afem::Error when the sizes disagree or n does not fit
/// 32-bit positions; keys outside [0, key_count) are the caller's error (not checked).
/// CPU: one pass to count per part, one to scatter, on the parallel_for team. Below 16384 keys, or
/// with fewer than two positions per key value, one part; otherwise at most one part per thread
/// and n / key_count parts (each part keeps a count per key value).
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
  if (n >= detail::counting_sort_grain) {
    // Each part keeps a count per key value: with few positions per value, fewer parts are faster.
    parts = std::min(static_cast<std::size_t>(parallel_team_size()),
                     std::max<std::size_t>(1, n / std::max<std::size_t>(keys_total, 1)));
  }
  auto counts = borrow_temporary<std::int32_t>(
      scratch, std::max<std::size_t>(parts * keys_total, 1), "counting_sort.counts");
  auto run_starts = borrow_temporary<std::int64_t>(scratch, parts, "counting_sort.run_starts");
  const detail::CountingSortParts sort{keys,          keys_total,        sorted, offsets,
                                       counts.data(), run_starts.data(), parts};
  parallel_for(parts, 1, [&](std::size_t part) { sort.count(part); });
  parallel_for(parts, 1, [&](std::size_t part) { sort.sum_values(part); });
  parallel_for(parts, 1, [&](std::size_t part) { sort.start(part); });
  parallel_for(parts, 1, [&](std::size_t part) { sort.scatter(part); });
  if (offsets.size() > keys_total) {
    offsets[keys_total] = static_cast<std::int32_t>(n);
  }
#endif
}

}  // namespace afem::memory
