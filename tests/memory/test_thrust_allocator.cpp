// Backend-generic: compiled by g++ on the OpenMP backend and by nvcc on the CUDA backend.
#include <gtest/gtest.h>

#include <thrust/copy.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <random>
#include <vector>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"
#include "support/backend.hpp"

#if defined(_OPENMP) && !AFEM_HAS_CUDA
#include <omp.h>
#endif

namespace afem::memory {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;

/// out[i] = 2 in[i]
struct Double {
  const double* in;
  double* out;
  AFEM_HOST_DEVICE void operator()(std::size_t i) const { out[i] = 2.0 * in[i]; }
};

/// v > 1
struct AboveOne {
  AFEM_HOST_DEVICE bool operator()(double v) const { return v > 1.0; }
};

class ThrustAllocatorTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!test::device_available()) {
      GTEST_SKIP() << "no device for this build's backend";
    }
    pool_ = std::make_unique<Pool>(device_resource(), PoolOptions{.name = "device"});
    arena_ = std::make_unique<Arena>(*pool_, ArenaOptions{"step", 16 * mib, 0});
  }
  void TearDown() override {
    arena_.reset();
    pool_.reset();
  }

  /// One "step": sort cell keys with their particle indices, count particles per cell with
  /// reduce_by_key, and scan the counts into offsets; returns the offsets on the host.
  std::vector<std::int32_t> binning_step(const std::vector<std::int32_t>& cells, int cell_count) {
    ArenaScope scope(*arena_);
    const std::size_t n = cells.size();
    auto keys = borrow_temporary<std::int32_t>(*arena_, n, "binning.keys");
    auto indices = borrow_temporary<std::int32_t>(*arena_, n, "binning.indices");
    auto ones = borrow_temporary<std::int32_t>(*arena_, n, "binning.ones");
    auto unique = borrow_temporary<std::int32_t>(*arena_, n, "binning.unique");
    auto counts = borrow_temporary<std::int32_t>(*arena_, n, "binning.counts");
    test::copy_to_device(keys.view(), cells);
    std::vector<std::int32_t> iota(n);
    std::iota(iota.begin(), iota.end(), 0);
    test::copy_to_device(indices.view(), iota);
    test::copy_to_device(ones.view(), std::vector<std::int32_t>(n, 1));

    auto policy = arena_policy(*arena_);
    thrust::stable_sort_by_key(policy, keys.data(), keys.data() + n, indices.data());
    const auto ends = thrust::reduce_by_key(policy, keys.data(), keys.data() + n, ones.data(),
                                            unique.data(), counts.data());
    const auto runs = static_cast<std::size_t>(ends.first - unique.data());
    thrust::exclusive_scan(policy, counts.data(), counts.data() + runs, counts.data());

    const auto cell_ids = test::copy_to_host<std::int32_t>(unique.view().subview(0, runs));
    const auto starts = test::copy_to_host<std::int32_t>(counts.view().subview(0, runs));
    std::vector<std::int32_t> offsets(static_cast<std::size_t>(cell_count) + 1, -1);
    for (std::size_t r = 0; r < runs; ++r) {
      offsets[static_cast<std::size_t>(cell_ids[r])] = starts[r];
    }
    offsets.back() = static_cast<std::int32_t>(n);
    const auto sorted = test::copy_to_host<std::int32_t>(indices.view());
    EXPECT_TRUE(std::is_sorted(sorted.begin(), sorted.end(), [&](std::int32_t a, std::int32_t b) {
      return cells[static_cast<std::size_t>(a)] < cells[static_cast<std::size_t>(b)];
    }));
    return offsets;
  }

  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Arena> arena_;
};

TEST_F(ThrustAllocatorTest, SortScanAndReduceByKeyDrawScratchOnlyFromTheArena) {
  constexpr int cell_count = 5000;
  std::mt19937 random(42);
  std::vector<std::int32_t> cells(200000);
  for (auto& cell : cells) {
    cell = static_cast<std::int32_t>(random() % cell_count);
  }
  std::vector<std::int32_t> expected(cell_count + 1, -1);
  std::vector<std::int32_t> histogram(cell_count, 0);
  for (const auto cell : cells) {
    ++histogram[static_cast<std::size_t>(cell)];
  }
  std::int32_t running = 0;
  for (int c = 0; c < cell_count; ++c) {
    if (histogram[static_cast<std::size_t>(c)] > 0) {
      expected[static_cast<std::size_t>(c)] = running;
    }
    running += histogram[static_cast<std::size_t>(c)];
  }
  expected.back() = running;

  EXPECT_EQ(binning_step(cells, cell_count), expected);  // warm-up
  const LedgerSnapshot warm_ledger = arena_->ledger();
  const LedgerEntry* scratch = warm_ledger.find("thrust.scratch");
  ASSERT_NE(scratch, nullptr) << "the algorithms took no scratch from the arena";
  EXPECT_GT(scratch->borrows, 0U);
  const PoolStats warm = pool_->stats();

  for (int step = 0; step < 5; ++step) {
    std::shuffle(cells.begin(), cells.end(), random);
    EXPECT_EQ(binning_step(cells, cell_count), expected);
  }
  const PoolStats after = pool_->stats();
  EXPECT_EQ(after.upstream_allocations, warm.upstream_allocations);
  EXPECT_EQ(after.hits + after.misses, warm.hits + warm.misses)
      << "the pool served nothing after warm-up: all scratch came from the arena's chunks";
  EXPECT_GT(arena_->ledger().find("thrust.scratch")->borrows, scratch->borrows);
  EXPECT_EQ(arena_->stats().outstanding_handles, 0U);
}

TEST_F(ThrustAllocatorTest, ForEachReduceAndCopyIfGiveOneAnswerForEveryThreadCount) {
  constexpr std::size_t n = 300007;
  std::mt19937 random(11);
  std::uniform_real_distribution<double> exponent(-8.0, 8.0);
  std::vector<double> host(n);
  for (auto& value : host) {
    value = std::pow(10.0, exponent(random)) * ((random() & 1U) != 0 ? 1.0 : -1.0);
  }
  auto values = borrow_temporary<double>(*arena_, n, "values");
  auto doubled = borrow_temporary<double>(*arena_, n, "doubled");
  auto kept = borrow_temporary<double>(*arena_, n, "kept");
  test::copy_to_device(values.view(), host);
  std::vector<double> expected_kept;
  std::copy_if(host.begin(), host.end(), std::back_inserter(expected_kept),
               [](double v) { return v > 1.0; });
  long double exact = 0;
  for (const double v : host) {
    exact += v;
  }
  std::vector<double> sums;
  const auto run = [&] {
    auto policy = arena_policy(*arena_);
    const double* in = values.data();
    double* out = doubled.data();
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), n, Double{in, out});
    sums.push_back(thrust::reduce(policy, values.data(), values.data() + n, 0.0));
    const auto end =
        thrust::copy_if(policy, values.data(), values.data() + n, kept.data(), AboveOne{});
    EXPECT_EQ(test::copy_to_host<double>(kept.view().subview(0, end - kept.data())), expected_kept);
    const auto twice = test::copy_to_host<double>(doubled.view());
    EXPECT_TRUE(std::equal(host.begin(), host.end(), twice.begin(),
                           [](double v, double w) { return w == 2.0 * v; }));
  };
#if defined(_OPENMP) && !AFEM_HAS_CUDA
  const int threads = omp_get_max_threads();
  for (const int count : {1, 2, 3, 4}) {
    omp_set_num_threads(count);
    run();
  }
  omp_set_num_threads(threads);
#else
  run();
#endif
  for (const double sum : sums) {
    EXPECT_EQ(sum, sums.front()) << "a sum differs from the first thread count's, bit for bit";
    EXPECT_NEAR(sum, static_cast<double>(exact), 1e-6 * std::abs(static_cast<double>(exact)));
  }
}

// A fill (on the CPU, std::fill on 64 KiB blocks) sets every element of its range, from none to
// several blocks and a part of one, and nothing beside it; a value of another type is converted.
TEST_F(ThrustAllocatorTest, AFillSetsItsRangeAndNothingBeside) {
  constexpr std::size_t block = std::size_t{1} << 16;
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{1}, block - 1, block, block + 1, 3 * block + 5}) {
    auto bytes = borrow_temporary<std::uint8_t>(*arena_, n + 2, "bytes");
    test::copy_to_device(bytes.view(), std::vector<std::uint8_t>(n + 2, 7));
    thrust::fill(arena_policy(*arena_), bytes.data() + 1, bytes.data() + 1 + n, std::uint8_t{1});
    std::vector<std::uint8_t> expected(n + 2, 1);
    expected.front() = 7;
    expected.back() = 7;
    EXPECT_EQ(test::copy_to_host<std::uint8_t>(bytes.view()), expected) << n << " bytes";

    auto values = borrow_temporary<double>(*arena_, n + 2, "values");
    test::copy_to_device(values.view(), std::vector<double>(n + 2, -1.0));
    thrust::fill(arena_policy(*arena_), values.data() + 1, values.data() + 1 + n, 3);
    std::vector<double> expected_values(n + 2, 3.0);
    expected_values.front() = -1.0;
    expected_values.back() = -1.0;
    EXPECT_EQ(test::copy_to_host<double>(values.view()), expected_values) << n << " doubles";
  }
}

// copy_if keeps what its predicate keeps, in order, for lengths with no block, one block, a block
// and one more, and several, on every thread count; nothing past its returned end is written.
TEST_F(ThrustAllocatorTest, ACopyIfKeepsInOrderForEveryLength) {
  for (const std::size_t n : {0U, 1U, 3U, 4096U, 4097U, 20001U}) {
    std::vector<double> host(n);
    for (std::size_t i = 0; i < n; ++i) {
      host[i] = (i % 7 == 0 || i % 11 == 3) ? static_cast<double>(i) + 2.0 : -1.0;
    }
    std::vector<double> expected;
    std::copy_if(host.begin(), host.end(), std::back_inserter(expected),
                 [](double v) { return v > 1.0; });
    auto values = borrow_temporary<double>(*arena_, n, "values");
    auto kept = borrow_temporary<double>(*arena_, n + 1, "kept");
    test::copy_to_device(values.view(), host);
    const auto run = [&](int threads) {
      test::copy_to_device(kept.view(), std::vector<double>(n + 1, -7.0));
      const auto end = thrust::copy_if(arena_policy(*arena_), values.data(), values.data() + n,
                                       kept.data(), AboveOne{});
      const auto all = test::copy_to_host<double>(kept.view());
      const auto count = static_cast<std::size_t>(end - kept.data());
      EXPECT_EQ(std::vector<double>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count)),
                expected)
          << n << " elements, " << threads << " threads";
      EXPECT_TRUE(std::all_of(all.begin() + static_cast<std::ptrdiff_t>(count), all.end(),
                              [](double v) { return v == -7.0; }))
          << n << " elements, " << threads << " threads";
    };
#if defined(_OPENMP) && !AFEM_HAS_CUDA
    const int threads = omp_get_max_threads();
    for (const int count : {1, 2, 3, 4}) {
      omp_set_num_threads(count);
      run(count);
    }
    omp_set_num_threads(threads);
#else
    run(1);
#endif
  }
}

// A sum is split into interleaved partial sums: every element counts once, whatever the length
// (below, at and above the split's width, with and without a remainder, across blocks).
TEST_F(ThrustAllocatorTest, ASumCountsEveryElementOnceForEveryLength) {
  for (const std::size_t n : {1U, 2U, 3U, 4U, 5U, 7U, 8U, 9U, 10U, 11U, 12U, 13U, 4097U, 9001U}) {
    std::vector<double> host(n);
    for (std::size_t i = 0; i < n; ++i) {
      host[i] = static_cast<double>(i + 1);  // integers: every partial sum is exact
    }
    auto values = borrow_temporary<double>(*arena_, n, "values");
    test::copy_to_device(values.view(), host);
    const double sum = thrust::reduce(arena_policy(*arena_), values.data(), values.data() + n, 0.5);
    const std::size_t total = n * (n + 1) / 2;
    EXPECT_EQ(sum, 0.5 + static_cast<double>(total)) << n << " elements";
  }
}

TEST_F(ThrustAllocatorTest, EachAlgorithmLeavesTheArenaWhereItStood) {
  auto keys = borrow_temporary<std::int32_t>(*arena_, 1 << 18, "keys");
  std::vector<std::int32_t> host(keys.size());
  std::mt19937 random(3);
  for (auto& key : host) {
    key = static_cast<std::int32_t>(random() % 100000);
  }
  test::copy_to_device(keys.view(), host);
  const ArenaStats before = arena_->stats();
  thrust::sort(arena_policy(*arena_), keys.data(), keys.data() + keys.size());
  const ArenaStats after = arena_->stats();
  EXPECT_EQ(after.used_bytes, before.used_bytes);
  EXPECT_EQ(after.live_handles, before.live_handles);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(arena_->ledger().find("thrust.scratch")->live_bytes, 0U);
  EXPECT_GT(after.peak_used_bytes, before.used_bytes) << "the sort used scratch";
  auto next = borrow_temporary<std::int32_t>(*arena_, 10, "next");
  EXPECT_EQ(reinterpret_cast<std::byte*>(next.data()),
            reinterpret_cast<std::byte*>(keys.data()) + Arena::block_size(keys.bytes()));
  std::sort(host.begin(), host.end());
  EXPECT_EQ(test::copy_to_host<std::int32_t>(keys.view()), host);
}

TEST_F(ThrustAllocatorTest, ScratchBeyondAHardCapacityReportsTheArena) {
  Arena tight(*pool_, ArenaOptions{"tight", 4096, 4096});
  auto keys = borrow_temporary<std::int32_t>(*arena_, 1 << 20, "keys");
  std::vector<std::int32_t> host(keys.size());
  for (std::size_t i = 0; i < host.size(); ++i) {
    host[i] = static_cast<std::int32_t>((i * 7919) % 100003);
  }
  test::copy_to_device(keys.view(), host);
  auto sort = [&] { thrust::sort(arena_policy(tight), keys.data(), keys.data() + host.size()); };
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
  // Thrust's OpenMP sort asks for scratch inside a parallel region, which no exception leaves.
  // The OpenMP runtime is not fork-safe once its threads run: re-execute for the death test.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(sort(), "Arena 'tight': hard capacity");
#else
  EXPECT_THROW(sort(), std::bad_alloc);
  EXPECT_EQ(tight.stats().live_handles, 0U);
  EXPECT_EQ(tight.ledger().live_bytes(), 0U);
#endif
}

#if AFEM_HAS_CUDA
// The CPU build has one kind of memory, so this case exists in the CUDA build only.
TEST_F(ThrustAllocatorTest, PolicyRefusesAnArenaOfHostMemoryOnTheCudaBackend) {
  Pool host_pool;
  Arena host_arena(host_pool);
  EXPECT_THROW((void)arena_policy(host_arena), Error);
}
#endif

}  // namespace
}  // namespace afem::memory
