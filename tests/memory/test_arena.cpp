#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "support/checked_resource.hpp"

namespace afem::memory {
namespace {

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;

class ArenaTest : public ::testing::Test {
protected:
  test::CheckedResource upstream_;
  Pool pool_{upstream_, PoolOptions{"pool", Stream::cpu()}};
};

TEST_F(ArenaTest, ResetMakesTheSameBytesReusable) {
  Arena arena(pool_, ArenaOptions{"step", 64 * kib, 0});
  auto a = borrow_temporary<double>(arena, 100, "a");
  auto b = borrow_temporary<double>(arena, 200, "b");
  double* a_data = a.data();
  EXPECT_EQ(b.data() - a_data, static_cast<std::ptrdiff_t>(Arena::block_size(800) / 8));
  EXPECT_EQ(arena.stats().live_handles, 2U);
  a.release();
  b.release();
  arena.reset();
  auto again = borrow_temporary<double>(arena, 100, "a");
  EXPECT_EQ(again.data(), a_data);
  EXPECT_EQ(arena.stats().chunk_count, 1U);
  EXPECT_EQ(arena.stats().generation, 1U);
  EXPECT_EQ(pool_.stats().upstream_allocations, 1U);
}

TEST_F(ArenaTest, HandleKeptPastResetIsDetectedWithItsLabel) {
  Arena arena(pool_, ArenaOptions{"step", 64 * kib, 0});
  auto kept = borrow_temporary<float>(arena, 10, "Solver.residual");
  EXPECT_TRUE(kept.is_current());
  arena.reset();
  EXPECT_FALSE(kept.is_current());
  try {
    (void)kept.view();
    FAIL() << "a stale handle gave a view";
  } catch (const StaleHandle& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("Solver.residual"), std::string::npos) << message;
    EXPECT_NE(message.find("'step'"), std::string::npos) << message;
  }
  auto fresh = borrow_temporary<float>(arena, 10, "fresh");
  EXPECT_EQ(arena.stats().live_handles, 1U);
  kept.release();  // the stale release is counted and leaves the new generation alone
  const ArenaStats stats = arena.stats();
  EXPECT_EQ(stats.stale_releases, 1U);
  EXPECT_EQ(stats.live_handles, 1U);
  EXPECT_EQ(stats.live_bytes, Arena::block_size(40));
  EXPECT_EQ(stats.outstanding_handles, 1U);
  EXPECT_NO_THROW((void)fresh.view());
}

TEST_F(ArenaTest, LastBlockGivenBackRollsTheOffsetBack) {
  Arena arena(pool_, ArenaOptions{"step", 64 * kib, 0});
  auto base = borrow_temporary<std::byte>(arena, 100, "base");
  std::byte* first = nullptr;
  {
    auto scratch = borrow_temporary<std::byte>(arena, 1000, "scratch");
    first = scratch.data();
  }
  auto again = borrow_temporary<std::byte>(arena, 3000, "scratch");
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(arena.stats().used_bytes, Arena::block_size(100) + Arena::block_size(3000));
}

TEST_F(ArenaTest, BlocksGivenBackOutOfOrderAreReusedInTheSameStep) {
  Arena arena(pool_, ArenaOptions{"step", 64 * kib, 0});
  Temporary<double> older = borrow_temporary<double>(arena, 1000, "queue");
  Temporary<double> newer = borrow_temporary<double>(arena, 1000, "queue");
  const std::size_t used_at_start = arena.stats().used_bytes;
  for (int i = 0; i < 1000; ++i) {  // a queue: the oldest buffer is given back, never the last
    replace_owned(older, std::move(newer));
    Temporary<double> fresh = borrow_temporary<double>(arena, 900 + i % 100, "queue");
    replace_owned(newer, std::move(fresh));
  }
  EXPECT_LE(arena.stats().used_bytes, used_at_start + Arena::block_size(8000))
      << "a step that never frees its last block stays within its live set";
  EXPECT_EQ(arena.stats().live_handles, 2U);
  EXPECT_EQ(arena.stats().chunk_count, 1U);
  EXPECT_EQ(arena.ledger().find("queue")->borrows, 1002U);
}

TEST_F(ArenaTest, GrowsByChunksAndServesLargeRequestsWhole) {
  Arena arena(pool_, ArenaOptions{"step", 64 * kib, 0});
  std::vector<Temporary<std::byte>> held;
  held.reserve(4);
  for (int i = 0; i < 3; ++i) {
    held.push_back(borrow_temporary<std::byte>(arena, 40 * kib, "piece"));
  }
  EXPECT_EQ(arena.stats().chunk_count, 3U);
  held.push_back(borrow_temporary<std::byte>(arena, mib, "large"));
  EXPECT_EQ(arena.stats().chunk_count, 4U);
  EXPECT_EQ(arena.stats().reserved_bytes, kib * 64 * 3 + mib);

  EXPECT_EQ(pool_.ledger().find("step.chunks")->live_bytes, arena.stats().reserved_bytes);
  EXPECT_EQ(arena.ledger().live_bytes(), arena.stats().live_bytes);
}

TEST_F(ArenaTest, RepeatedStepsTakeNothingFromThePoolAfterWarmUp) {
  Arena arena(pool_, ArenaOptions{"step", 256 * kib, 0});
  auto step = [&] {
    ArenaScope scope(arena);
    auto a = borrow_temporary<double>(scope.arena(), 10000, "a");
    auto b = borrow_temporary<std::int32_t>(scope.arena(), 300000, "b");  // > one chunk
    auto c = borrow_temporary<std::byte>(scope.arena(), 12345, "c");
    a.release();
    auto d = borrow_temporary<double>(scope.arena(), 5000, "d");
  };
  step();
  const PoolStats warm = pool_.stats();
  const ArenaStats arena_warm = arena.stats();
  for (int i = 0; i < 100; ++i) {
    step();
  }
  EXPECT_EQ(pool_.stats().upstream_allocations, warm.upstream_allocations);
  EXPECT_EQ(pool_.stats().hits + pool_.stats().misses, warm.hits + warm.misses)
      << "no chunk was borrowed after the first step";
  EXPECT_EQ(arena.stats().reserved_bytes, arena_warm.reserved_bytes);
  EXPECT_EQ(arena.stats().generation, 101U);
  EXPECT_EQ(arena.stats().peak_used_bytes, arena_warm.peak_used_bytes);
}

TEST_F(ArenaTest, HardCapacityErrorNamesLargestLabelsAndLeavesTheArenaUsable) {
  Arena arena(pool_, ArenaOptions{"bounded", 256 * kib, mib});
  auto big = borrow_temporary<std::byte>(arena, 600 * kib, "Assembly.triplets");
  auto medium = borrow_temporary<std::byte>(arena, 200 * kib, "Assembly.keys");
  const ArenaStats before = arena.stats();
  try {
    auto too_much = borrow_temporary<std::byte>(arena, 300 * kib, "Solver.p");
    FAIL() << "passed the hard capacity";
  } catch (const OutOfMemory& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'bounded'"), std::string::npos) << message;
    EXPECT_NE(message.find("Solver.p"), std::string::npos) << message;
    EXPECT_NE(message.find("'Assembly.triplets'"), std::string::npos) << message;
    EXPECT_NE(message.find("'Assembly.keys'"), std::string::npos) << message;
    EXPECT_LT(message.find("Assembly.triplets"), message.find("Assembly.keys")) << "largest first";
  }
  const ArenaStats after = arena.stats();
  EXPECT_EQ(after.used_bytes, before.used_bytes);
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes);
  EXPECT_EQ(after.live_handles, before.live_handles);
  EXPECT_LE(after.reserved_bytes, mib);
  auto fits = borrow_temporary<std::byte>(arena, 64 * kib, "fits");
  EXPECT_EQ(fits.size(), 64 * kib);
  fits.release();
  big.release();
  medium.release();
  arena.reset();
  auto after_reset = borrow_temporary<std::byte>(arena, 700 * kib, "again");
  EXPECT_EQ(after_reset.size(), 700 * kib);
}

TEST_F(ArenaTest, ScopeResetsAtItsEnd) {
  Arena arena(pool_, ArenaOptions{"step", 64 * kib, 0});
  {
    ArenaScope scope(arena);
    auto scratch = borrow_temporary<int>(scope.arena(), 100, "scratch");
    EXPECT_GT(arena.stats().used_bytes, 0U);
  }
  EXPECT_EQ(arena.stats().generation, 1U);
  EXPECT_EQ(arena.stats().used_bytes, 0U);
  EXPECT_EQ(arena.ledger().live_bytes(), 0U);
  EXPECT_EQ(arena.stats().outstanding_handles, 0U);
}

TEST_F(ArenaTest, ReleaseChunksRefusesWhileHandlesAreLive) {
  Arena arena(pool_, ArenaOptions{"step", 64 * kib, 0});
  auto live = borrow_temporary<int>(arena, 100, "Mesh.scratch");
  try {
    arena.release_chunks();
    FAIL() << "released chunks under a live handle";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("Mesh.scratch"), std::string::npos) << error.what();
  }
  EXPECT_EQ(arena.stats().chunk_count, 1U);
  EXPECT_NO_THROW((void)live.view());
  live.release();
  arena.release_chunks();
  EXPECT_EQ(arena.stats().chunk_count, 0U);
  EXPECT_EQ(pool_.stats().live_bytes, 0U);
}

TEST_F(ArenaTest, RejectsZeroBytesAndZeroChunks) {
  Arena arena(pool_, ArenaOptions{"step", 64 * kib, 0});
  EXPECT_THROW((void)arena.allocate(0, "zero"), Error);
  EXPECT_THROW(Arena(pool_, ArenaOptions{"bad", 0, 0}), Error);
  EXPECT_EQ(arena.stats().used_bytes, 0U);
}

TEST_F(ArenaTest, CapacityThatIsNotASizeClassStillServesWhatFits) {
  Arena tiny(pool_, ArenaOptions{"tiny", 4 * mib, 3000});
  auto small = borrow_temporary<std::byte>(tiny, 100, "small");
  EXPECT_LE(tiny.stats().reserved_bytes, 3000U);
  Arena odd(pool_, ArenaOptions{"odd", mib, 300 * kib});
  auto fits = borrow_temporary<std::byte>(odd, 200 * kib, "fits");
  EXPECT_LE(odd.stats().reserved_bytes, 300 * kib);
  EXPECT_THROW((void)borrow_temporary<std::byte>(odd, 200 * kib, "second"), OutOfMemory);
}

/// Hands out blocks back to back from one buffer, as a stream-ordered device pool may.
class CarvingResource final : public UpstreamResource {
public:
  void* allocate(std::size_t bytes, const Stream& /*stream*/) override {
    if (used_ + bytes > buffer_.size()) {
      throw OutOfMemory("CarvingResource: full");
    }
    std::byte* pointer = buffer_.data() + used_;
    used_ += bytes;
    return pointer;
  }
  void deallocate(void* /*pointer*/, std::size_t /*bytes*/,
                  const Stream& /*stream*/) noexcept override {}
  [[nodiscard]] Device device() const override { return Device::cpu(); }

private:
  alignas(256) std::array<std::byte, 1 << 20> storage_{};
  std::span<std::byte> buffer_{storage_};
  std::size_t used_ = 0;
};

TEST(ArenaAdjacentChunks, LastBlockOfThePreviousChunkIsNotMistakenForTheTop) {
  auto upstream = std::make_unique<CarvingResource>();
  Pool pool(*upstream, PoolOptions{.name = "carving"});
  Arena arena(pool, ArenaOptions{"step", 4096, 0});
  auto end_of_first = borrow_temporary<std::byte>(arena, 4096, "first");  // fills chunk 0
  auto in_second = borrow_temporary<std::byte>(arena, 2048, "second");    // chunk 1, adjacent
  ASSERT_EQ(end_of_first.data() + 4096, in_second.data());
  in_second.release();     // the top of chunk 1: offset back to 0
  end_of_first.release();  // ends exactly where chunk 1 begins, but is not chunk 1's top
  EXPECT_EQ(arena.stats().used_bytes, 4096U)
      << "chunk 0's block is kept for reuse, not rolled back";
  auto again = borrow_temporary<std::byte>(arena, 4096, "again");
  EXPECT_EQ(arena.stats().chunk_count, 2U);
  EXPECT_EQ(arena.stats().used_bytes, 4096U);
}

TEST_F(ArenaTest, RandomStepsNeverOverlapAndAccountExactly) {
  for (std::uint32_t seed = 0; seed < 8; ++seed) {
    Arena arena(pool_, ArenaOptions{"random", 64 * kib, seed % 2 == 0 ? 0 : 512 * kib});
    std::mt19937 random(seed);
    std::vector<Temporary<std::byte>> live;
    for (int op = 0; op < 4000; ++op) {
      const auto choice = random() % 100;
      if (choice < 55) {
        const std::size_t bytes = 1 + (std::size_t{1} << (random() % 17)) + random() % 1000;
        try {
          live.push_back(borrow_temporary<std::byte>(arena, bytes, seed % 3 == 0 ? "a" : "b"));
        } catch (const OutOfMemory&) {
          ASSERT_NE(seed % 2, 0U) << "only a bounded arena runs out";
        }
      } else if (choice < 97 && !live.empty()) {
        const std::size_t victim = random() % live.size();
        replace_owned(live[victim], std::move(live.back()));
        live.pop_back();
      } else if (choice >= 97) {
        live.clear();
        arena.reset();
      }
      std::vector<std::pair<const std::byte*, const std::byte*>> spans;
      std::size_t reserved = 0;
      for (const auto& handle : live) {
        spans.emplace_back(handle.data(), handle.data() + Arena::block_size(handle.size()));
        reserved += Arena::block_size(handle.size());
      }
      std::sort(spans.begin(), spans.end());
      for (std::size_t i = 1; i < spans.size(); ++i) {
        ASSERT_LE(spans[i - 1].second, spans[i].first)
            << "overlap at seed " << seed << " op " << op;
      }
      ASSERT_EQ(arena.stats().live_bytes, reserved);
      ASSERT_EQ(arena.ledger().live_bytes(), reserved);
      ASSERT_EQ(arena.stats().live_handles, live.size());
    }
  }
}

#if defined(ARENAFEM_CHECKS)
TEST(ArenaDeathTest, DestroyingAnArenaWithOutstandingHandlesNamesThem) {
  EXPECT_DEATH(
      {
        Pool pool;
        auto arena = std::make_unique<Arena>(pool);
        auto leaked = borrow_temporary<int>(*arena, 10, "Leaky.scratch");
        arena.reset();
      },
      "Leaky.scratch");
}
#endif

}  // namespace
}  // namespace afem::memory
