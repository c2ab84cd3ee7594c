// counting_sort_indices: a stable sort of positions by small integer keys, against
// std::stable_sort, for every thread count, below and above the size where it goes parallel.
// Backend-generic: compiled by nvcc in the CUDA build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/counting_sort.hpp"
#include "arenafem/memory/temporary.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"

#if defined(_OPENMP) && !AFEM_HAS_CUDA
#include <omp.h>
#endif

namespace afem::memory {
namespace {

class CountingSortTest : public test::BackendTest {
protected:
  /// Sorts `keys` on the backend; returns the sorted positions and the offsets.
  std::pair<std::vector<std::int32_t>, std::vector<std::int32_t>> sort(
      const std::vector<std::int32_t>& keys, std::int32_t key_count, bool with_end) {
    auto device_keys = borrow_temporary<std::int32_t>(*pool_, keys.size(), "test.keys");
    auto sorted = borrow_temporary<std::int32_t>(*pool_, keys.size(), "test.sorted");
    auto offsets = borrow_temporary<std::int32_t>(
        *pool_, static_cast<std::size_t>(key_count) + (with_end ? 1 : 0), "test.offsets");
    test::copy_to_device(device_keys.view(), keys);
    counting_sort_indices(device_keys.view(), key_count, sorted.view(), offsets.view(), *arena_);
    return {test::copy_to_host(ArrayView<const std::int32_t>(sorted.view())),
            test::copy_to_host(ArrayView<const std::int32_t>(offsets.view()))};
  }
};

/// The stable order and each key's first position, computed the plain way.
std::pair<std::vector<std::int32_t>, std::vector<std::int32_t>> expected_sort(
    const std::vector<std::int32_t>& keys, std::int32_t key_count, bool with_end) {
  std::vector<std::int32_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    return keys[static_cast<std::size_t>(a)] < keys[static_cast<std::size_t>(b)];
  });
  std::vector<std::int32_t> offsets;
  offsets.reserve(static_cast<std::size_t>(key_count) + 1);
  for (std::int32_t k = 0; k < key_count + (with_end ? 1 : 0); ++k) {
    offsets.push_back(static_cast<std::int32_t>(
        std::lower_bound(order.begin(), order.end(), k,
                         [&](std::int32_t position, std::int32_t key) {
                           return keys[static_cast<std::size_t>(position)] < key;
                         }) -
        order.begin()));
  }
  return {order, offsets};
}

TEST_F(CountingSortTest, MatchesAStableSortForAnyThreadCount) {
  std::mt19937 random(7);
  struct Size {
    std::size_t n;
    std::int32_t keys;
  };
  // Below and above the parallel grain, with many or few keys per key value, and keys that go
  // unused (empty runs) at the start, the middle and the end.
  for (const Size size :
       {Size{1000, 37}, Size{100000, 50}, Size{100000, 40000}, Size{70000, 3}, Size{0, 5}}) {
    std::uniform_int_distribution<std::int32_t> key(1, std::max(1, size.keys - 2));
    std::vector<std::int32_t> keys(size.n);
    for (auto& k : keys) {
      k = key(random);
    }
    for (const bool with_end : {false, true}) {
      const auto expected = expected_sort(keys, size.keys, with_end);
#if defined(_OPENMP) && !AFEM_HAS_CUDA
      const int threads = omp_get_max_threads();
      for (const int count : {1, 2, 3, 4}) {
        omp_set_num_threads(count);
        EXPECT_EQ(sort(keys, size.keys, with_end), expected)
            << size.n << " keys of " << size.keys << ", " << count << " threads";
      }
      omp_set_num_threads(threads);
#else
      EXPECT_EQ(sort(keys, size.keys, with_end), expected) << size.n << " keys of " << size.keys;
#endif
    }
  }
  EXPECT_EQ(arena_->stats().live_handles, 0U);
}

// Keys that grow with the position, as element nodes and binned particles do: each thread's
// part counts over a short span of the key values, spans overlap little or not at all, and
// values below, between and above them are held by no part.
TEST_F(CountingSortTest, MatchesAStableSortForKeysThatGrowWithThePosition) {
  struct Case {
    const char* name;
    std::int32_t key_count;
    std::vector<std::int32_t> keys;
  };
  std::vector<Case> cases;
  {
    // The nodes of rows 10 to 50 of the cells of a 128 x 128 grid, cell by cell.
    Case nodes{"grid cell nodes", 129 * 129, {}};
    for (std::int32_t j = 10; j <= 50; ++j) {
      for (std::int32_t i = 0; i < 128; ++i) {
        const std::int32_t n = j * 129 + i;
        for (const std::int32_t node : {n, n + 1, n + 129, n + 130}) {
          nodes.keys.push_back(node);
        }
      }
    }
    cases.push_back(std::move(nodes));
  }
  {
    // Runs of three, from 5000 on, of 20000 values: parts share at most a run's value.
    Case runs{"runs", 20000, std::vector<std::int32_t>(30000)};
    for (std::size_t i = 0; i < runs.keys.size(); ++i) {
      runs.keys[i] = 5000 + static_cast<std::int32_t>(i / 3);
    }
    cases.push_back(std::move(runs));
  }
  {
    // Increasing keys, then one value repeated: the last parts' spans are one value, shared.
    Case repeated{"increasing, then repeated", 12000, std::vector<std::int32_t>(24000, 11999)};
    for (std::size_t i = 0; i < 8000; ++i) {
      repeated.keys[i] = static_cast<std::int32_t>(i);
    }
    cases.push_back(std::move(repeated));
  }
  for (const Case& c : cases) {
    for (const bool with_end : {false, true}) {
      const auto expected = expected_sort(c.keys, c.key_count, with_end);
#if defined(_OPENMP) && !AFEM_HAS_CUDA
      const int threads = omp_get_max_threads();
      for (const int count : {1, 2, 3, 4}) {
        omp_set_num_threads(count);
        EXPECT_EQ(sort(c.keys, c.key_count, with_end), expected)
            << c.name << ", " << count << " threads";
      }
      omp_set_num_threads(threads);
#else
      EXPECT_EQ(sort(c.keys, c.key_count, with_end), expected) << c.name;
#endif
    }
  }
  EXPECT_EQ(arena_->stats().live_handles, 0U);
}

TEST_F(CountingSortTest, RefusesMismatchedSizes) {
  auto keys = borrow_temporary<std::int32_t>(*pool_, 10, "test.keys");
  auto sorted = borrow_temporary<std::int32_t>(*pool_, 9, "test.sorted");
  auto offsets = borrow_temporary<std::int32_t>(*pool_, 4, "test.offsets");
  EXPECT_THROW(counting_sort_indices(keys.view(), 3, sorted.view(), offsets.view(), *arena_),
               Error);
  auto right = borrow_temporary<std::int32_t>(*pool_, 10, "test.sorted");
  EXPECT_THROW(counting_sort_indices(keys.view(), 5, right.view(), offsets.view(), *arena_), Error);
  EXPECT_THROW(counting_sort_indices(keys.view(), -1, right.view(), offsets.view(), *arena_),
               Error);
}

}  // namespace
}  // namespace afem::memory
