#pragma once

/// @file
/// radix_sort_by_key: a stable sort of integer keys and the values that go with them (matrix
/// plans, lookup bins). All scratch comes from an arena and is borrowed before any work starts, so
/// a sort that does not fit throws afem::OutOfMemory and leaves its arrays as they were; on the
/// CPU the sort makes no call to the system allocator.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/temporary.hpp"

#if AFEM_HAS_CUDA
#include <thrust/sort.h>

#include "arenafem/memory/thrust_allocator.hpp"
#else
#include "arenafem/memory/parallel_for.hpp"
#endif

namespace afem::memory {

/// Integer types radix_sort_by_key orders by value (signed ones too).
template <class Key>
concept RadixKey = std::is_integral_v<Key> && !std::is_same_v<Key, bool> && sizeof(Key) >= 4;

namespace detail {

/// Below this many keys a CPU radix sort runs on one thread.
inline constexpr std::size_t radix_sort_grain = std::size_t{1} << 14;
inline constexpr int radix_bits = 11;
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
  [[nodiscard]] static std::size_t digit(Key key, int at) {
    return static_cast<std::size_t>(radix_bits_of(key) >> at) & (radix_buckets - 1);
  }

  // The loops work on locals: stores through the arrays could otherwise alias the members.
  void count(std::size_t part) const {
    std::size_t* count = counts + part * radix_buckets;
    std::fill(count, count + radix_buckets, std::size_t{0});
    const Key* keys = from_keys;
    const int at = shift;
    for (std::size_t i = begin(part), end = begin(part + 1); i < end; ++i) {
      ++count[digit(keys[i], at)];
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
    const Key* keys = from_keys;
    const Value* values = from_values;
    Key* out_keys = to_keys;
    Value* out_values = to_values;
    const int at = shift;
    for (std::size_t i = begin(part), end = begin(part + 1); i < end; ++i) {
      const std::size_t to = place[digit(keys[i], at)]++;
      out_keys[to] = keys[i];
      out_values[to] = values[i];
    }
  }
};

}  // namespace detail

/// Sorts `keys` in increasing order and moves `values[i]` along with `keys[i]`; equal keys keep
/// their order (a stable sort). Both arrays are in the arena's memory and of equal size. Scratch
/// (a copy of both arrays and a count per digit and thread on the CPU, the sort's on CUDA) comes
/// from `scratch` and is given back on return. Throws afem::Error when the sizes differ and
/// afem::OutOfMemory when the scratch does not fit, leaving both arrays as they were.
/// CPU: least-significant-digit first, 11 bits a pass, skipping the digits that every key shares
/// (keys below 2^22 take two passes); at most one part per thread, one part below 16384 keys. The
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

}  // namespace afem::memory
