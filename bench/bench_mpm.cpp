// bench_mpm: particle-steps per second of the default MPM scene (the 2D sand column) at about
// 10k, 100k and 1M particles, for the whole step and for each of its parts (rebin, particle to
// grid, grid update, grid to particle), measured side by side in one run.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>

#include "apps/mpm/scene.hpp"
#include "apps/mpm/simulation.hpp"
#include "memory/device_resource.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using afem::apps::mpm::Simulation;

/// The default scene with about `particles` particles (2 x 2 per cell in a column covering 9 % of
/// the box), warmed up by a few steps.
struct Fixture {
  afem::memory::Pool pool{afem::memory::device_resource(), {.name = "bench_mpm"}};
  afem::memory::Arena arena{pool, {"step", std::size_t{64} << 20, 0}};
  std::unique_ptr<Simulation<2>> simulation;

  explicit Fixture(std::int64_t particles) {
    afem::apps::mpm::SceneOptions options;
    options.resolution = static_cast<int>(std::lround(std::sqrt(static_cast<double>(particles) / 0.36)));
    simulation = std::make_unique<Simulation<2>>(afem::apps::mpm::make_scene(options), pool, arena);
    for (int s = 0; s < 3; ++s) {
      simulation->step();
    }
  }
};

enum class Part { step, rebin, particle_to_grid, update_grid, grid_to_particle };

/// Runs whole steps and times `part` of each (manual time), reporting particle-steps per second.
void run_part(benchmark::State& state, Part part) {
  Fixture fixture(state.range(0));
  Simulation<2>& simulation = *fixture.simulation;
  using Clock = std::chrono::steady_clock;
  const auto timed = [&](Part which, const std::function<void()>& call, double& seconds) {
    const auto start = Clock::now();
    call();
    if (part == which || part == Part::step) {
      seconds += std::chrono::duration<double>(Clock::now() - start).count();
    }
  };
  for (auto _ : state) {
    double seconds = 0.0;
    timed(
        Part::rebin, [&] { simulation.rebin(); }, seconds);
    timed(
        Part::particle_to_grid, [&] { simulation.particle_to_grid(); }, seconds);
    timed(
        Part::update_grid, [&] { simulation.update_grid(); }, seconds);
    timed(
        Part::grid_to_particle, [&] { simulation.grid_to_particle(); }, seconds);
    fixture.arena.reset();
    state.SetIterationTime(seconds);
  }
  const double particles = simulation.particle_count();
  state.counters["particles"] = particles;
  state.counters["particle_steps_per_s"] = benchmark::Counter(
      particles * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
#if defined(_OPENMP)
  state.counters["threads"] = omp_get_max_threads();
#endif
}

void register_all() {
  const std::pair<const char*, Part> parts[] = {{"step", Part::step},
                                                {"rebin", Part::rebin},
                                                {"particle_to_grid", Part::particle_to_grid},
                                                {"update_grid", Part::update_grid},
                                                {"grid_to_particle", Part::grid_to_particle}};
  for (const auto& [name, part] : parts) {
    benchmark::RegisterBenchmark((std::string("mpm_sand_column_2d/") + name).c_str(),
                                 [part = part](benchmark::State& state) { run_part(state, part); })
        ->Arg(10'000)
        ->Arg(100'000)
        ->Arg(1'000'000)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
