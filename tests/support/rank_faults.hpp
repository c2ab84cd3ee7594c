#pragma once

// A fault injected at each pool allocation of one rank in turn, for the tests that run under
// mpirun: every rank must stop together with that rank's error, never hang.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "arenafem/memory/communicator.hpp"
#include "support/fault_injection.hpp"

namespace afem::test {

/// Runs attempt() on every rank for k = 1, 2, … with the k-th upstream allocation of `faulty`
/// failing on `faulty_rank` (where attempt must allocate from faulty.pool), while attempt fails.
/// Each failure must be a memory::CollectiveError on every rank whose message starts with
/// "rank <faulty_rank>: " and contains `words`. Returns the number of faults that failed it.
template <class Attempt>
int fail_each_allocation_of_one_rank(const memory::Communicator& comm, FaultyPool& faulty,
                                     int faulty_rank, const std::string& words, Attempt&& attempt,
                                     int limit = 400) {
  int failures = 0;
  for (int k = 1; k <= limit; ++k) {
    if (comm.rank() == faulty_rank) {
      faulty.plan_fault(k);
    }
    bool failed = false;
    try {
      attempt();
    } catch (const memory::CollectiveError& error) {
      failed = true;
      const std::string message = error.what();
      EXPECT_EQ(message.rfind("rank " + std::to_string(faulty_rank) + ": ", 0), 0U) << message;
      EXPECT_NE(message.find(words), std::string::npos) << message;
    }
    faulty.clear_fault();
    // Every rank saw the same outcome (each stops the loop on its own outcome: they agree, or
    // this fails on every rank).
    const std::int64_t failed_ranks = comm.sum(std::int64_t{failed ? 1 : 0});
    EXPECT_TRUE(failed_ranks == 0 || failed_ranks == comm.size()) << failed_ranks;
    if (failed_ranks != comm.size()) {
      break;
    }
    ++failures;
  }
  return failures;
}

}  // namespace afem::test
