// FailingResource: the k-th allocation, every one from the k-th on, or any above a byte budget
// fails with OutOfMemory; a Pool over it reports the label and keeps its accounts.
#include "arenafem/memory/failing_resource.hpp"

#include <gtest/gtest.h>

#include <string>

#include "arenafem/memory/error.hpp"
#include "arenafem/memory/host_resource.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/temporary.hpp"

namespace afem::memory {
namespace {

TEST(FailingResourceTest, FailsExactlyTheChosenAllocation) {
  FailingResource resource(HostResource::instance(), {.fail_at = 2});
  void* first = resource.allocate(256, Stream::cpu());
  EXPECT_THROW((void)resource.allocate(256, Stream::cpu()), OutOfMemory);
  void* third = resource.allocate(512, Stream::cpu());
  EXPECT_EQ(resource.allocations(), 3U);
  EXPECT_EQ(resource.failures(), 1U);
  EXPECT_EQ(resource.held_bytes(), 768U);
  resource.deallocate(first, 256, Stream::cpu());
  resource.deallocate(third, 512, Stream::cpu());
  EXPECT_EQ(resource.held_bytes(), 0U);
}

TEST(FailingResourceTest, PersistentFaultsAndBudgetsKeepFailing) {
  FailingResource resource(HostResource::instance(), {.fail_at = 1, .persistent = true});
  EXPECT_THROW((void)resource.allocate(256, Stream::cpu()), OutOfMemory);
  EXPECT_THROW((void)resource.allocate(256, Stream::cpu()), OutOfMemory);
  resource.set_plan({.byte_budget = 1024});
  void* block = resource.allocate(1024, Stream::cpu());
  try {
    (void)resource.allocate(256, Stream::cpu());
    FAIL() << "passed the budget";
  } catch (const OutOfMemory& error) {
    EXPECT_NE(std::string(error.what()).find("budget 1024"), std::string::npos) << error.what();
  }
  resource.deallocate(block, 1024, Stream::cpu());
  resource.deallocate(resource.allocate(1024, Stream::cpu()), 1024, Stream::cpu());
  EXPECT_EQ(resource.failures(), 3U);
}

TEST(FailingResourceTest, APoolOverItNamesTheLabelAndKeepsItsAccounts) {
  FailingResource resource(HostResource::instance());
  Pool pool(resource, {.name = "faulty"});
  auto kept = borrow_temporary<double>(pool, 1000, "kept");
  const PoolStats before = pool.stats();
  resource.set_plan({.fail_at = resource.allocations() + 1, .persistent = true});
  try {
    (void)borrow_temporary<double>(pool, 5000, "Mesh.side_cells");
    FAIL() << "the pool hid the failure";
  } catch (const OutOfMemory& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'faulty'"), std::string::npos) << message;
    EXPECT_NE(message.find("'Mesh.side_cells'"), std::string::npos) << message;
  }
  EXPECT_EQ(pool.stats().live_bytes, before.live_bytes);
  const LedgerSnapshot ledger = pool.ledger();
  const LedgerEntry* line = ledger.find("Mesh.side_cells");
  EXPECT_TRUE(line == nullptr || line->live_bytes == 0);
  EXPECT_EQ(ledger.live_bytes(), before.live_bytes);
  resource.set_plan({});
  auto retried = borrow_temporary<double>(pool, 5000, "Mesh.side_cells");
  EXPECT_EQ(retried.size(), 5000U);
}

}  // namespace
}  // namespace afem::memory
