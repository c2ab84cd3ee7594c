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
inline constexpr std::size_t counting_sort_grain = std::size_t{1} << 13;

/// The CPU counting sort cut into `parts` equal ranges of the positions. Part p counts its keys
/// in counts[p * key_count + k], only for k in its span [spans[2p], spans[2p + 1]) (from its
/// smallest key to its largest; empty when the part has no keys): keys that come in runs or grow
/// with the position, as element nodes and binned particles do, give the parts short, barely
/// overlapping spans, so that no phase walks the whole key range once per part. The values are
/// numbered in ranges cut from the spans' union. Each phase runs for every part before the next
/// phase starts; the parts of one phase are independent.
struct CountingSortParts {
  ArrayView<const std::int32_t> keys;
  std::size_t key_count = 0;
  ArrayView<std::int32_t> sorted;
  ArrayView<std::int32_t> offsets;
  std::int32_t* counts = nullptr;
  std::int32_t* spans = nullptr;
  std::int64_t* run_starts = nullptr;
  std::size_t parts = 1;

  [[nodiscard]] std::size_t key_begin(std::size_t part) const { return keys.size() * part / parts; }
  [[nodiscard]] std::size_t span_begin(std::size_t p) const {
    return static_cast<std::size_t>(spans[2 * p]);
  }
  [[nodiscard]] std::size_t span_end(std::size_t p) const {
    return static_cast<std::size_t>(spans[2 * p + 1]);
  }
  /// Where the part's range of values starts: the first starts at 0 and the last ends at
  /// key_count, the others cut the union of the spans into equal ranges.
  [[nodiscard]] std::size_t value_begin(std::size_t part) const {
    if (part == 0 || part == parts) {
      return part == 0 ? 0 : key_count;
    }
    std::size_t low = key_count;
    std::size_t high = 0;
    for (std::size_t p = 0; p < parts; ++p) {
      if (span_begin(p) < span_end(p)) {
        low = std::min(low, span_begin(p));
        high = std::max(high, span_end(p));
      }
    }
    return low < high ? low + (high - low) * part / parts : key_count;
  }

  /// Phase 1: the part's span, and how many of its keys hold each value of it.
  void count(std::size_t part) const {
    const std::size_t begin = key_begin(part);
    const std::size_t end = key_begin(part + 1);
    std::int32_t low = std::numeric_limits<std::int32_t>::max();
    std::int32_t high = -1;
    for (std::size_t i = begin; i < end; ++i) {
      low = std::min(low, keys[i]);
      high = std::max(high, keys[i]);
    }
    if (high < low) {
      low = 0;
      high = -1;
    }
    spans[2 * part] = low;
    spans[2 * part + 1] = high + 1;
    std::int32_t* count = counts + part * key_count;
    std::fill(count + low, count + high + 1, 0);
    for (std::size_t i = begin; i < end; ++i) {
      ++count[keys[i]];
    }
  }

  /// Phase 2: how many keys of all parts hold the values of the part's range of values.
  void sum_values(std::size_t part) const {
    const std::size_t first = value_begin(part);
    const std::size_t last = value_begin(part + 1);
    std::int64_t total = 0;
    for (std::size_t p = 0; p < parts; ++p) {
      const std::int32_t* count = counts + p * key_count;
      const std::size_t end = std::min(last, span_end(p));
      for (std::size_t k = std::max(first, span_begin(p)); k < end; ++k) {
        total += count[k];
      }
    }
    run_starts[part] = total;
  }

  /// Phase 3: value k of part p starts after every smaller value and after value k of the parts
  /// before p; the counts become those starts. The part's range of values is walked in pieces
  /// over which the same parts' spans hold the values: most are held by one span or none.
  void start(std::size_t part) const {
    std::int64_t running = 0;
    for (std::size_t p = 0; p < part; ++p) {
      running += run_starts[p];
    }
    const std::size_t last = value_begin(part + 1);
    for (std::size_t k = value_begin(part); k < last;) {
      std::size_t next = last;
      std::size_t holders = 0;
      std::size_t holder = 0;
      for (std::size_t p = 0; p < parts; ++p) {
        if (span_begin(p) <= k && k < span_end(p)) {
          ++holders;
          holder = p;
          next = std::min(next, span_end(p));
        } else if (k < span_begin(p)) {
          next = std::min(next, span_begin(p));
        }
      }
      if (holders == 0) {
        std::fill(offsets.begin() + k, offsets.begin() + next, static_cast<std::int32_t>(running));
      } else if (holders == 1) {
        std::int32_t* count = counts + holder * key_count;
        for (std::size_t v = k; v < next; ++v) {
          const std::int32_t c = count[v];
          count[v] = static_cast<std::int32_t>(running);
          offsets[v] = static_cast<std::int32_t>(running);
          running += c;
        }
      } else {
        for (std::size_t v = k; v < next; ++v) {
          offsets[v] = static_cast<std::int32_t>(running);
          for (std::size_t p = 0; p < parts; ++p) {
            if (span_begin(p) <= v && v < span_end(p)) {
              std::int32_t& count = counts[p * key_count + v];
              const std::int32_t c = count;
              count = static_cast<std::int32_t>(running);
              running += c;
            }
          }
        }
      }
      k = next;
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
/// have n at the end). All arrays are in the arena's memory. Scratch (on the CPU a count per key
/// value and part, at most 4 n of them; the sort's on CUDA) comes from `scratch` and is given
/// back on return. The result is the same for any thread count. Throws afem::Error when the sizes
/// disagree or n does not fit 32-bit positions; keys outside [0, key_count) are the caller's
/// error (not checked).
/// CPU: one pass to count per part, one to scatter, the four phases in one parallel_phases region
/// (one fork/join of the team). Below 8192 keys, or with fewer than half as many keys as key
/// values, one part; otherwise at most one part per thread and 4 n / key_count parts (each part
/// counts over the span of its key values).
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
  // Each part counts over its span of key values: a span covers the whole range only when the
  // keys are scattered, so with fewer than half as many keys as values stay on one thread (and
  // the counts, parts x key_count, stay within 4 n).
  std::size_t parts = 1;
  if (n >= detail::counting_sort_grain) {
    parts = std::min(static_cast<std::size_t>(parallel_team_size()),
                     std::max<std::size_t>(1, 4 * n / std::max<std::size_t>(keys_total, 1)));
  }
  auto counts = borrow_temporary<std::int32_t>(
      scratch, std::max<std::size_t>(parts * keys_total, 1), "counting_sort.counts");
  auto spans = borrow_temporary<std::int32_t>(scratch, 2 * parts, "counting_sort.spans");
  auto run_starts = borrow_temporary<std::int64_t>(scratch, parts, "counting_sort.run_starts");
  const detail::CountingSortParts sort{
      keys, keys_total, sorted, offsets, counts.data(), spans.data(), run_starts.data(), parts};
  parallel_phases(LoopPhase{parts, 1, [&](std::size_t part) { sort.count(part); }},
                  LoopPhase{parts, 1, [&](std::size_t part) { sort.sum_values(part); }},
                  LoopPhase{parts, 1, [&](std::size_t part) { sort.start(part); }},
                  LoopPhase{parts, 1, [&](std::size_t part) { sort.scatter(part); }});
  if (offsets.size() > keys_total) {
    offsets[keys_total] = static_cast<std::int32_t>(n);
  }
#endif
}

}  // namespace afem::memory
