// The MPM step run through the capture cache (StepMode::captured): bitwise the particles of the
// direct step, recaptures when the particle count changes with the pool's memory bounded, release
// of the captured step while its work may be queued, and the incompressible fluid refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "arenafem/apps/mpm/scene.hpp"
#include "arenafem/apps/mpm/setup.hpp"
#include "arenafem/apps/mpm/simulation.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/failing_resource.hpp"
#include "arenafem/memory/ledger.hpp"
#include "arenafem/memory/owned_stream.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/temporary.hpp"
#include "support/backend_test.hpp"

namespace afem::apps::mpm {
namespace {

/// Whether two arrays hold the same bytes (so -0.0 and 0.0 differ, and NaNs compare).
template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

void expect_bitwise_same(const ParticleState& a, const ParticleState& b) {
  EXPECT_TRUE(same_bytes(a.positions, b.positions));
  EXPECT_TRUE(same_bytes(a.velocities, b.velocities));
  EXPECT_TRUE(same_bytes(a.affine, b.affine));
  EXPECT_TRUE(same_bytes(a.deformation, b.deformation));
  EXPECT_TRUE(same_bytes(a.masses, b.masses));
  EXPECT_TRUE(same_bytes(a.materials, b.materials));
}

/// Live bytes the pool's ledger holds under the captured step's labels.
std::size_t capture_bytes(const memory::Pool& pool) {
  std::size_t bytes = 0;
  for (const memory::LedgerEntry& entry : pool.ledger().entries) {
    if (std::string_view(entry.label).starts_with("Mpm.step[")) {
      bytes += entry.live_bytes;
    }
  }
  return bytes;
}

class MpmCaptureTest : public test::BackendTest {
protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    // On CUDA, captures need a stream of their own (not the legacy default stream).
    arena_.reset();
    pool_.reset();
    owned_ = std::make_unique<memory::OwnedStream>(memory::device_resource().device());
    pool_ = std::make_unique<memory::Pool>(
        memory::device_resource(), memory::PoolOptions{.name = "capture", .stream = stream()});
    arena_ = std::make_unique<memory::Arena>(*pool_, memory::ArenaOptions{"step", 1 << 20, 0});
  }
  void TearDown() override {
    BackendTest::TearDown();
    owned_.reset();
  }
  [[nodiscard]] const memory::Stream& stream() const { return owned_->stream(); }

  std::unique_ptr<memory::OwnedStream> owned_;

  /// The particles after `steps` steps of `setup` in `mode`, switching to direct mode after
  /// `switch_after` steps when it is positive (in a fresh pool each time).
  template <int D>
  ParticleState run(const mpm::Setup& setup, StepMode mode, int steps, int switch_after = 0) {
    memory::Pool pool(memory::device_resource(), {.name = "capture_test", .stream = stream()});
    memory::Arena arena(pool, {"step", 1 << 20, 0});
    Simulation<D> simulation(setup, pool, arena);
    simulation.set_step_mode(mode);
    for (int s = 1; s <= steps; ++s) {
      simulation.step();
      if (s == switch_after) {
        simulation.set_step_mode(mode == StepMode::direct ? StepMode::captured : StepMode::direct);
      }
    }
    if (mode == StepMode::captured && switch_after == 0) {
      const CaptureReport report = simulation.capture_report();
      EXPECT_EQ(report.captures, 1U);
      EXPECT_EQ(report.sizing_steps, 2U);
      EXPECT_EQ(report.replays, static_cast<std::uint64_t>(steps - 2));
      EXPECT_GT(report.retained_bytes, 0U);
      EXPECT_EQ(capture_bytes(pool), report.retained_bytes);
    }
    return simulation.particles();
  }
};

mpm::Setup scene(SceneKind kind, int dimension, int resolution, GridBasis basis) {
  return make_scene(
      {.kind = kind, .dimension = dimension, .resolution = resolution, .basis = basis});
}

TEST_F(MpmCaptureTest, CapturedStepsGiveBitwiseTheDirectParticles) {
  if (IsSkipped()) {
    return;
  }
  for (const GridBasis basis : {GridBasis::q1, GridBasis::bspline2}) {
    for (const SceneKind kind : {SceneKind::sand_column, SceneKind::dam_break}) {
      SCOPED_TRACE(to_string(kind) + (basis == GridBasis::q1 ? " q1" : " bspline2"));
      const mpm::Setup setup = scene(kind, 2, 32, basis);
      const ParticleState direct = run<2>(setup, StepMode::direct, 60);
      expect_bitwise_same(run<2>(setup, StepMode::captured, 60), direct);
      // Switching modes within a run, either way, changes nothing either.
      expect_bitwise_same(run<2>(setup, StepMode::captured, 60, 25), direct);
      expect_bitwise_same(run<2>(setup, StepMode::direct, 60, 25), direct);
    }
  }
  const mpm::Setup elastic = scene(SceneKind::elastic_drop, 3, 16, GridBasis::q1);
  expect_bitwise_same(run<3>(elastic, StepMode::captured, 30),
                      run<3>(elastic, StepMode::direct, 30));
}

TEST_F(MpmCaptureTest, OpenFacesAndExternalForcesRunCapturedToo) {
  if (IsSkipped()) {
    return;
  }
  // The dam break's water falls through an open floor: the count changes as it leaves, and each
  // change recaptures.
  mpm::Setup setup = scene(SceneKind::dam_break, 2, 32, GridBasis::q1);
  setup.boundaries[static_cast<std::size_t>(Face::y_low)] = Boundary::open;
  setup.external_forces = true;
  const auto run_mode = [&](StepMode mode, CaptureReport* report) {
    memory::Pool pool(memory::device_resource(), {.name = "capture_test", .stream = stream()});
    memory::Arena arena(pool, {"step", 1 << 20, 0});
    Simulation<2> simulation(setup, pool, arena);
    simulation.set_step_mode(mode);
    // A push along +x on every particle.
    const ParticleViews views = simulation.particle_views();
    std::vector<double> forces(views.forces.size());
    for (std::size_t i = 0; i < forces.size(); i += 2) {
      forces[i] = 1.0e-3;
    }
    memory::copy_to_device(views.forces, std::span<const double>(forces), pool.stream());
    pool.stream().synchronize();
    for (int s = 0; s < 200; ++s) {
      simulation.step();
    }
    EXPECT_GT(simulation.particles_left(), 0);
    EXPECT_GT(simulation.particle_count(), 0);  // some left, some still there to compare
    if (report != nullptr) {
      *report = simulation.capture_report();
    }
    return simulation.particles();
  };
  CaptureReport report;
  const ParticleState captured = run_mode(StepMode::captured, &report);
  expect_bitwise_same(captured, run_mode(StepMode::direct, nullptr));
  EXPECT_GT(report.recaptures, 0U);
  EXPECT_EQ(report.captures, report.recaptures + 1);
}

TEST_F(MpmCaptureTest, HundredRecapturesInTenThousandStepsKeepTheMemoryFlat) {
  if (IsSkipped()) {
    return;
  }
  // Every 100 steps a block is added and, 100 steps later, removed again: the count changes 100
  // times, and each change releases the captured step and captures it anew.
  mpm::Setup setup = scene(SceneKind::sand_column, 2, 16, GridBasis::q1);
  const auto base = static_cast<std::int32_t>(setup.particles.count());
  ParticleBatch extra;
  for (int i = 0; i < 8; ++i) {
    extra.positions.insert(extra.positions.end(), {0.7 + 0.01 * i, 0.6});
    extra.velocities.insert(extra.velocities.end(), {0.0, 0.0});
    extra.volumes.push_back(1.0e-4);
  }
  setup.capacity = base + extra.count();
  memory::Pool& pool = *pool_;
  memory::Arena& arena = *arena_;
  Simulation<2> simulation(setup, pool, arena);
  simulation.set_step_mode(StepMode::captured);
  auto remove = memory::borrow_temporary<std::uint8_t>(
      pool, static_cast<std::size_t>(setup.capacity), "test.remove");
  std::vector<std::uint8_t> flags(static_cast<std::size_t>(setup.capacity), 0);
  for (std::size_t p = static_cast<std::size_t>(base); p < flags.size(); ++p) {
    flags[p] = 1;
  }
  memory::copy_to_device(remove.view(), std::span<const std::uint8_t>(flags), pool.stream());
  pool.stream().synchronize();

  std::size_t reserved_after_warmup = 0;
  std::uint64_t upstream_after_warmup = 0;
  std::size_t retained_at_recapture = 0;
  std::uint64_t last_captures = 0;
  for (int s = 1; s <= 10000; ++s) {
    if (s % 100 == 0) {
      if (simulation.particle_count() == base) {
        simulation.add_particles(extra);
      } else {
        simulation.remove_particles(remove.view().subview(0, flags.size()));
      }
    }
    simulation.step();
    const CaptureReport report = simulation.capture_report();
    if (report.captures != last_captures) {
      last_captures = report.captures;
      // The old capture is released before the new one: the ledger holds one capture's bytes,
      // the same after every recapture once both counts were sized.
      EXPECT_EQ(capture_bytes(pool), report.retained_bytes);
      if (s > 300) {
        EXPECT_EQ(report.retained_bytes, retained_at_recapture) << "step " << s;
      }
      retained_at_recapture = report.retained_bytes;
    }
    if (s == 300) {
      reserved_after_warmup = pool.stats().reserved_bytes;
      upstream_after_warmup = pool.stats().upstream_allocations;
    } else if (s > 300) {
      ASSERT_EQ(pool.stats().reserved_bytes, reserved_after_warmup) << "step " << s;
    }
  }
  const CaptureReport report = simulation.capture_report();
  EXPECT_EQ(report.recaptures, 100U);
  EXPECT_EQ(report.sizing_steps, 3U);  // two for the first count, one for the larger one
  EXPECT_EQ(report.replays, 10000U - report.sizing_steps);
  EXPECT_EQ(pool.stats().upstream_allocations, upstream_after_warmup);
}

TEST_F(MpmCaptureTest, ChangesAndDirectPartsBetweenCapturedStepsStayBitwise) {
  if (IsSkipped()) {
    return;
  }
  // The same sequence of steps, particle changes, a step run part by part and a restore, in
  // both modes; a replay of a stale recording (another count, another binning) would differ or
  // throw.
  const mpm::Setup setup = [] {
    mpm::Setup s = scene(SceneKind::dam_break, 2, 32, GridBasis::q1);
    s.capacity = s.particles.count() + 4;
    return s;
  }();
  ParticleBatch drop;
  drop.positions = {0.6, 0.7, 0.62, 0.7};
  drop.velocities = {0.0, -1.0, 0.0, -1.0};
  drop.volumes = {1e-4, 1e-4};
  const auto run_sequence = [&](StepMode mode) {
    memory::Pool pool(memory::device_resource(), {.name = "capture_test", .stream = stream()});
    memory::Arena arena(pool, {"step", 1 << 20, 0});
    Simulation<2> simulation(setup, pool, arena);
    simulation.set_step_mode(mode);
    const auto steps = [&](int n) {
      for (int s = 0; s < n; ++s) {
        simulation.step();
      }
    };
    steps(6);
    simulation.add_particles(drop);
    steps(6);
    simulation.rebin();  // a step run part by part: direct whatever the mode
    simulation.particle_to_grid();
    simulation.update_grid();
    simulation.grid_to_particle();
    simulation.step_arena().reset();
    steps(6);
    const std::string file = (std::filesystem::temp_directory_path() /
                              ("afem_capture_" + std::to_string(::getpid()) + ".afem"))
                                 .string();
    simulation.save_checkpoint(file);
    steps(4);
    simulation.load_checkpoint(file);  // back 4 steps: the same count, other particles
    std::filesystem::remove(file);
    steps(6);
    return simulation.particles();
  };
  expect_bitwise_same(run_sequence(StepMode::captured), run_sequence(StepMode::direct));
}

TEST_F(MpmCaptureTest, TheCaptureStepTakesNothingFromUpstreamButItsScratch) {
  if (IsSkipped()) {
    return;
  }
  // A CUDA graph cannot hold an upstream allocation: the sizing steps leave the binning's
  // buffers in the pool's cache, and the step that captures takes from upstream only the
  // capture's own scratch chunk, reserved before the capture starts.
  const mpm::Setup setup = scene(SceneKind::sand_column, 2, 32, GridBasis::q1);
  memory::Pool& pool = *pool_;
  Simulation<2> simulation(setup, pool, *arena_);
  simulation.set_step_mode(StepMode::captured);
  simulation.step();
  simulation.step();
  ASSERT_EQ(simulation.capture_report().sizing_steps, 2U);
  ASSERT_EQ(simulation.capture_report().captures, 0U);
  const std::uint64_t before = pool.stats().upstream_allocations;
  simulation.step();
  ASSERT_EQ(simulation.capture_report().captures, 1U);
  EXPECT_LE(pool.stats().upstream_allocations - before, 1U);
  const std::uint64_t captured = pool.stats().upstream_allocations;
  for (int s = 0; s < 5; ++s) {
    simulation.step();
  }
  EXPECT_EQ(pool.stats().upstream_allocations, captured);
}

TEST_F(MpmCaptureTest, ACaptureThatFailsKeepsNothingAndTheNextStepsRecover) {
  if (IsSkipped()) {
    return;
  }
  const mpm::Setup setup = scene(SceneKind::dam_break, 2, 32, GridBasis::q1);
  const ParticleState direct = run<2>(setup, StepMode::direct, 20);
  memory::FailingResource failing(memory::device_resource());
  memory::Pool pool(failing, {.name = "capture_test", .stream = stream()});
  memory::Arena arena(pool, {"step", 1 << 20, 0});
  Simulation<2> simulation(setup, pool, arena);
  simulation.set_step_mode(StepMode::captured);
  simulation.step();
  simulation.step();
  // With the pool's cache handed back, the capture's scratch chunk is the next upstream
  // allocation: it fails (and so does the pool's retry), before anything is recorded or run.
  pool.trim();
  failing.set_plan({.fail_at = failing.allocations() + 1, .persistent = true});
  EXPECT_THROW(simulation.step(), OutOfMemory);
  failing.set_plan({});
  EXPECT_EQ(simulation.steps_taken(), 2);
  EXPECT_EQ(simulation.capture_report().retained_bytes, 0U);
  EXPECT_EQ(capture_bytes(pool), 0U);
  EXPECT_EQ(arena.stats().live_handles, 0U);
  for (int s = 2; s < 20; ++s) {
    simulation.step();
  }
  EXPECT_EQ(simulation.capture_report().captures, 1U);
  expect_bitwise_same(simulation.particles(), direct);
}

TEST_F(MpmCaptureTest, ReleasingTheCapturedStepWaitsForItsWork) {
  if (IsSkipped()) {
    return;
  }
  const mpm::Setup setup = scene(SceneKind::dam_break, 2, 32, GridBasis::q1);
  const ParticleState direct = run<2>(setup, StepMode::direct, 40);
  memory::Pool& pool = *pool_;
  {
    Simulation<2> simulation(setup, pool, *arena_);
    simulation.set_step_mode(StepMode::captured);
    for (int s = 0; s < 40; ++s) {
      simulation.step();  // on a GPU the replays are queued, not finished, when step() returns
    }
    EXPECT_GT(capture_bytes(pool), 0U);
    // Leaving captured mode releases the capture while its last replay may still be queued.
    simulation.set_step_mode(StepMode::direct);
    EXPECT_EQ(capture_bytes(pool), 0U);
    EXPECT_EQ(simulation.capture_report().retained_bytes, 0U);
    expect_bitwise_same(simulation.particles(), direct);
    // Destroying a simulation with a capture queued releases it too.
    simulation.set_step_mode(StepMode::captured);
    for (int s = 0; s < 3; ++s) {  // two sizing steps, then the capture
      simulation.step();
    }
    EXPECT_GT(capture_bytes(pool), 0U);
  }
  EXPECT_EQ(capture_bytes(pool), 0U);
}

TEST_F(MpmCaptureTest, TheIncompressibleFluidIsRefusedAndStaysDirect) {
  if (IsSkipped()) {
    return;
  }
  const mpm::Setup setup = make_scene(
      {.kind = SceneKind::dam_break, .dimension = 2, .resolution = 16, .incompressible = true});
  Simulation<2> simulation(setup, *pool_, *arena_);
  try {
    simulation.set_step_mode(StepMode::captured);
    FAIL() << "captured mode was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("incompressible fluid"), std::string::npos);
  }
  EXPECT_EQ(simulation.step_mode(), StepMode::direct);
  simulation.step();
  EXPECT_EQ(simulation.capture_report().captures, 0U);
}

}  // namespace
}  // namespace afem::apps::mpm
