// parallel_for on the CPU worker team: every index once, from any team size, nested loops and
// concurrent callers; the team's reach into Thrust is tested in test_thrust_allocator.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "arenafem/memory/parallel_for.hpp"
#include "support/thread_count.hpp"

namespace afem::memory {
namespace {

/// How many times parallel_for(n, grain) calls the body with each index.
std::vector<int> visits(std::size_t n, std::size_t grain) {
  std::vector<std::atomic<int>> seen(n);
  parallel_for(n, grain, [&](std::size_t i) { seen[i].fetch_add(1, std::memory_order_relaxed); });
  std::vector<int> counts(n);
  for (std::size_t i = 0; i < n; ++i) {
    counts[i] = seen[i].load();
  }
  return counts;
}

TEST(ParallelForTest, CallsTheBodyOnceForEveryIndexWhateverTheTeam) {
  for (const int team : {1, 2, 3, 4}) {
    const test::ThreadCount size(team);
    // Short loops too, whose shares are claimed a few indices or one at a time.
    for (const std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7},
          std::size_t{33}, std::size_t{100}, std::size_t{257}, std::size_t{511}, std::size_t{512},
          std::size_t{100003}, std::size_t{1} << 20}) {
      for (const std::size_t grain : {std::size_t{0}, std::size_t{1}, std::size_t{256}}) {
        const std::vector<int> counts = visits(n, grain);
        const auto wrong =
            std::count_if(counts.begin(), counts.end(), [](int c) { return c != 1; });
        EXPECT_EQ(wrong, 0) << n << " indices, grain " << grain << ", team " << team;
      }
    }
  }
}

TEST(ParallelForTest, TeamSizeFollowsOpenMpThreadCount) {
#if defined(_OPENMP)
  for (const int team : {1, 3}) {
    const test::ThreadCount size(team);
    EXPECT_EQ(parallel_team_size(), team);
  }
#else
  EXPECT_EQ(parallel_team_size(), 1);
#endif
}

TEST(ParallelForTest, UsesNoMoreThreadsThanTheTeam) {
  for (const int team : {1, 2}) {
    const test::ThreadCount size(team);
    std::mutex mutex;
    std::set<std::thread::id> threads;
    for (int repeat = 0; repeat < 20; ++repeat) {
      parallel_for(std::size_t{1} << 16, 64, [&](std::size_t i) {
        if (i % 512 == 0) {
          const std::lock_guard<std::mutex> lock(mutex);
          threads.insert(std::this_thread::get_id());
        }
      });
    }
    EXPECT_LE(threads.size(), static_cast<std::size_t>(team)) << "team " << team;
    if (team == 1) {
      EXPECT_EQ(threads, std::set<std::thread::id>{std::this_thread::get_id()});
    }
  }
}

TEST(ParallelForTest, ALoopInsideABodyRunsOnThatBodysThread) {
  const test::ThreadCount size(4);
  constexpr std::size_t outer = 64;
  constexpr std::size_t inner = 4096;
  std::vector<std::atomic<int>> seen(outer * inner);
  std::atomic<int> foreign{0};
  parallel_for(outer, 1, [&](std::size_t o) {
    const auto owner = std::this_thread::get_id();
    parallel_for(inner, 16, [&](std::size_t i) {
      seen[o * inner + i].fetch_add(1, std::memory_order_relaxed);
      if (std::this_thread::get_id() != owner) {
        foreign.fetch_add(1, std::memory_order_relaxed);
      }
    });
  });
  EXPECT_EQ(foreign.load(), 0);
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](const auto& c) { return c.load() != 1; }),
            0);
}

TEST(ParallelForTest, ConcurrentCallersBothFinishEveryIndex) {
  const test::ThreadCount size(2);
  constexpr std::size_t n = std::size_t{1} << 18;
  std::vector<std::atomic<int>> first(n);
  std::vector<std::atomic<int>> second(n);
  auto fill = [](std::vector<std::atomic<int>>& seen) {
    for (int repeat = 0; repeat < 10; ++repeat) {
      parallel_for(seen.size(), 256,
                   [&](std::size_t i) { seen[i].fetch_add(1, std::memory_order_relaxed); });
    }
  };
  std::thread other([&] { fill(second); });
  fill(first);
  other.join();
  for (const auto* seen : {&first, &second}) {
    EXPECT_EQ(
        std::count_if(seen->begin(), seen->end(), [](const auto& c) { return c.load() != 10; }), 0);
  }
}

TEST(ParallelPhasesTest, EachLoopSeesEverythingTheLoopBeforeItWrote) {
  for (const int team : {1, 2, 3, 4}) {
    const test::ThreadCount size(team);
    // Short and serial loops among parallel ones; each loop reads its input in the reverse order
    // of the loop that wrote it, so that a thread starting early reads another thread's last
    // indices.
    for (const std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{300},
                                std::size_t{5000}, std::size_t{100003}}) {
      std::vector<std::int64_t> first(n, -1);
      std::vector<std::int64_t> second(n, -1);
      std::vector<std::int64_t> third(n + 3, -1);
      std::vector<std::atomic<int>> visits(3 * n + 3);
      for (int repeat = 0; repeat < 20; ++repeat) {
        parallel_phases(LoopPhase{n, 1,
                                  [&](std::size_t i) {
                                    visits[i].fetch_add(1, std::memory_order_relaxed);
                                    first[i] = static_cast<std::int64_t>(i) + repeat;
                                  }},
                        LoopPhase{n, 256,
                                  [&](std::size_t i) {
                                    visits[n + i].fetch_add(1, std::memory_order_relaxed);
                                    second[i] = 2 * first[n - 1 - i];
                                  }},
                        LoopPhase{n + 3, 16, [&](std::size_t i) {
                                    visits[2 * n + i].fetch_add(1, std::memory_order_relaxed);
                                    third[i] = i < n ? second[n - 1 - i] + 1 : -2;
                                  }});
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) {
          wrong += third[i] != 2 * (static_cast<std::int64_t>(i) + repeat) + 1 ? 1 : 0;
        }
        EXPECT_EQ(wrong, 0U) << n << " indices, team " << team << ", repeat " << repeat;
        EXPECT_EQ(third[n], -2);
      }
      EXPECT_EQ(
          std::count_if(visits.begin(), visits.end(), [](const auto& c) { return c.load() != 20; }),
          0)
          << n << " indices, team " << team;
    }
  }
}

TEST(ParallelPhasesTest, ALoopInsideAPhaseRunsOnThatBodysThread) {
  const test::ThreadCount size(3);
  std::vector<std::atomic<int>> seen(std::size_t{64} * 512);
  std::atomic<int> foreign{0};
  std::atomic<int> before{0};
  parallel_phases(LoopPhase{std::size_t{64}, 1,
                            [&](std::size_t) { before.fetch_add(1, std::memory_order_relaxed); }},
                  LoopPhase{std::size_t{64}, 1, [&](std::size_t o) {
                              const auto owner = std::this_thread::get_id();
                              EXPECT_EQ(before.load(std::memory_order_relaxed), 64);
                              parallel_phases(LoopPhase{
                                  std::size_t{512}, 1, [&](std::size_t i) {
                                    if (std::this_thread::get_id() != owner) {
                                      foreign.fetch_add(1, std::memory_order_relaxed);
                                    }
                                    seen[o * 512 + i].fetch_add(1, std::memory_order_relaxed);
                                  }});
                            }});
  EXPECT_EQ(foreign.load(), 0);
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](const auto& c) { return c.load() != 1; }),
            0);
}

TEST(ParallelPhasesTest, ConcurrentCallersAndCallsOfDifferentLengthsFinishInOrder) {
  const test::ThreadCount size(2);
  constexpr std::size_t n = std::size_t{1} << 15;
  // Each caller alternates calls of two and of four phases; one of them runs serially whenever the
  // other holds the team. Phase k of a call adds k + 1 to every entry after checking what phase k
  // - 1 left there.
  auto run = [](std::vector<std::int64_t>& values, std::atomic<int>& wrong) {
    for (int call = 0; call < 40; ++call) {
      std::int64_t base = values[0];
      const auto phase = [&](std::int64_t k) {
        return [&values, &wrong, base, k](std::size_t i) {
          if (values[i] != base + k * (k + 1) / 2) {
            wrong.fetch_add(1, std::memory_order_relaxed);
          }
          values[i] += k + 1;
        };
      };
      const auto p0 = phase(0);
      const auto p1 = phase(1);
      const auto p2 = phase(2);
      const auto p3 = phase(3);
      if (call % 2 == 0) {
        parallel_phases(LoopPhase{values.size(), 64, p0}, LoopPhase{values.size(), 64, p1});
      } else {
        parallel_phases(LoopPhase{values.size(), 64, p0}, LoopPhase{values.size(), 64, p1},
                        LoopPhase{values.size(), 64, p2}, LoopPhase{values.size(), 64, p3});
      }
    }
  };
  std::vector<std::int64_t> first(n, 0);
  std::vector<std::int64_t> second(n, 0);
  std::atomic<int> wrong_first{0};
  std::atomic<int> wrong_second{0};
  std::thread other([&] { run(second, wrong_second); });
  run(first, wrong_first);
  other.join();
  EXPECT_EQ(wrong_first.load(), 0);
  EXPECT_EQ(wrong_second.load(), 0);
  // 20 calls of 1 + 2 and 20 of 1 + 2 + 3 + 4.
  for (const auto* values : {&first, &second}) {
    EXPECT_EQ(std::count(values->begin(), values->end(), 20 * 3 + 20 * 10),
              static_cast<std::ptrdiff_t>(n));
  }
}

}  // namespace
}  // namespace afem::memory
