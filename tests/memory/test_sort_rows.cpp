// sort_rows against std::stable_sort of the rows, for every thread count: first columns of few
// values (large groups), of about one value per row (small groups) and spanning all of int32 (the
// column-by-column radix sort); sizes are checked. Backend-generic: compiled by nvcc in the CUDA
// build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/sort_rows.hpp"
#include "arenafem/memory/temporary.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"
#include "support/thread_count.hpp"

namespace afem::memory {
namespace {

class SortRowsTest : public test::BackendTest {
protected:
  /// Sorts the rows of `table` on the backend on 1 to 4 threads (once on CUDA) and expects
  /// std::stable_sort's order every time.
  void expect_stable_order(const std::vector<std::int32_t>& table, int width,
                           const std::string& what) {
    const std::size_t rows = table.size() / static_cast<std::size_t>(width);
    std::vector<std::int32_t> expected(rows);
    std::iota(expected.begin(), expected.end(), 0);
    std::stable_sort(expected.begin(), expected.end(), [&](std::int32_t a, std::int32_t b) {
      const auto row = [&](std::int32_t r) {
        return table.begin() + static_cast<std::ptrdiff_t>(r) * width;
      };
      return std::lexicographical_compare(row(a), row(a) + width, row(b), row(b) + width);
    });
    auto device_table = borrow_temporary<std::int32_t>(*pool_, table.size(), "test.table");
    auto order = borrow_temporary<std::int32_t>(*pool_, rows, "test.order");
    test::copy_to_device(device_table.view(), table);
    auto check = [&](const std::string& threads) {
      sort_rows(device_table.view(), width, order.view(), *arena_);
      EXPECT_EQ(test::copy_to_host(ArrayView<const std::int32_t>(order.view())), expected)
          << what << ": " << rows << " rows of " << width << ", " << threads;
    };
#if defined(_OPENMP) && !AFEM_HAS_CUDA
    for (const int count : {1, 2, 3, 4}) {
      const test::ThreadCount threads(count);
      check(std::to_string(count) + " threads");
    }
#else
    check("the device");
#endif
    EXPECT_EQ(arena_->stats().live_handles, 0U);
  }
};

/// `rows` rows of `width` integers: column 0 uniform in [first_low, first_high], the others in
/// [-3, 3] (many equal rows), every third row's last column the pad INT32_MAX, as in the vertex
/// tuples of a mesh's sides.
std::vector<std::int32_t> random_table(std::size_t rows, int width, std::int32_t first_low,
                                       std::int32_t first_high, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<std::int32_t> first(first_low, first_high);
  std::uniform_int_distribution<std::int32_t> other(-3, 3);
  const auto w = static_cast<std::size_t>(width);
  std::vector<std::int32_t> table(rows * w);
  for (std::size_t r = 0; r < rows; ++r) {
    table[r * w] = first(random);
    for (std::size_t c = 1; c < w; ++c) {
      table[r * w + c] = other(random);
    }
    if (width > 1 && r % 3 == 0) {
      table[r * w + w - 1] = std::numeric_limits<std::int32_t>::max();
    }
  }
  return table;
}

TEST_F(SortRowsTest, OrdersRowsLexicographicallyForAnyThreadCount) {
  constexpr std::int32_t int_max = std::numeric_limits<std::int32_t>::max();
  for (const int width : {1, 2, 4}) {
    for (const std::size_t rows : {std::size_t{1}, std::size_t{500}, std::size_t{40000}}) {
      const auto n = static_cast<std::int32_t>(rows);
      expect_stable_order(random_table(rows, width, -3, 3, 1), width, "few first values");
      expect_stable_order(random_table(rows, width, 100, 100 + n, 2), width,
                          "about one first value per row");
      expect_stable_order(random_table(rows, width, -int_max, int_max, 3), width,
                          "first values spanning int32");
    }
  }
  expect_stable_order({}, 3, "no rows");
}

TEST_F(SortRowsTest, RefusesMismatchedSizes) {
  auto table = borrow_temporary<std::int32_t>(*pool_, 30, "test.table");
  auto order = borrow_temporary<std::int32_t>(*pool_, 9, "test.order");
  EXPECT_THROW(sort_rows(table.view(), 4, order.view(), *arena_), Error);
  EXPECT_THROW(sort_rows(table.view(), 0, order.view(), *arena_), Error);
  EXPECT_EQ(arena_->stats().live_handles, 0U);
}

}  // namespace
}  // namespace afem::memory
