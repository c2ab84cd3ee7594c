// An embedding program: a per-step arena over a pool, the library's sort and a Thrust scan drawing
// their scratch from it, and the report.
#include <cstdint>
#include <cstdio>

#include <arenafem/memory/arena.hpp>
#include <arenafem/memory/radix_sort.hpp>
#include <arenafem/memory/temporary.hpp>

#if !AFEM_HAS_CUDA
#include <thrust/scan.h>

#include <arenafem/memory/thrust_allocator.hpp>
#endif

int main() {
  namespace mem = afem::memory;
  mem::Pool pool;
  mem::Arena arena(pool, mem::ArenaOptions{"embed.step", 1 << 20, 0});
  std::size_t upstream_after_first_step = 0;
  for (int step = 0; step < 10; ++step) {
    mem::ArenaScope scope(arena);
    const std::size_t n = 100000;
    auto keys = mem::borrow_temporary<std::int32_t>(arena, n, "embed.keys");
    auto places = mem::borrow_temporary<std::int32_t>(arena, n, "embed.places");
    auto key = keys.view();
    auto place = places.view();
    for (std::size_t i = 0; i < n; ++i) {
      key[i] = static_cast<std::int32_t>((i * 7919) % 1009);
      place[i] = static_cast<std::int32_t>(i);
    }
    mem::radix_sort_by_key(key, place, arena);
    for (std::size_t i = 1; i < n; ++i) {
      const bool ordered = key[i - 1] < key[i] || (key[i - 1] == key[i] && place[i - 1] < place[i]);
      if (!ordered) {
        std::fprintf(stderr, "embed: keys not stably sorted at %zu\n", i);
        return 1;
      }
    }
#if !AFEM_HAS_CUDA
    // Each position, from a scan of ones.
    for (std::size_t i = 0; i < n; ++i) {
      place[i] = 1;
    }
    thrust::exclusive_scan(mem::arena_policy(arena), place.begin(), place.end(), place.begin());
    for (std::size_t i = 0; i < n; ++i) {
      if (place[i] != static_cast<std::int32_t>(i)) {
        std::fprintf(stderr, "embed: the scan gave %d at %zu\n", place[i], i);
        return 1;
      }
    }
#endif
    if (step == 0) {
      upstream_after_first_step = pool.stats().upstream_allocations;
    }
  }
  if (pool.stats().upstream_allocations != upstream_after_first_step) {
    std::fprintf(stderr, "embed: the pool went upstream after the first step\n");
    return 1;
  }
  std::printf("%s", pool.ledger().table().c_str());
  std::printf("embed: ok\n");
  return 0;
}
