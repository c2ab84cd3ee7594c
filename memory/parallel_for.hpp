#pragma once

/// @file
/// parallel_for: a loop over [0, n) on the process's CPU worker team. The calling thread works
/// too and waits only for the threads that joined the loop: a worker that the OS has not yet
/// scheduled (another process holds its core) takes nothing and holds nobody up. A step of many
/// short kernels therefore loses at most what a thread descheduled inside a loop (holding a chunk,
/// or between joining and leaving) keeps back until the OS runs it again.

#include <algorithm>
#include <cstddef>
#include <iterator>

namespace afem::memory {

namespace detail {

/// Runs `function(body, begin, end)` for the `chunks` equal ranges of [0, n).
using ChunkFunction = void (*)(const void* body, std::size_t begin, std::size_t end);

/// Chunks per thread: enough that a thread slowed by another process leaves its share to others,
/// and that the threads finish a loop within a small chunk of one another.
inline constexpr std::size_t chunks_per_thread = 64;

/// One loop of a run_phases call: [0, n) in `chunks` (>= 1) equal ranges.
struct ChunkedLoop {
  std::size_t n = 0;
  std::size_t chunks = 1;
  ChunkFunction function = nullptr;
  const void* body = nullptr;
};

/// The most loops one run_phases call runs.
inline constexpr std::size_t max_phases = 8;

/// Runs the `count` (1 to max_phases) loops one after the other on the worker team and the
/// calling thread, in one fork/join: a thread starts on loop f + 1 once every range of loop f has
/// run. Returns once every range of the last loop has run. Runs them all on the calling thread
/// when the team is busy with another caller's loop or when it is called from inside a loop body.
void run_phases(const ChunkedLoop* loops, std::size_t count);

/// run_phases for one loop.
inline void run_chunks(std::size_t n, std::size_t chunks, ChunkFunction function,
                       const void* body) {
  const ChunkedLoop loop{n, chunks, function, body};
  run_phases(&loop, 1);
}

/// The most chunks one loop is cut into.
inline constexpr std::size_t max_chunks = std::size_t{1} << 15;

/// How many chunks parallel_for cuts [0, n) into for a team of `team` threads: 1 (a serial
/// loop) when the team is one thread or n holds fewer than two grains.
inline std::size_t loop_chunks(std::size_t n, std::size_t grain, std::size_t team) {
  grain = std::max<std::size_t>(grain, 1);
  return team < 2 || n / grain < 2 ? 1 : std::min({n, team * chunks_per_thread, max_chunks});
}

/// Calls body(i) for every i in [begin, end): the ChunkFunction of a loop of `Body`.
template <class Body>
void run_body(const void* erased, std::size_t begin, std::size_t end) noexcept {
  const Body& typed = *static_cast<const Body*>(erased);
  for (std::size_t i = begin; i < end; ++i) {
    typed(i);
  }
}

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
  const std::size_t chunks =
      detail::loop_chunks(n, grain, static_cast<std::size_t>(parallel_team_size()));
  if (chunks < 2) {
    for (std::size_t i = 0; i < n; ++i) {
      body(i);
    }
    return;
  }
  detail::run_chunks(n, chunks, &detail::run_body<Body>, &body);
}

/// One loop of parallel_phases: body(i) for every i in [0, n), cut into chunks as parallel_for
/// cuts a loop of this grain. Holds a reference to the body, which must outlive it.
template <class Body>
struct LoopPhase {
  std::size_t n;
  std::size_t grain;
  const Body& body;
};

template <class Body>
LoopPhase(std::size_t, std::size_t, const Body&) -> LoopPhase<Body>;

/// Runs the loops one after the other, each cut into chunks as parallel_for would cut it, but in
/// one fork/join of the team: a thread that finds no index of loop f left waits only until every
/// index of loop f has run, then takes indices of loop f + 1. A loop's indices may run on any
/// thread, so, as for parallel_for, its bodies must be independent of one another; a body may
/// read what the loops before it wrote. Phases of a step that would each cost a fork/join (a
/// sort's count, scan and scatter) cost one. Unlike parallel_for, a loop shorter than two grains
/// among longer ones runs on whichever thread claims it (a loop inside its body then runs on that
/// thread alone), and when every loop is that short they all run on the calling thread. Bodies
/// must not throw, on any path. At most detail::max_phases loops.
template <class... Body>
void parallel_phases(const LoopPhase<Body>&... phases) {
  static_assert(sizeof...(Body) >= 1 && sizeof...(Body) <= detail::max_phases,
                "parallel_phases: 1 to detail::max_phases loops");
  const auto team = static_cast<std::size_t>(parallel_team_size());
  const detail::ChunkedLoop loops[] = {
      detail::ChunkedLoop{phases.n, detail::loop_chunks(phases.n, phases.grain, team),
                          &detail::run_body<Body>, &phases.body}...};
  if (std::all_of(std::begin(loops), std::end(loops),
                  [](const detail::ChunkedLoop& loop) { return loop.chunks < 2; })) {
    (detail::run_body<Body>(&phases.body, 0, phases.n), ...);
    return;
  }
  detail::run_phases(loops, sizeof...(Body));
}

}  // namespace afem::memory
