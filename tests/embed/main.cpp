// An embedding program: a per-step arena over a pool, scratch for a Thrust sort, and the report.
#include <cstdio>
#include <vector>

#include <arenafem/memory/arena.hpp>
#include <arenafem/memory/temporary.hpp>

#if !AFEM_HAS_CUDA
#include <thrust/sort.h>

#include <arenafem/memory/thrust_allocator.hpp>
#endif

int main() {
  namespace mem = afem::memory;
  mem::Pool pool;
  mem::Arena arena(pool, mem::ArenaOptions{"embed.step", 1 << 20, 0});
  std::size_t upstream_after_first_step = 0;
  for (int step = 0; step < 10; ++step) {
    mem::ArenaScope scope(arena);
    auto keys = mem::borrow_temporary<int>(arena, 100000, "embed.keys");
    auto view = keys.view();
    for (std::size_t i = 0; i < view.size(); ++i) {
      view[i] = static_cast<int>((i * 7919) % 100003);
    }
#if !AFEM_HAS_CUDA
    thrust::sort(mem::arena_policy(arena), view.begin(), view.end());
#endif
    for (std::size_t i = 1; i < view.size(); ++i) {
      if (view[i - 1] > view[i]) {
        std::fprintf(stderr, "embed: keys not sorted at %zu\n", i);
        return 1;
      }
    }
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
