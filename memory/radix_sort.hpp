#pragma once

/// @file
/// radix_sort_by_key: a stable sort of integer keys and the values that go with them, and
/// radix_sort_rows: row indices ordered lexicographically by rows of integers. Matrix plans,
/// mesh topology and space numbering sort with them. All scratch comes from an arena and is
/// borrowed before any work starts, so a sort that does not fit throws afem::OutOfMemory and
/// leaves its arrays as they were; on the CPU the sort makes no call to the system allocator.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "memory/arena.hpp"
#include "memory/array_view.hpp"
#include "memory/error.hpp"
#include "memory/temporary.hpp"

#if AFEM_HAS_CUDA
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include "memory/thrust_allocator.hpp"
#else
#include "memory/parallel_for.hpp"
#endif

namespace afem::memory {

/// Integer types radix_sort_by_key orders by value (signed ones too).
template <class Key>
concept RadixKey = std::is_integral_v<Key> && !std::is_same_v<Key, bool> && sizeof(Key) >= 4;

namespace detail {

/// Below this many keys a CPU radix sort runs on one thread.
inline constexpr std::size_t radix_sort_grain = std::size_t{1} << 14;
inline constexpr int radix_bits = 8;
inline constexpr std::size_t radix_buckets = std::size_t{1} << radix_bits;

/// The key's bits, the sign bit flipped for signed keys: unsigned order is then value order.
template <RadixKey Key>
[[nodiscard]] constexpr auto radix_bits_of(Key key) {
  using Bits = std::make_unsigned_t<Key>;
  constexpr Bits flip = std::is_signed_v<Key> ? Bits{1} << (8 * sizeof(Key) - 1) : Bits{0};
  return static_cast<Bits>(static_cast<Bits>(key) ^ flip);
}

/// One stable counting pass of the CPU radix sort, cut into `parts` equal ranges: moves
/// (keys, values) from `from` to `to` ordered by the digit at `shift`.
template <class Key, class Value>
struct RadixPass {
  const Key* from_keys = nullptr;
  const Value* from_values = nullptr;
  Key* to_keys = nullptr;
  Value* to_values = nullptr;
  std::size_t n = 0;
  std::size_t parts = 1;
  int shift = 0;
  std::size_t* counts = nullptr;  // parts x radix_buckets

  [[nodiscard]] std::size_t begin(std::size_t part) const { return n * part / parts; }
  [[nodiscard]] std::size_t digit(Key key) const {
    return static_cast<std::size_t>(radix_bits_of(key) >> shift) & (radix_buckets - 1);
  }

  void count(std::size_t part) const {
    std::size_t* count = counts + part * radix_buckets;
    std::fill(count, count + radix_buckets, std::size_t{0});
    for (std::size_t i = begin(part); i < begin(part + 1); ++i) {
      ++count[digit(from_keys[i])];
    }
  }

  /// Digit d of part p starts after every smaller digit and after digit d of the parts before p.
  void start() const {
    std::size_t running = 0;
    for (std::size_t d = 0; d < radix_buckets; ++d) {
      for (std::size_t p = 0; p < parts; ++p) {
        const std::size_t c = counts[p * radix_buckets + d];
        counts[p * radix_buckets + d] = running;
        running += c;
      }
    }
  }

  void scatter(std::size_t part) const {
    std::size_t* place = counts + part * radix_buckets;
    for (std::size_t i = begin(part); i < begin(part + 1); ++i) {
      const std::size_t to = place[digit(from_keys[i])]++;
      to_keys[to] = from_keys[i];
      to_values[to] = from_values[i];
    }
  }
};

}  // namespace detail

/// Sorts `keys` in increasing order and moves `values[i]` along with `keys[i]`; equal keys keep
/// their order (a stable sort). Both arrays are in the arena's memory and of equal size. Scratch
/// (a copy of both arrays and a count per digit and thread on the CPU, the sort's on CUDA) comes
/// from `scratch` and is given back on return. Throws afem::Error when the sizes differ and
/// afem::OutOfMemory when the scratch does not fit, leaving both arrays as they were.
/// CPU: least-significant-digit first, 8 bits a pass, skipping the digits that every key shares
/// (keys below 2^16 take two passes); at most one part per thread, one part below 16384 keys. The
/// result is the same for any thread count. CUDA: Thrust's stable_sort_by_key.
template <RadixKey Key, class Value>
void radix_sort_by_key(ArrayView<Key> keys, ArrayView<Value> values, Arena& scratch) {
  const std::size_t n = keys.size();
  AFEM_EXPECTS(values.size() == n, "radix_sort_by_key: " + std::to_string(values.size()) +
                                       " values for " + std::to_string(n) + " keys");
  if (n < 2) {
    return;
  }
#if AFEM_HAS_CUDA
  thrust::stable_sort_by_key(arena_policy(scratch, "radix_sort.thrust"), keys.begin(), keys.end(),
                             values.begin());
#else
  std::size_t parts = 1;
  if (n >= detail::radix_sort_grain) {
    parts = std::min(static_cast<std::size_t>(parallel_team_size()), n / detail::radix_sort_grain);
  }
  auto other_keys = borrow_temporary<Key>(scratch, n, "radix_sort.keys");
  auto other_values = borrow_temporary<Value>(scratch, n, "radix_sort.values");
  auto counts =
      borrow_temporary<std::size_t>(scratch, parts * detail::radix_buckets, "radix_sort.counts");

  // The bits in which some key differs from the first: only their digits need a pass.
  using Bits = decltype(detail::radix_bits_of(Key{}));
  auto differing_buffer = borrow_temporary<Bits>(scratch, parts, "radix_sort.differing");
  const ArrayView<Bits> differing = differing_buffer.view();
  const Bits first = detail::radix_bits_of(keys[0]);
  parallel_for(parts, 1, [&](std::size_t part) {
    Bits bits{0};
    for (std::size_t i = n * part / parts; i < n * (part + 1) / parts; ++i) {
      bits |= static_cast<Bits>(detail::radix_bits_of(keys[i]) ^ first);
    }
    differing[part] = bits;
  });
  Bits varying{0};
  for (std::size_t p = 0; p < parts; ++p) {
    varying |= differing[p];
  }

  Key* from_keys = keys.data();
  Value* from_values = values.data();
  Key* to_keys = other_keys.data();
  Value* to_values = other_values.data();
  for (int shift = 0; shift < static_cast<int>(8 * sizeof(Key)); shift += detail::radix_bits) {
    if (((varying >> shift) & (detail::radix_buckets - 1)) == 0) {
      continue;
    }
    const detail::RadixPass<Key, Value> pass{from_keys, from_values, to_keys, to_values,
                                             n,         parts,       shift,   counts.data()};
    parallel_for(parts, 1, [&](std::size_t part) { pass.count(part); });
    pass.start();
    parallel_for(parts, 1, [&](std::size_t part) { pass.scatter(part); });
    std::swap(from_keys, to_keys);
    std::swap(from_values, to_values);
  }
  if (from_keys != keys.data()) {  // an odd number of passes left the result in the scratch
    parallel_for(n, detail::radix_sort_grain, [&](std::size_t i) {
      keys[i] = from_keys[i];
      values[i] = from_values[i];
    });
  }
#endif
}

namespace detail {

/// Column `column` of `table` (rows of `width` integers) in the row order `order`.
struct GatherColumn {
  ArrayView<const std::int32_t> table;
  ArrayView<const std::int32_t> order;
  ArrayView<std::int32_t> out;
  int width = 1;
  int column = 0;

  AFEM_HOST_DEVICE void operator()(std::size_t i) const {
    out[i] = table[static_cast<std::size_t>(order[i]) * static_cast<std::size_t>(width) +
                   static_cast<std::size_t>(column)];
  }
};

}  // namespace detail

/// Writes to `order` the indices of the rows of `table` (order.size() rows of `width` integers,
/// row after row) so that the rows come in lexicographic order, equal rows by increasing index.
/// Scratch (one column and the radix sort's) comes from `scratch` and is given back on return.
/// Throws afem::Error when the sizes disagree or the rows overflow 32-bit indices, and
/// afem::OutOfMemory when the scratch does not fit. One stable radix sort per column, last first.
inline void radix_sort_rows(ArrayView<const std::int32_t> table, int width,
                            ArrayView<std::int32_t> order, Arena& scratch) {
  const std::size_t rows = order.size();
  AFEM_EXPECTS(width > 0 && table.size() == rows * static_cast<std::size_t>(width),
               "radix_sort_rows: " + std::to_string(table.size()) + " integers for " +
                   std::to_string(rows) + " rows of " + std::to_string(width));
  AFEM_EXPECTS(rows <= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()),
               "radix_sort_rows: " + std::to_string(rows) + " rows overflow 32-bit indices");
  auto column = borrow_temporary<std::int32_t>(scratch, rows, "radix_sort_rows.column");
  detail::GatherColumn gather{table, order, column.view(), width, width - 1};
#if AFEM_HAS_CUDA
  auto policy = arena_policy(scratch, "radix_sort_rows.thrust");
  thrust::sequence(policy, order.begin(), order.end());
#else
  parallel_for(rows, detail::radix_sort_grain,
               [&](std::size_t i) { order[i] = static_cast<std::int32_t>(i); });
#endif
  for (; gather.column >= 0; --gather.column) {
#if AFEM_HAS_CUDA
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), rows, gather);
#else
    parallel_for(rows, detail::radix_sort_grain, gather);
#endif
    radix_sort_by_key(column.view(), order, scratch);
  }
}

}  // namespace afem::memory
