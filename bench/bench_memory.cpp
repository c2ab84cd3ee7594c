/// @file
/// One mixed-size allocation trace replayed through four allocators in one binary, so that their
/// ratios are measured side by side under the same machine load:
///
///   BM_Trace_Malloc   malloc / free
///   BM_Trace_PmrPool  std::pmr::unsynchronized_pool_resource over new_delete_resource, align 256
///   BM_Trace_Pool     afem::memory::Pool: replace_owned (borrow_temporary) / Temporary::release
///   BM_Trace_Arena    afem::memory::Arena over a Pool, reset by an ArenaScope at each step end
///
/// The trace (built once, fixed seed): 10 000 allocations in 20 steps of 500, sizes log-uniform
/// in [64 B, 64 MiB) (density proportional to 1/size), each allocation freed after a uniform
/// 0..63 later allocations, and every allocation still live at a step end freed there (so the
/// arena can reset). 20 000 events in all; every allocator replays exactly the same events and
/// writes the first and last byte of every allocation. One benchmark iteration is one replay of
/// the whole trace; items_per_second counts allocations. The caching allocators (pmr, Pool, Arena)
/// are created outside the timed loop and replay the trace once before timing. Their counters:
/// `upstream_allocs`, allocations that reached the upstream resource during the timed loop, per
/// replay (0 means fully warm: Pool and Arena; pmr sends blocks above its largest pool size
/// upstream every time); `reserved_MiB`, what Pool or Arena holds from upstream after the run;
/// `peak_used_MiB`, the most the Arena bumped in one step.
///
/// Run (the CPU is shared and noisy: use repetitions and compare medians):
///
///   build/release/bench/bench_memory --benchmark_repetitions=5
///       --benchmark_report_aggregates_only=true --benchmark_min_time=0.5   (one line)
///
/// Ratios: divide the median Time of BM_Trace_Malloc by that of BM_Trace_Pool (or _Arena, or
/// divide _PmrPool by _Pool); the same ratio holds for items_per_second the other way round.
/// Add --benchmark_filter=Pool to run a subset, --benchmark_format=json for scripts.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory_resource>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"

namespace {

namespace mem = afem::memory;

constexpr std::uint64_t trace_seed = 0x5eed'a7e7'afe3'0001ULL;
constexpr std::size_t step_count = 20;
constexpr std::size_t allocations_per_step = 500;
constexpr std::size_t max_lifetime = 64;  // freed after 0..max_lifetime-1 later allocations
constexpr double smallest_log2 = 6.0;     // 64 B
constexpr double largest_log2 = 26.0;     // 64 MiB
constexpr std::size_t pmr_alignment = 256;
constexpr std::size_t arena_chunk_bytes = std::size_t{64} << 20;
constexpr double mebibyte = 1024.0 * 1024.0;

/// One allocation (bytes > 0) into a slot, or the release of the allocation a slot holds
/// (bytes == 0).
struct Event {
  std::size_t bytes;
  std::uint32_t slot;
};

struct Trace {
  std::vector<Event> events;
  std::vector<std::size_t> step_ends;  // events[step_ends[i-1], step_ends[i]) is step i
  std::size_t slot_count = 0;          // the most allocations live at once
  std::size_t allocations = 0;

  [[nodiscard]] std::span<const Event> step(std::size_t index) const {
    const std::size_t begin = index == 0 ? 0 : step_ends[index - 1];
    return std::span<const Event>(events).subspan(begin, step_ends[index] - begin);
  }
};

Trace make_trace() {
  std::mt19937_64 rng(trace_seed);
  std::uniform_real_distribution<double> log2_size(smallest_log2, largest_log2);
  std::uniform_int_distribution<std::size_t> lifetime(0, max_lifetime - 1);

  Trace trace;
  trace.events.reserve(2 * step_count * allocations_per_step);
  std::vector<std::uint32_t> free_slots;  // reused last-in first-out, so slot numbers stay small
  std::uint32_t next_slot = 0;
  std::vector<std::vector<std::uint32_t>> dies_after(allocations_per_step);
  std::vector<std::uint32_t> survivors;

  const auto release = [&](std::uint32_t slot) {
    trace.events.push_back(Event{0, slot});
    free_slots.push_back(slot);
  };

  for (std::size_t step = 0; step < step_count; ++step) {
    for (std::size_t i = 0; i < allocations_per_step; ++i) {
      std::uint32_t slot = next_slot;
      if (free_slots.empty()) {
        ++next_slot;
      } else {
        slot = free_slots.back();
        free_slots.pop_back();
      }
      const auto bytes = static_cast<std::size_t>(std::exp2(log2_size(rng)));
      trace.events.push_back(Event{std::clamp(bytes, std::size_t{64}, arena_chunk_bytes), slot});
      ++trace.allocations;

      const std::size_t death = i + lifetime(rng);
      if (death < allocations_per_step) {
        dies_after[death].push_back(slot);
      } else {
        survivors.push_back(slot);
      }
      std::shuffle(dies_after[i].begin(), dies_after[i].end(), rng);
      for (const std::uint32_t dead : dies_after[i]) {
        release(dead);
      }
      dies_after[i].clear();
    }
    // Step end: everything still live is freed, in random order.
    std::shuffle(survivors.begin(), survivors.end(), rng);
    for (const std::uint32_t dead : survivors) {
      release(dead);
    }
    survivors.clear();
    trace.step_ends.push_back(trace.events.size());
  }
  trace.slot_count = next_slot;
  return trace;
}

const Trace& trace() {
  static const Trace built = make_trace();
  return built;
}

/// Writes the first and last byte, the same for every allocator, so that all are compared on
/// usable memory (first touch of a fresh page included).
inline void touch(std::byte* pointer, std::size_t bytes) {
  pointer[0] = std::byte{1};
  pointer[bytes - 1] = std::byte{2};
  benchmark::DoNotOptimize(pointer);
}

/// Calls allocate(event) for each allocation and release(event) for each release, in order.
template <class Allocate, class Release>
void replay(std::span<const Event> events, Allocate& allocate, Release& release) {
  for (const Event& event : events) {
    if (event.bytes != 0) {
      allocate(event);
    } else {
      release(event);
    }
  }
}

/// A counter shown as its total over the timed loop divided by the number of replays.
benchmark::Counter per_replay(std::uint64_t total) {
  return benchmark::Counter(static_cast<double>(total), benchmark::Counter::kAvgIterations);
}

void finish(benchmark::State& state) {
  state.SetItemsProcessed(state.iterations() *
                          static_cast<benchmark::IterationCount>(trace().allocations));
}

// ---------------------------------------------------------------------------------------------

void BM_Trace_Malloc(benchmark::State& state) {
  const Trace& t = trace();
  struct Slot {
    std::byte* pointer;
    std::size_t bytes;
  };
  std::vector<Slot> slots(t.slot_count);
  bool failed = false;
  auto allocate = [&](const Event& event) {
    // The baseline under measurement is the system allocator itself.
    // NOLINTNEXTLINE(cppcoreguidelines-no-malloc,cppcoreguidelines-owning-memory)
    auto* pointer = static_cast<std::byte*>(std::malloc(event.bytes));
    if (pointer == nullptr) {
      failed = true;
      return;
    }
    touch(pointer, event.bytes);
    slots[event.slot] = Slot{pointer, event.bytes};
  };
  auto release = [&](const Event& event) {
    // NOLINTNEXTLINE(cppcoreguidelines-no-malloc,cppcoreguidelines-owning-memory)
    std::free(slots[event.slot].pointer);
    slots[event.slot].pointer = nullptr;
  };
  for (auto _ : state) {
    replay(t.events, allocate, release);
  }
  if (failed) {
    state.SkipWithError("malloc returned nullptr");
  }
  finish(state);
}

/// Forwards to another resource, counting the allocations that reach it.
class CountingResource final : public std::pmr::memory_resource {
public:
  explicit CountingResource(std::pmr::memory_resource* upstream) : upstream_(upstream) {}
  [[nodiscard]] std::uint64_t allocations() const { return allocations_; }

private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    ++allocations_;
    return upstream_->allocate(bytes, alignment);
  }
  void do_deallocate(void* pointer, std::size_t bytes, std::size_t alignment) override {
    upstream_->deallocate(pointer, bytes, alignment);
  }
  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  std::pmr::memory_resource* upstream_;
  std::uint64_t allocations_ = 0;
};

void BM_Trace_PmrPool(benchmark::State& state) {
  const Trace& t = trace();
  CountingResource upstream(std::pmr::new_delete_resource());
  std::pmr::unsynchronized_pool_resource pool(&upstream);
  struct Slot {
    std::byte* pointer;
    std::size_t bytes;
  };
  std::vector<Slot> slots(t.slot_count);
  auto allocate = [&](const Event& event) {
    auto* pointer = static_cast<std::byte*>(pool.allocate(event.bytes, pmr_alignment));
    touch(pointer, event.bytes);
    slots[event.slot] = Slot{pointer, event.bytes};
  };
  auto release = [&](const Event& event) {
    pool.deallocate(slots[event.slot].pointer, slots[event.slot].bytes, pmr_alignment);
    slots[event.slot].pointer = nullptr;
  };
  replay(t.events, allocate, release);  // warm-up

  const std::uint64_t upstream_before = upstream.allocations();
  for (auto _ : state) {
    replay(t.events, allocate, release);
  }
  state.counters["upstream_allocs"] = per_replay(upstream.allocations() - upstream_before);
  finish(state);
}

/// Allocate and release through the public handle: replace_owned (borrow_temporary into a slot),
/// Temporary::data() to touch, Temporary::release().
struct TemporaryReplay {
  mem::MemorySource* source;
  std::vector<mem::Temporary<std::byte>> slots;

  static constexpr std::string_view label = "bench.trace";

  void operator()(const Event& event) {
    mem::Temporary<std::byte>& slot =
        mem::replace_owned(slots[event.slot], *source, event.bytes, label);
    touch(slot.data(), event.bytes);
  }
};

struct TemporaryRelease {
  std::vector<mem::Temporary<std::byte>>* slots;
  void operator()(const Event& event) const { (*slots)[event.slot].release(); }
};

void BM_Trace_Pool(benchmark::State& state) {
  const Trace& t = trace();
  mem::Pool pool(mem::HostResource::instance(),
                 mem::PoolOptions{.name = "bench.pool", .stream = {}});
  TemporaryReplay allocate{&pool, std::vector<mem::Temporary<std::byte>>(t.slot_count)};
  TemporaryRelease release{&allocate.slots};
  replay(t.events, allocate, release);  // warm-up

  const std::uint64_t upstream_before = pool.stats().upstream_allocations;
  for (auto _ : state) {
    replay(t.events, allocate, release);
  }
  const mem::PoolStats stats = pool.stats();
  state.counters["upstream_allocs"] = per_replay(stats.upstream_allocations - upstream_before);
  state.counters["reserved_MiB"] = static_cast<double>(stats.reserved_bytes) / mebibyte;
  finish(state);
}

void BM_Trace_Arena(benchmark::State& state) {
  const Trace& t = trace();
  mem::Pool pool(mem::HostResource::instance(),
                 mem::PoolOptions{.name = "bench.arena_pool", .stream = {}});
  mem::Arena arena(
      pool, mem::ArenaOptions{
                .name = "bench.arena", .chunk_bytes = arena_chunk_bytes, .capacity_bytes = 0});
  TemporaryReplay allocate{&arena, std::vector<mem::Temporary<std::byte>>(t.slot_count)};
  TemporaryRelease release{&allocate.slots};
  const auto replay_steps = [&] {
    for (std::size_t step = 0; step < t.step_ends.size(); ++step) {
      const mem::ArenaScope scope(arena);  // resets the arena when the step ends
      replay(t.step(step), allocate, release);
    }
  };
  replay_steps();  // warm-up

  const std::uint64_t upstream_before = pool.stats().upstream_allocations;
  for (auto _ : state) {
    replay_steps();
  }
  state.counters["upstream_allocs"] =
      per_replay(pool.stats().upstream_allocations - upstream_before);
  state.counters["reserved_MiB"] = static_cast<double>(arena.stats().reserved_bytes) / mebibyte;
  state.counters["peak_used_MiB"] = static_cast<double>(arena.stats().peak_used_bytes) / mebibyte;
  finish(state);
}

}  // namespace

BENCHMARK(BM_Trace_Malloc)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Trace_PmrPool)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Trace_Pool)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Trace_Arena)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
