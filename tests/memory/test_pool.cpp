#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "support/checked_resource.hpp"

namespace afem::memory {
namespace {

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;

TEST(PoolSizeClass, RoundsUpByAtMostAQuarter) {
  EXPECT_EQ(Pool::size_class(1), 256U);
  EXPECT_EQ(Pool::size_class(256), 256U);
  EXPECT_EQ(Pool::size_class(257), 320U);
  EXPECT_EQ(Pool::size_class(512), 512U);
  EXPECT_EQ(Pool::size_class(513), 640U);
  EXPECT_EQ(Pool::size_class(mib), mib);
  EXPECT_EQ(Pool::size_class(mib + 1), mib + mib / 4);
  std::mt19937_64 random(7);
  for (int i = 0; i < 10000; ++i) {
    const std::size_t bytes = 257 + random() % (std::size_t{1} << 36);
    const std::size_t rounded = Pool::size_class(bytes);
    ASSERT_GE(rounded, bytes);
    ASSERT_LE(rounded, bytes + bytes / 4) << bytes;
    ASSERT_EQ(rounded % 64, 0U);
    ASSERT_EQ(Pool::size_class(rounded), rounded) << "a class size is its own class";
  }
}

TEST(HostResource, AlignsSmallBlocksToTheBlockAlignmentAndLargeOnesToHugePages) {
  HostResource& host = HostResource::instance();
  for (const std::size_t bytes : {std::size_t{1}, std::size_t{300}, 3 * mib, 4 * mib, 9 * mib}) {
    void* pointer = host.allocate(bytes, Stream::cpu());
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    EXPECT_EQ(address % block_alignment, 0U) << bytes;
    if (bytes >= 4 * mib) {
      EXPECT_EQ(address % (2 * mib), 0U) << bytes;
    }
    static_cast<volatile std::byte*>(pointer)[bytes - 1] = std::byte{1};
    host.deallocate(pointer, bytes, Stream::cpu());
  }
  EXPECT_THROW((void)host.allocate(16, Stream::cuda_default(0)), Error);
}

class PoolTest : public ::testing::Test {
protected:
  test::CheckedResource upstream_;
  Pool pool_{upstream_, PoolOptions{"test", Stream::cpu()}};
};

TEST_F(PoolTest, StatsAreExactAfterASequence) {
  auto a = borrow_temporary<std::byte>(pool_, 100, "a");      // class 256
  auto b = borrow_temporary<std::byte>(pool_, 5000, "b");     // class 5120
  auto c = borrow_temporary<std::byte>(pool_, 3 * mib, "c");  // class 3 mib
  PoolStats stats = pool_.stats();
  EXPECT_EQ(stats.live_bytes, 256 + 5120 + 3 * mib);
  EXPECT_EQ(stats.live_blocks, 3U);
  EXPECT_EQ(stats.reserved_bytes, stats.live_bytes);
  EXPECT_EQ(stats.misses, 3U);
  EXPECT_EQ(stats.hits, 0U);
  EXPECT_EQ(stats.upstream_allocations, 3U);
  EXPECT_EQ(upstream_.outstanding_bytes(), stats.reserved_bytes);

  b.release();
  stats = pool_.stats();
  EXPECT_EQ(stats.live_bytes, 256 + 3 * mib);
  EXPECT_EQ(stats.reserved_bytes, 256 + 5120 + 3 * mib);
  EXPECT_EQ(stats.peak_live_bytes, 256 + 5120 + 3 * mib);

  auto d = borrow_temporary<std::byte>(pool_, 4900, "d");  // same class as b: a hit
  stats = pool_.stats();
  EXPECT_EQ(stats.hits, 1U);
  EXPECT_EQ(stats.misses, 3U);
  EXPECT_EQ(stats.upstream_allocations, 3U);
  EXPECT_EQ(stats.live_bytes, 256 + 5120 + 3 * mib);

  a.release();
  c.release();
  d.release();
  pool_.trim();
  stats = pool_.stats();
  EXPECT_EQ(stats.live_bytes, 0U);
  EXPECT_EQ(stats.reserved_bytes, 0U);
  EXPECT_EQ(stats.upstream_frees, 3U);
  EXPECT_EQ(upstream_.outstanding_bytes(), 0U);
  EXPECT_EQ(stats.peak_live_bytes, 256 + 5120 + 3 * mib);
}

TEST_F(PoolTest, SteadyPatternMakesNoUpstreamCallsAfterWarmUp) {
  const std::vector<std::size_t> sizes = {64, 1000, 70 * kib, 3 * mib, 17, 123456};
  auto step = [&] {
    std::vector<Temporary<std::byte>> held;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      held.push_back(borrow_temporary<std::byte>(pool_, sizes[i], "step.buffer"));
      if (i % 2 == 1) {
        held.front().release();
      }
    }
  };
  step();
  const std::size_t after_warm_up = upstream_.allocations();
  for (int i = 0; i < 50; ++i) {
    step();
  }
  EXPECT_EQ(upstream_.allocations(), after_warm_up);
  EXPECT_EQ(upstream_.frees(), 0U);
  EXPECT_EQ(pool_.stats().live_bytes, 0U);
}

TEST_F(PoolTest, LedgerNamesEveryLiveByte) {
  auto offsets = borrow_temporary<std::int32_t>(pool_, 1001, "PicQuadrature.cell_particle_offsets");
  auto coords = borrow_temporary<double>(pool_, 3000, "PicQuadrature.particle_coords");
  auto more = borrow_temporary<double>(pool_, 10, "PicQuadrature.particle_coords");
  const LedgerSnapshot ledger = pool_.ledger();
  EXPECT_EQ(ledger.live_bytes(), pool_.stats().live_bytes);
  const LedgerEntry* entry = ledger.find("PicQuadrature.particle_coords");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->live_count, 2U);
  EXPECT_EQ(entry->live_bytes, Pool::size_class(24000) + Pool::size_class(80));
  EXPECT_EQ(ledger.entries.front().label, "PicQuadrature.particle_coords") << "largest first";
  more.release();
  EXPECT_EQ(pool_.ledger().find("PicQuadrature.particle_coords")->live_count, 1U);
  EXPECT_EQ(pool_.ledger().find("PicQuadrature.particle_coords")->borrows, 2U);
}

TEST_F(PoolTest, UpstreamRefusalIsNamedAndLeavesThePoolUsable) {
  auto kept = borrow_temporary<std::byte>(pool_, 4 * kib, "kept");
  upstream_.set_limit(upstream_.outstanding_bytes() + mib);
  const PoolStats before = pool_.stats();
  try {
    auto huge = borrow_temporary<std::byte>(pool_, 8 * mib, "Mesh.vertices");
    FAIL() << "borrowed beyond the upstream limit";
  } catch (const OutOfMemory& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("Mesh.vertices"), std::string::npos) << message;
    EXPECT_NE(message.find("'test'"), std::string::npos) << message;
  }
  const PoolStats after = pool_.stats();
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes);
  EXPECT_EQ(after.misses, before.misses);
  auto small = borrow_temporary<std::byte>(pool_, 512 * kib, "after");
  EXPECT_EQ(small.size(), 512 * kib);
}

TEST_F(PoolTest, UpstreamRefusalFirstReturnsTheCacheThenRetries) {
  { auto cached = borrow_temporary<std::byte>(pool_, 2 * mib, "cached"); }
  EXPECT_EQ(pool_.stats().reserved_bytes, 2 * mib);
  upstream_.set_limit(3 * mib);
  auto other = borrow_temporary<std::byte>(pool_, 3 * mib, "other");  // fits once the cache is gone
  const PoolStats stats = pool_.stats();
  EXPECT_EQ(stats.upstream_frees, 1U);
  EXPECT_EQ(stats.reserved_bytes, 3 * mib);
  EXPECT_EQ(upstream_.outstanding_bytes(), 3 * mib);
}

TEST_F(PoolTest, RejectsZeroBytesAndForeignStreams) {
  EXPECT_THROW((void)pool_.allocate(0, "zero"), Error);
  EXPECT_THROW((void)pool_.allocate(16, "gpu", Stream::cuda_default(0)), Error);
  EXPECT_EQ(pool_.stats().live_blocks, 0U);
}

TEST(PoolThreads, ConcurrentBorrowAndReleaseKeepExactTotals) {
  test::CheckedResource upstream;
  Pool pool(upstream, PoolOptions{"threads", Stream::cpu()});
  constexpr int threads = 8;
  constexpr int operations = 100000;
  std::vector<std::uint64_t> borrows(threads, 0);
  std::vector<int> corruptions(threads, 0);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 random(static_cast<std::uint32_t>(1234 + t));
      std::vector<Temporary<std::uint64_t>> held;
      const std::uint64_t tag = 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(t + 1);
      for (int op = 0; op < operations; ++op) {
        if (held.size() < 16 && (held.empty() || random() % 2 == 0)) {
          const std::size_t count = 1 + (std::size_t{1} << (random() % 12)) + random() % 64;
          held.push_back(borrow_temporary<std::uint64_t>(pool, count, "stress"));
          held.back().data()[0] = tag + count;
          held.back().data()[count - 1] = tag ^ count;
          ++borrows[t];
        } else {
          const std::size_t victim = random() % held.size();
          const Temporary<std::uint64_t>& handle = held[victim];
          if (handle.data()[0] != tag + handle.size() ||
              handle.data()[handle.size() - 1] != (tag ^ handle.size())) {
            ++corruptions[t];  // another thread wrote into a block this thread holds
          }
          replace_owned(held[victim], std::move(held.back()));  // releases the victim
          held.pop_back();
        }
      }
    });
  }
  for (auto& worker : workers) {
    worker.join();
  }
  std::uint64_t total = 0;
  for (int t = 0; t < threads; ++t) {
    total += borrows[t];
    EXPECT_EQ(corruptions[t], 0) << "thread " << t;
  }
  const PoolStats stats = pool.stats();
  EXPECT_EQ(stats.live_bytes, 0U);
  EXPECT_EQ(stats.live_blocks, 0U);
  EXPECT_EQ(stats.hits + stats.misses, total);
  EXPECT_EQ(stats.upstream_allocations, upstream.allocations());
  EXPECT_EQ(stats.reserved_bytes, upstream.outstanding_bytes());
  EXPECT_EQ(pool.ledger().find("stress")->borrows, total);
  EXPECT_EQ(pool.ledger().find("stress")->live_count, 0U);
  pool.trim();
  EXPECT_EQ(upstream.outstanding_bytes(), 0U);
}

#if defined(ARENAFEM_CHECKS)
TEST(PoolDeathTest, DestroyingAPoolWithLiveHandlesNamesTheirLabels) {
  EXPECT_DEATH(
      {
        auto pool = std::make_unique<Pool>();
        auto leaked = borrow_temporary<int>(*pool, 10, "Leaky.owner");
        pool.reset();
      },
      "Leaky.owner");
}
#endif

}  // namespace
}  // namespace afem::memory
