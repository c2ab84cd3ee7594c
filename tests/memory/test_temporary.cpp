#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/temporary.hpp"
#include "support/checked_resource.hpp"

namespace afem::memory {
namespace {

static_assert(!std::is_copy_constructible_v<Temporary<int>>);
static_assert(!std::is_copy_assignable_v<Temporary<int>>);
static_assert(!std::is_move_assignable_v<Temporary<int>>, "swap only through replace_owned");
static_assert(std::is_nothrow_move_constructible_v<Temporary<int>>);

class TemporaryTest : public ::testing::Test {
protected:
  test::CheckedResource upstream_;
  Pool pool_{upstream_, PoolOptions{"test", Stream::cpu()}};
};

TEST_F(TemporaryTest, BorrowGivesLabelledWritableMemory) {
  auto values = borrow_temporary<std::int32_t>(pool_, 1000, "Test.values");
  ASSERT_EQ(values.size(), 1000U);
  EXPECT_EQ(values.bytes(), 4000U);
  EXPECT_EQ(values.label(), "Test.values");
  EXPECT_EQ(values.origin(), &pool_);
  EXPECT_TRUE(values.device().is_cpu());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(values.data()) % block_alignment, 0U);
  auto view = values.view();
  for (std::size_t i = 0; i < view.size(); ++i) {
    view[i] = static_cast<std::int32_t>(i);
  }
  EXPECT_EQ(values.data()[999], 999);
  EXPECT_EQ(pool_.stats().live_blocks, 1U);
}

TEST_F(TemporaryTest, ReleaseGivesMemoryBackExactlyOnce) {
  auto values = borrow_temporary<double>(pool_, 10, "Test.once");
  values.release();
  EXPECT_TRUE(values.empty());
  EXPECT_EQ(values.origin(), nullptr);
  values.release();  // a second release is a no-op, not a double free
  const PoolStats stats = pool_.stats();
  EXPECT_EQ(stats.live_blocks, 0U);
  EXPECT_EQ(stats.live_bytes, 0U);
  EXPECT_EQ(stats.hits + stats.misses, 1U);
  // The block went into the cache once: two borrows of its class take one hit, then a miss.
  auto first = borrow_temporary<double>(pool_, 10, "Test.once");
  auto second = borrow_temporary<double>(pool_, 10, "Test.once");
  EXPECT_EQ(pool_.stats().hits, 1U);
  EXPECT_EQ(pool_.stats().misses, 2U);
}

TEST_F(TemporaryTest, MoveTransfersOwnershipAndEmptiesTheSource) {
  auto original = borrow_temporary<float>(pool_, 64, "Test.moved");
  float* data = original.data();
  Temporary<float> moved(std::move(original));
  EXPECT_TRUE(original.empty());  // NOLINT(bugprone-use-after-move): the promise under test
  EXPECT_EQ(original.data(), nullptr);
  EXPECT_EQ(original.origin(), nullptr);
  EXPECT_EQ(moved.data(), data);
  EXPECT_EQ(moved.size(), 64U);
  EXPECT_EQ(moved.label(), "Test.moved");
  original.release();  // releasing the moved-from handle gives nothing back
  EXPECT_EQ(pool_.stats().live_blocks, 1U);
  {
    std::vector<Temporary<float>> owners;
    owners.push_back(std::move(moved));
    owners.push_back(borrow_temporary<float>(pool_, 8, "Test.vector"));
    EXPECT_EQ(pool_.stats().live_blocks, 2U);
  }
  EXPECT_EQ(pool_.stats().live_blocks, 0U);
}

TEST_F(TemporaryTest, ZeroCountBorrowsNothing) {
  auto nothing = borrow_temporary<int>(pool_, 0, "Test.none");
  EXPECT_TRUE(nothing.empty());
  EXPECT_EQ(nothing.origin(), nullptr);
  EXPECT_TRUE(nothing.view().empty());
  EXPECT_EQ(pool_.stats().hits + pool_.stats().misses, 0U);
}

TEST_F(TemporaryTest, NegativeSizeConvertedToUnsignedIsRefusedAndNamed) {
  const long negative = -5;
  try {
    auto broken = borrow_temporary<double>(pool_, static_cast<std::size_t>(negative), "Test.neg");
    FAIL() << "borrowed " << broken.size() << " elements";
  } catch (const OutOfMemory& error) {
    EXPECT_NE(std::string(error.what()).find("Test.neg"), std::string::npos) << error.what();
  }
  EXPECT_EQ(pool_.stats().live_blocks, 0U);
  EXPECT_EQ(upstream_.allocations(), 0U);
}

}  // namespace
}  // namespace afem::memory
