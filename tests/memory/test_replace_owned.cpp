#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "support/checked_resource.hpp"

namespace afem::memory {
namespace {

constexpr std::size_t kib = 1024;

/// An owner in the shape later modules use: one buffer, rebuilt through replace_owned.
class Owner {
public:
  explicit Owner(Pool& pool) : pool_(&pool) {}

  /// Rebuild that reads the old contents: build fresh, then swap.
  void grow_copying(std::size_t count) {
    auto fresh = borrow_temporary<std::int64_t>(*pool_, count, "Owner.values");
    for (std::size_t i = 0; i < values_.size() && i < count; ++i) {
      fresh.data()[i] = values_.data()[i];
    }
    replace_owned(values_, std::move(fresh));
  }

  /// Rebuild that does not read the old contents: release first.
  void refill(std::size_t count, std::int64_t value) {
    replace_owned(values_, *pool_, count, "Owner.values");
    for (std::size_t i = 0; i < count; ++i) {
      values_.data()[i] = value;
    }
  }

  [[nodiscard]] const Temporary<std::int64_t>& values() const { return values_; }
  Temporary<std::int64_t>& values() { return values_; }

private:
  Pool* pool_;
  Temporary<std::int64_t> values_;
};

class ReplaceOwnedTest : public ::testing::Test {
protected:
  test::CheckedResource upstream_;
  Pool pool_{upstream_, PoolOptions{"pool", Stream::cpu()}};
};

TEST_F(ReplaceOwnedTest, BuildThenSwapKeepsOldContentsAndReleasesTheOldBuffer) {
  Owner owner(pool_);
  owner.refill(4 * kib, 7);
  owner.grow_copying(8 * kib);
  EXPECT_EQ(owner.values().size(), 8 * kib);
  EXPECT_EQ(owner.values().data()[4 * kib - 1], 7);
  const PoolStats stats = pool_.stats();
  EXPECT_EQ(stats.live_blocks, 1U) << "exactly one live copy";
  EXPECT_EQ(stats.live_bytes, Pool::size_class(64 * kib));
  EXPECT_EQ(stats.peak_live_bytes, Pool::size_class(32 * kib) + Pool::size_class(64 * kib))
      << "both buffers were live during the copy";
  EXPECT_EQ(pool_.ledger().find("Owner.values")->live_count, 1U);
}

TEST_F(ReplaceOwnedTest, ReleaseFirstPeaksAtOneBufferAndReusesTheBlock) {
  Owner owner(pool_);
  owner.refill(4 * kib, 1);
  const std::int64_t* first = owner.values().data();
  for (int i = 0; i < 10; ++i) {
    owner.refill(4 * kib, i);
  }
  EXPECT_EQ(owner.values().data(), first) << "the released block came back from the cache";
  const PoolStats stats = pool_.stats();
  EXPECT_EQ(stats.peak_live_bytes, Pool::size_class(32 * kib));
  EXPECT_EQ(stats.upstream_allocations, 1U);
  EXPECT_EQ(stats.live_blocks, 1U);
}

TEST_F(ReplaceOwnedTest, FailedBuildLeavesTheOwnerUnchanged) {
  Owner owner(pool_);
  owner.refill(1000, 42);
  const std::int64_t* before = owner.values().data();
  upstream_.set_limit(upstream_.outstanding_bytes());
  EXPECT_THROW(owner.grow_copying(1000000), OutOfMemory);
  EXPECT_EQ(owner.values().data(), before);
  EXPECT_EQ(owner.values().size(), 1000U);
  EXPECT_EQ(owner.values().data()[999], 42);
  EXPECT_EQ(pool_.stats().live_blocks, 1U);
}

TEST_F(ReplaceOwnedTest, ReleaseFirstLeavesTheSlotEmptyWhenTheBorrowFails) {
  Owner owner(pool_);
  owner.refill(1000, 5);
  upstream_.set_limit(upstream_.outstanding_bytes());
  EXPECT_THROW(owner.refill(1000000, 6), OutOfMemory);
  EXPECT_TRUE(owner.values().empty()) << "the old contents were declared dead by the call";
  EXPECT_EQ(pool_.stats().live_blocks, 0U);
  EXPECT_EQ(pool_.ledger().find("Owner.values")->live_count, 0U);
}

TEST_F(ReplaceOwnedTest, ReplacingAStaleArenaHandleWorks) {
  Arena arena(pool_, ArenaOptions{"step", 64 * kib, 0});
  auto scratch = borrow_temporary<float>(arena, 100, "scratch");
  arena.reset();
  replace_owned(scratch, arena, 50, "scratch");
  EXPECT_TRUE(scratch.is_current());
  EXPECT_EQ(scratch.size(), 50U);
  EXPECT_EQ(arena.stats().stale_releases, 1U);
  EXPECT_EQ(arena.stats().live_handles, 1U);
}

}  // namespace
}  // namespace afem::memory
