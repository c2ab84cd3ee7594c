#pragma once

/// @file
/// Fault injection for tests: a Pool over a FailingResource, and a driver that fails each upstream
/// allocation of an operation in turn.

#include <gtest/gtest.h>

#include <string>

#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/failing_resource.hpp"
#include "arenafem/memory/pool.hpp"

namespace afem::test {

/// A Pool of this build's device memory over a FailingResource; no faults until plan_fault().
struct FaultyPool {
  memory::FailingResource resource{memory::device_resource()};
  memory::Pool pool{resource, memory::PoolOptions{.name = "faulty"}};

  /// From now on the k-th upstream allocation and every later one fail (memory stays exhausted,
  /// so the pool's retry after trimming its cache fails too).
  void plan_fault(int k) {
    resource.set_plan(
        {.fail_at = resource.allocations() + static_cast<std::uint64_t>(k), .persistent = true});
  }
  void clear_fault() { resource.set_plan({}); }
};

/// Calls attempt(k) for k = 1, 2, … while it returns true (the k-th allocation failed the
/// operation); attempt returns false when the operation completed, its allocations all before
/// the fault. Returns the number of faults that failed the operation.
template <class Attempt>
int fail_each_allocation(Attempt&& attempt, int limit = 2000) {
  for (int k = 1; k <= limit; ++k) {
    if (!attempt(k)) {
      return k - 1;
    }
  }
  ADD_FAILURE() << "the operation still failed after " << limit << " injected faults";
  return limit;
}

/// The checks every injected fault shares: the error is an OutOfMemory that names the label of
/// the allocation that failed.
inline void expect_names_a_label(const afem::OutOfMemory& error) {
  const std::string message = error.what();
  EXPECT_NE(message.find("for '"), std::string::npos) << message;
  EXPECT_NE(message.find("fault injected"), std::string::npos) << message;
}

}  // namespace afem::test
