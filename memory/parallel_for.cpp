#include "arenafem/memory/parallel_for.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace afem::memory {

namespace {

/// Set on the worker threads and on a caller while its loop runs.
thread_local bool inside_loop = false;

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

/// One step of a wait for other threads: a pause for the first 1024 steps, then a yield of the
/// core (a thread waited for may share it). The count stops at 1024, however long the wait.
void back_off(int& spins) noexcept {
  if (spins < 1024) {
    ++spins;
    cpu_relax();
  } else {
    std::this_thread::yield();
  }
}

/// The join word: [sequence:31][open:1][joined:32]. A worker takes part in a loop by raising
/// `joined` while the loop is open, and leaves by lowering it; the caller closes the loop once
/// every chunk is claimed and then waits for the threads that joined, never for others.
struct JoinWord {
  static constexpr std::uint64_t open_bit = std::uint64_t{1} << 32;
  static constexpr std::uint64_t joined_mask = open_bit - 1;

  static std::uint64_t open_loop(std::uint64_t sequence) { return (sequence << 33) | open_bit; }
  static bool is_open(std::uint64_t word) { return (word & open_bit) != 0; }
  static std::uint64_t sequence(std::uint64_t word) { return word >> 33; }
  static std::uint64_t joined(std::uint64_t word) { return word & joined_mask; }
};

/// One thread's home share of a loop's chunks, claimed front to back by its owner first and by
/// the others once their own shares are done. Alone on its cache line.
struct alignas(64) ChunkRange {
  std::atomic<std::size_t> next{0};
  std::size_t end = 0;
};

/// How many chunks of one loop of a run_phases call have run. Alone on its cache line.
struct alignas(64) ChunksDone {
  std::atomic<std::size_t> count{0};
};

/// The worker threads behind parallel_for. One call runs at a time (a loop, or the loops of one
/// parallel_phases); its caller takes part and
/// waits for the threads that joined it, never for a worker that has not arrived. Each thread
/// starts on its own contiguous share of the chunks (the same share loop after loop, so its data
/// stays in its core's cache) and then takes what is left of the others'.
class WorkTeam {
public:
  WorkTeam() = default;
  WorkTeam(const WorkTeam&) = delete;
  WorkTeam& operator=(const WorkTeam&) = delete;
  WorkTeam(WorkTeam&&) = delete;
  WorkTeam& operator=(WorkTeam&&) = delete;

  ~WorkTeam() {
    stop_.store(true, std::memory_order_seq_cst);
    wake_.fetch_add(1, std::memory_order_seq_cst);
    wake_.notify_all();
    for (std::thread& worker : workers_) {
      worker.join();
    }
  }

  /// False when another loop holds the team (a second caller thread): run serially then.
  bool try_acquire() noexcept { return !busy_.test_and_set(std::memory_order_acquire); }
  void release() noexcept { busy_.clear(std::memory_order_release); }

  /// Runs the loops with `team` threads, the caller included (holding the team).
  void run(const detail::ChunkedLoop* loops, std::size_t count, std::size_t team) {
    ensure_workers(team - 1);
    loops_ = loops;
    loop_count_ = count;
    team_ = team;
    for (std::size_t f = 0; f < count; ++f) {
      const std::size_t chunks = std::min(loops[f].chunks, detail::max_chunks);
      // No claim holds more indices than a chunk of chunks_per_thread / claim_chunks per thread.
      claims_[f] = std::clamp<std::size_t>(
          chunks * detail::claim_chunks / (detail::chunks_per_thread * team), 1,
          detail::claim_chunks);
      chunks_[f] = chunks;
      done_[f].count.store(0, std::memory_order_relaxed);
      ChunkRange* ranges = loop_ranges(f);
      for (std::size_t r = 0; r < team; ++r) {
        ranges[r].next.store(chunks * r / team, std::memory_order_relaxed);
        ranges[r].end = chunks * (r + 1) / team;
      }
    }
    sequence_ = (sequence_ + 1) & ((std::uint64_t{1} << 31) - 1);
    join_.store(JoinWord::open_loop(sequence_), std::memory_order_release);
    wake_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      wake_.notify_all();
    }
    claim_all(0);
    // Every chunk is claimed: no thread may join any more; wait for those that did. One of them
    // may share this core, so after a short spin the caller yields it.
    std::uint64_t word = join_.fetch_and(~JoinWord::open_bit, std::memory_order_acq_rel);
    for (int spins = 0; JoinWord::joined(word) != 0;) {
      back_off(spins);
      word = join_.load(std::memory_order_acquire);
    }
  }

private:
  ChunkRange* loop_ranges(std::size_t loop) const { return &ranges_[loop * ranges_capacity_]; }

  /// Runs chunks of every loop until none is left, loop after loop: in each the thread's own
  /// share first, then the others' in turn. Before a loop after the first it waits until every
  /// chunk of the one before has run (its claims are all taken: only threads running them are
  /// waited for).
  void claim_all(std::size_t home) const {
    for (std::size_t f = 0; f < loop_count_; ++f) {
      if (f > 0) {
        wait_for_loop(f - 1);
      }
      const detail::ChunkedLoop& loop = loops_[f];
      const std::size_t chunks = chunks_[f];
      const bool counted = f + 1 < loop_count_;
      ChunkRange* ranges = loop_ranges(f);
      std::size_t ran = 0;
      for (std::size_t k = 0; k < team_; ++k) {
        ChunkRange& range = ranges[(home + k) % team_];
        // A look before the claim keeps late threads off the lines of ranges already taken.
        for (std::size_t seen = range.next.load(std::memory_order_relaxed); seen < range.end;
             seen = range.next.load(std::memory_order_relaxed)) {
          const std::size_t step = std::clamp<std::size_t>((range.end - seen) / 2, 1, claims_[f]);
          const std::size_t chunk = range.next.fetch_add(step, std::memory_order_relaxed);
          if (chunk >= range.end) {
            break;
          }
          const std::size_t last = std::min(chunk + step, range.end);
          loop.function(loop.body, loop.n * chunk / chunks, loop.n * last / chunks);
          ran += last - chunk;
        }
      }
      // Once a thread's claims: a count written at every claim would pull its line away from the
      // threads waiting on it, and from the others' claims.
      if (counted && ran > 0) {
        done_[f].count.fetch_add(ran, std::memory_order_release);
      }
    }
  }

  /// Spins, then yields, until every chunk of loop `f` has run.
  void wait_for_loop(std::size_t f) const {
    for (int spins = 0; done_[f].count.load(std::memory_order_acquire) < chunks_[f];) {
      back_off(spins);
    }
  }

  void ensure_workers(std::size_t count) {
    if (ranges_capacity_ < count + 1) {
      // Before any worker exists or while all wait (the caller holds the team): safe to swap.
      ranges_capacity_ = std::max<std::size_t>(count + 1, 2);
      ranges_ = std::make_unique<ChunkRange[]>(ranges_capacity_ * detail::max_phases);
    }
    while (workers_.size() < count) {
      const std::size_t index = workers_.size() + 1;
      workers_.emplace_back([this, index] { work(index); });
    }
  }

  /// A worker's life: wait for a loop it has not joined, join it while it is open, claim chunks,
  /// leave, wait again.
  void work(std::size_t index) {
    inside_loop = true;  // a loop inside a body runs on the thread that runs the body
    std::uint64_t last = 0;
    std::uint32_t seen = wake_.load(std::memory_order_acquire);
    for (;;) {
      seen = wait_for_wake(seen, last);
      if (stop_.load(std::memory_order_acquire)) {
        return;
      }
      std::uint64_t word = join_.load(std::memory_order_acquire);
      bool joined = false;
      while (JoinWord::is_open(word) && JoinWord::sequence(word) != last) {
        if (join_.compare_exchange_weak(word, word + 1, std::memory_order_acquire,
                                        std::memory_order_acquire)) {
          joined = true;
          break;
        }
      }
      last = JoinWord::sequence(word);
      if (!joined) {
        continue;
      }
      // The loop's description stands until this thread leaves.
      if (index < team_) {
        claim_all(index);
      }
      join_.fetch_sub(1, std::memory_order_release);
    }
  }

  /// Spins briefly (kernels of a step follow each other within microseconds) until a loop after
  /// `last` is open, then sleeps until the wake count moves past `seen`.
  std::uint32_t wait_for_wake(std::uint32_t seen, std::uint64_t last) {
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    for (int spins = 0;; ++spins) {
      const std::uint64_t word = join_.load(std::memory_order_acquire);
      if ((JoinWord::is_open(word) && JoinWord::sequence(word) != last) ||
          stop_.load(std::memory_order_relaxed)) {
        return wake_.load(std::memory_order_acquire);
      }
      if ((spins & 63) == 63 && std::chrono::steady_clock::now() > spin_until) {
        break;
      }
      cpu_relax();
    }
    for (;;) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      if (wake_.load(std::memory_order_seq_cst) == seen) {
        wake_.wait(seen, std::memory_order_seq_cst);
      }
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      const std::uint32_t now = wake_.load(std::memory_order_acquire);
      if (now != seen) {
        return now;
      }
    }
  }

  std::vector<std::thread> workers_;
  std::unique_ptr<ChunkRange[]> ranges_;
  std::size_t ranges_capacity_ = 0;
  std::atomic_flag busy_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint32_t> wake_{0};
  std::atomic<std::uint32_t> sleepers_{0};
  alignas(64) std::atomic<std::uint64_t> join_{0};
  std::uint64_t sequence_ = 0;
  // The current loops, written by their caller before they open; on cache lines which joins,
  // leaves and claims do not write.
  alignas(64) const detail::ChunkedLoop* loops_ = nullptr;
  std::size_t loop_count_ = 0;
  std::size_t team_ = 0;
  std::size_t chunks_[detail::max_phases] = {};  ///< each loop's chunks, at most max_chunks
  std::size_t claims_[detail::max_phases] = {};  ///< the most chunks one claim of a loop takes
  mutable ChunksDone done_[detail::max_phases];
};

WorkTeam& work_team() {
  static WorkTeam team;
  return team;
}

}  // namespace

int parallel_team_size() {
#if defined(_OPENMP)
  return std::clamp(omp_get_max_threads(), 1, 255);
#else
  return 1;
#endif
}

void detail::run_phases(const ChunkedLoop* loops, std::size_t count) {
  const auto team = static_cast<std::size_t>(parallel_team_size());
  WorkTeam& workers = work_team();
  if (team < 2 || inside_loop || !workers.try_acquire()) {
    for (std::size_t f = 0; f < count; ++f) {
      loops[f].function(loops[f].body, 0, loops[f].n);
    }
    return;
  }
  inside_loop = true;
  workers.run(loops, count, team);
  inside_loop = false;
  workers.release();
}

}  // namespace afem::memory
