#pragma once

/// @file
/// parallel_for: a loop over [0, n) on the process's CPU worker team. The calling thread works
/// too and waits only for the threads that joined the loop: a worker that the OS has not yet
/// scheduled (another process holds its core) takes nothing and holds nobody up. A step of many
/// short kernels therefore loses at most what a thread descheduled inside a loop (holding a chunk,
/// or between joining and leaving) keeps back until the OS runs it again.

#include <algorithm>
#include <cstddef>

namespace afem::memory {

namespace detail {

/// Runs `function(body, begin, end)` for the `chunks` equal ranges of [0, n).
using ChunkFunction = void (*)(const void* body, std::size_t begin, std::size_t end);

/// Splits [0, n) into `chunks` equal ranges and runs them on the worker team and the calling
/// thread; returns once every range has run. Runs them all on the calling thread when the team is
/// busy with another caller's loop or when it is called from inside a loop body.
void run_chunks(std::size_t n, std::size_t chunks, ChunkFunction function, const void* body);

/// The most chunks one loop is cut into.
inline constexpr std::size_t max_chunks = std::size_t{1} << 15;

/// Chunks per thread: enough that a thread slowed by another process leaves its share to others,
/// and that the threads finish a loop within a small chunk of one another.
inline constexpr std::size_t chunks_per_thread = 64;

/// The most chunks a thread claims with one atomic increment, while at least twice as many are
/// left in the share it claims from (fewer below, down to single chunks at the end of a share).
/// No claim holds more than a sixteenth of a thread's share of a loop, or one index where that
/// is less.
inline constexpr std::size_t claim_chunks = 4;

}  // namespace detail

/// Threads a parallel loop may use now, the calling one included: OpenMP's
/// omp_get_max_threads() (so OMP_NUM_THREADS and omp_set_num_threads apply), 1 in a build
/// without OpenMP. The team starts its threads on the first loop that needs them and keeps them
/// until the program ends.
[[nodiscard]] int parallel_team_size();

/// Calls `body(i)` once for every i in [0, n). Loops shorter than two grains run on the calling
/// thread; longer ones are cut into chunks_per_thread chunks of consecutive indices per thread
/// (fewer only when n is smaller), however few grains they hold: a loop of a few grains of uneven
/// bodies (cells holding different numbers of particles) balances as a long one does. Which
/// thread runs which index depends on timing, so the bodies must be independent of one another
/// (the results then do not depend on the thread count). `body` must not throw: an exception
/// ends the program, as it would leave an OpenMP region.
template <class Body>
void parallel_for(std::size_t n, std::size_t grain, const Body& body) {
  grain = std::max<std::size_t>(grain, 1);
  const auto team = static_cast<std::size_t>(parallel_team_size());
  const std::size_t chunks =
      team < 2 || n / grain < 2
          ? 1
          : std::min({n, team * detail::chunks_per_thread, detail::max_chunks});
  if (chunks < 2) {
    for (std::size_t i = 0; i < n; ++i) {
      body(i);
    }
    return;
  }
  detail::run_chunks(
      n, chunks,
      [](const void* erased, std::size_t begin, std::size_t end) noexcept {
        const Body& typed = *static_cast<const Body*>(erased);
        for (std::size_t i = begin; i < end; ++i) {
          typed(i);
        }
      },
      &body);
}

}  // namespace afem::memory
