// bench_mpm: particle-steps per second of the default MPM scene (the 2D sand column) at about
// 10k, 100k and 1M particles, and of the dam break in 2D and 3D at the sizes of the peer runs,
// with the step's time split into its parts (rebin, particle to grid, grid update, grid to
// particle) measured in the same steps; and the captured step against the direct one at 10k,
// 100k and 1M particles.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>

#include "arenafem/apps/mpm/scene.hpp"
#include "arenafem/apps/mpm/simulation.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/owned_stream.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using afem::apps::mpm::Simulation;

/// A simulation of `options` warmed up by a few steps.
template <int D>
struct Fixture {
  afem::memory::OwnedStream stream{afem::memory::device_resource().device()};
  afem::memory::Pool pool{afem::memory::device_resource(),
                          {.name = "bench_mpm", .stream = stream.stream()}};
  afem::memory::Arena arena{pool, {"step", std::size_t{64} << 20, 0}};
  std::unique_ptr<Simulation<D>> simulation;

  explicit Fixture(const afem::apps::mpm::SceneOptions& options) {
    simulation = std::make_unique<Simulation<D>>(afem::apps::mpm::make_scene(options), pool, arena);
    for (int s = 0; s < 3; ++s) {
      simulation->step();
    }
  }
};

/// Whole steps, timed part by part: the step's time is the iteration time, each part's mean
/// milliseconds per step and the particle-steps per second are counters.
template <int D>
void run_steps(benchmark::State& state, const afem::apps::mpm::SceneOptions& options) {
  Fixture<D> fixture(options);
  Simulation<D>& simulation = *fixture.simulation;
  using Clock = std::chrono::steady_clock;
  double part_seconds[4] = {0.0, 0.0, 0.0, 0.0};
  // On CUDA the parts return with their work queued: each time is taken after the stream ran.
  const afem::memory::Stream& stream = fixture.pool.stream();
  const auto now = [&stream] {
    stream.synchronize();
    return Clock::now();
  };
  // The parts as step() runs them, the sorts into cell order (in g2p's time) included.
  std::int64_t step = simulation.steps_taken();
  const int sort_interval = simulation.particle_sort_interval();
  for (auto _ : state) {
    const auto t0 = now();
    simulation.rebin();
    const auto t1 = now();
    simulation.particle_to_grid();
    const auto t2 = now();
    simulation.update_grid();
    const auto t3 = now();
    simulation.grid_to_particle();
    if (sort_interval > 0 && step % sort_interval == 0) {
      simulation.sort_particles();
    }
    ++step;
    const auto t4 = now();
    fixture.arena.reset();
    const Clock::time_point marks[5] = {t0, t1, t2, t3, t4};
    for (int k = 0; k < 4; ++k) {
      part_seconds[k] += std::chrono::duration<double>(marks[k + 1] - marks[k]).count();
    }
    state.SetIterationTime(std::chrono::duration<double>(t4 - t0).count());
  }
  const double particles = simulation.particle_count();
  const char* names[4] = {"rebin_ms", "p2g_ms", "grid_ms", "g2p_ms"};
  for (int k = 0; k < 4; ++k) {
    state.counters[names[k]] =
        benchmark::Counter(1e3 * part_seconds[k], benchmark::Counter::kAvgIterations);
  }
  state.counters["particles"] = particles;
  state.counters["particle_steps_per_s"] = benchmark::Counter(
      particles * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
#if defined(_OPENMP)
  state.counters["threads"] = omp_get_max_threads();
#endif
}

/// The default scene (the 2D sand column, 2 x 2 particles per cell in a column covering 9 % of
/// the box) with about `particles` particles.
afem::apps::mpm::SceneOptions sand_column_of(std::int64_t particles) {
  afem::apps::mpm::SceneOptions options;
  options.resolution =
      static_cast<int>(std::lround(std::sqrt(static_cast<double>(particles) / 0.36)));
  return options;
}

/// The default scene with about state.range(0) particles.
void mpm_sand_column_2d(benchmark::State& state) {
  const afem::apps::mpm::SceneOptions options = sand_column_of(state.range(0));
  run_steps<2>(state, options);
}
BENCHMARK(mpm_sand_column_2d)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// Captured against direct steps, side by side: two simulations of the default scene with about
/// state.range(0) particles, one stepping directly and one through its captured step, step for
/// step in turn (the particles stay bitwise the same, so both do the same work). Counters: each
/// mode's mean step in milliseconds and their ratio (below 1: the captured step is faster).
void mpm_captured_vs_direct(benchmark::State& state) {
  const afem::apps::mpm::SceneOptions options = sand_column_of(state.range(0));
  Fixture<2> direct(options);
  Fixture<2> captured(options);
  captured.simulation->set_step_mode(afem::apps::mpm::StepMode::captured);
  for (int s = 0; s < 3; ++s) {  // two sizing steps, then the capture
    captured.simulation->step();
    direct.simulation->step();
  }
  using Clock = std::chrono::steady_clock;
  // On CUDA a step returns with its work queued: each time is taken after its stream ran.
  const auto now = [](const afem::memory::Stream& stream) {
    stream.synchronize();
    return Clock::now();
  };
  double seconds[2] = {0.0, 0.0};
  for (auto _ : state) {
    const auto t0 = now(direct.pool.stream());
    direct.simulation->step();
    const auto t1 = now(direct.pool.stream());
    captured.simulation->step();
    const auto t2 = now(captured.pool.stream());
    seconds[0] += std::chrono::duration<double>(t1 - t0).count();
    seconds[1] += std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(std::chrono::duration<double>(t2 - t0).count());
  }
  state.counters["particles"] = direct.simulation->particle_count();
  state.counters["direct_ms"] =
      benchmark::Counter(1e3 * seconds[0], benchmark::Counter::kAvgIterations);
  state.counters["captured_ms"] =
      benchmark::Counter(1e3 * seconds[1], benchmark::Counter::kAvgIterations);
  state.counters["captured_over_direct"] = seconds[0] > 0.0 ? seconds[1] / seconds[0] : 0.0;
#if defined(_OPENMP)
  state.counters["threads"] = omp_get_max_threads();
#endif
}
BENCHMARK(mpm_captured_vs_direct)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// The weakly compressible dam break on a grid of state.range(0) cells per axis with
/// state.range(1) particles per cell and axis, on Q1 (state.range(2) = 0) or quadratic B-splines
/// (1) (2D: 128 and 3 give about 33k particles, the size
/// of the peer runs in scripts/bench-mpm.sh).
void mpm_dam_break_2d(benchmark::State& state) {
  afem::apps::mpm::SceneOptions options;
  options.basis = static_cast<afem::apps::mpm::GridBasis>(state.range(2));
  options.kind = afem::apps::mpm::SceneKind::dam_break;
  options.resolution = static_cast<int>(state.range(0));
  options.particles_per_cell = static_cast<int>(state.range(1));
  run_steps<2>(state, options);
}
BENCHMARK(mpm_dam_break_2d)
    ->ArgNames({"n", "ppc", "bspline2"})
    ->Args({128, 3, 0})
    ->Args({128, 3, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// The same in 3D (64 cells per axis, 2 x 2 x 2 particles per cell: about 412k particles).
void mpm_dam_break_3d(benchmark::State& state) {
  afem::apps::mpm::SceneOptions options;
  options.basis = static_cast<afem::apps::mpm::GridBasis>(state.range(2));
  options.kind = afem::apps::mpm::SceneKind::dam_break;
  options.dimension = 3;
  options.resolution = static_cast<int>(state.range(0));
  options.particles_per_cell = static_cast<int>(state.range(1));
  run_steps<3>(state, options);
}
BENCHMARK(mpm_dam_break_3d)
    ->ArgNames({"n", "ppc", "bspline2"})
    ->Args({64, 2, 0})
    ->Args({64, 2, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// The incompressible dam break (apic_fluid's default scene) in state.range(0) dimensions on
/// state.range(1) cells per axis, its pressure solve preconditioned by Jacobi (state.range(2) = 0)
/// or the multigrid (1); grid_ms holds the projection. The steps run from the start of the scene
/// (the fluid still a column); scripts/bench-fluid.sh times apic_fluid's whole runs.
void mpm_incompressible_fluid(benchmark::State& state) {
  afem::apps::mpm::SceneOptions options;
  options.kind = afem::apps::mpm::SceneKind::dam_break;
  options.incompressible = true;
  options.dimension = static_cast<int>(state.range(0));
  options.resolution = static_cast<int>(state.range(1));
  options.pressure_preconditioner =
      static_cast<afem::apps::mpm::PressurePreconditioner>(state.range(2));
  if (options.dimension == 2) {
    run_steps<2>(state, options);
  } else {
    run_steps<3>(state, options);
  }
}
BENCHMARK(mpm_incompressible_fluid)
    ->ArgNames({"dim", "n", "multigrid"})
    ->Args({2, 128, 0})
    ->Args({2, 128, 1})
    ->Args({3, 40, 0})
    ->Args({3, 40, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
