#pragma once

/// @file
/// expect_clean_failures_until_it_fits: runs an operation with arenas of growing hard capacity and
/// expects each one too small to fail cleanly.

#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/pool.hpp"

namespace afem::test {

/// Calls `attempt(arena)` with arenas over `pool` of hard capacity 4 KiB, 8 KiB, ... until one
/// fits (`attempt` then checks its own result). Every smaller one must throw OutOfMemory naming the
/// arena ("bounded") and hold no handle afterwards; `after_failure()` then checks the caller's
/// objects. Fails when none up to 256 MiB fits, or when the first already fits (the attempt would
/// check nothing).
template <class Attempt, class AfterFailure>
void expect_clean_failures_until_it_fits(memory::Pool& pool, const Attempt& attempt,
                                         const AfterFailure& after_failure) {
  int failures = 0;
  for (std::size_t capacity = 4096;; capacity *= 2) {
    memory::Arena bounded(pool,
                          {.name = "bounded", .chunk_bytes = capacity, .capacity_bytes = capacity});
    try {
      attempt(bounded);
      break;
    } catch (const OutOfMemory& error) {
      ++failures;
      EXPECT_NE(std::string(error.what()).find("'bounded'"), std::string::npos) << error.what();
      EXPECT_EQ(bounded.stats().live_handles, 0U);
      after_failure();
    }
    ASSERT_LT(capacity, std::size_t{1} << 28) << "no arena up to 256 MiB fitted";
  }
  EXPECT_GT(failures, 0) << "the smallest arena already fitted: the test checks nothing";
}

/// The same with nothing of the caller's to check after a failure.
template <class Attempt>
void expect_clean_failures_until_it_fits(memory::Pool& pool, const Attempt& attempt) {
  expect_clean_failures_until_it_fits(pool, attempt, [] {});
}

}  // namespace afem::test
