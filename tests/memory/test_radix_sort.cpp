// radix_sort_by_key against std::stable_sort, for every thread count, below and above the size
// where it goes parallel; a sort whose scratch does not fit throws and leaves its arrays as they
// were. Backend-generic: compiled by nvcc in the CUDA build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/radix_sort.hpp"
#include "arenafem/memory/temporary.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"
#include "support/thread_count.hpp"

namespace afem::memory {
namespace {

/// Runs `check(label)` on 1 to 4 threads where the thread count can be set, once otherwise.
template <class Check>
void for_each_thread_count(const Check& check) {
#if defined(_OPENMP) && !AFEM_HAS_CUDA
  for (const int count : {1, 2, 3, 4}) {
    const test::ThreadCount threads(count);
    check(std::to_string(count) + " threads");
  }
#else
  check(std::string("the device"));
#endif
}

class RadixSortTest : public test::BackendTest {
protected:
  /// Sorts `keys` with their positions as values on the backend; returns both, sorted.
  template <class Key>
  std::pair<std::vector<Key>, std::vector<std::int32_t>> sort(const std::vector<Key>& keys,
                                                              Arena& arena) {
    auto device_keys = borrow_temporary<Key>(*pool_, keys.size(), "test.keys");
    auto values = borrow_temporary<std::int32_t>(*pool_, keys.size(), "test.values");
    std::vector<std::int32_t> positions(keys.size());
    std::iota(positions.begin(), positions.end(), 0);
    test::copy_to_device(device_keys.view(), keys);
    test::copy_to_device(values.view(), positions);
    radix_sort_by_key(device_keys.view(), values.view(), arena);
    return {test::copy_to_host(ArrayView<const Key>(device_keys.view())),
            test::copy_to_host(ArrayView<const std::int32_t>(values.view()))};
  }

  template <class Key>
  void expect_stable_sort(const std::vector<Key>& keys, const std::string& what) {
    std::vector<std::int32_t> order(keys.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
      return keys[static_cast<std::size_t>(a)] < keys[static_cast<std::size_t>(b)];
    });
    std::vector<Key> sorted;
    sorted.reserve(keys.size());
    for (const std::int32_t i : order) {
      sorted.push_back(keys[static_cast<std::size_t>(i)]);
    }
    for_each_thread_count([&](const std::string& threads) {
      const auto [got_keys, got_positions] = sort(keys, *arena_);
      EXPECT_EQ(got_keys, sorted) << what << ", " << threads;
      EXPECT_EQ(got_positions, order) << what << ", " << threads;
    });
    EXPECT_EQ(arena_->stats().live_handles, 0U);
  }
};

template <class Key>
std::vector<Key> random_keys(std::size_t n, Key low, Key high, unsigned seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<Key> key(low, high);
  std::vector<Key> keys(n);
  for (auto& k : keys) {
    k = key(random);
  }
  return keys;
}

TEST_F(RadixSortTest, SortsKeysStablyForAnyThreadCount) {
  // Few distinct keys (long runs of equal keys keep their order), keys of every width and sign,
  // below and above the parallel grain.
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{70000}}) {
    expect_stable_sort(random_keys<std::int32_t>(n, 0, 40, 1), "int32 in [0, 40]");
    expect_stable_sort(random_keys<std::int32_t>(n, std::numeric_limits<std::int32_t>::min(),
                                                 std::numeric_limits<std::int32_t>::max(), 2),
                       "any int32");
    expect_stable_sort(
        random_keys<std::int64_t>(n, -(std::int64_t{1} << 40), std::int64_t{1} << 40, 3),
        "int64 in +-2^40");
    expect_stable_sort(
        random_keys<std::uint32_t>(n, 0, std::numeric_limits<std::uint32_t>::max(), 4),
        "any uint32");
    expect_stable_sort(
        random_keys<std::uint64_t>(n, 0, std::numeric_limits<std::uint64_t>::max(), 5),
        "any uint64");
  }
  expect_stable_sort(std::vector<std::int64_t>(50000, 7), "50000 equal keys");
}

TEST_F(RadixSortTest, RefusesMismatchedSizes) {
  auto keys = borrow_temporary<std::int64_t>(*pool_, 10, "test.keys");
  auto values = borrow_temporary<std::int32_t>(*pool_, 9, "test.values");
  EXPECT_THROW(radix_sort_by_key(keys.view(), values.view(), *arena_), Error);
  EXPECT_EQ(arena_->stats().live_handles, 0U);
}

TEST_F(RadixSortTest, ScratchThatDoesNotFitLeavesTheArraysAsTheyWere) {
  const auto keys = random_keys<std::int64_t>(100000, 0, std::int64_t{1} << 40, 6);
  Arena bounded(*pool_, {.name = "bounded", .chunk_bytes = 64 << 10, .capacity_bytes = 64 << 10});
  auto device_keys = borrow_temporary<std::int64_t>(*pool_, keys.size(), "test.keys");
  auto values = borrow_temporary<std::int32_t>(*pool_, keys.size(), "test.values");
  test::copy_to_device(device_keys.view(), keys);
  const std::vector<std::int32_t> positions(keys.size(), 3);
  test::copy_to_device(values.view(), positions);
  EXPECT_THROW(radix_sort_by_key(device_keys.view(), values.view(), bounded), OutOfMemory);
  EXPECT_EQ(test::copy_to_host(ArrayView<const std::int64_t>(device_keys.view())), keys);
  EXPECT_EQ(test::copy_to_host(ArrayView<const std::int32_t>(values.view())), positions);
  EXPECT_EQ(bounded.stats().live_handles, 0U);
}

}  // namespace
}  // namespace afem::memory
