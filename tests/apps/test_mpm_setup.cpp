// The MPM solver as a library: Setup and its checks, several materials, gravity and boundaries per
// face, particles added, removed and pushed between steps, and checkpoint/restart.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "arenafem/apps/mpm/checkpoint.hpp"
#include "arenafem/apps/mpm/scene.hpp"
#include "arenafem/apps/mpm/setup.hpp"
#include "arenafem/apps/mpm/simulation.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/temporary.hpp"
#include "support/backend_test.hpp"

namespace afem::apps::mpm {
namespace {

/// A block of particles, 2 x 2 per cell, filling [lower, upper] of a 2D setup, at rest.
ParticleBatch block(const mpm::Setup& setup, std::array<double, 2> lower,
                    std::array<double, 2> upper, std::int32_t material = 0) {
  ParticleBatch batch;
  const double spacing = setup.cell_size() / 2.0;
  for (double y = lower[1] + 0.5 * spacing; y < upper[1]; y += spacing) {
    for (double x = lower[0] + 0.5 * spacing; x < upper[0]; x += spacing) {
      batch.positions.insert(batch.positions.end(), {x, y});
      batch.velocities.insert(batch.velocities.end(), {0.0, 0.0});
      batch.volumes.push_back(spacing * spacing);
      batch.materials.push_back(material);
    }
  }
  return batch;
}

/// Sand on the left, an elastic block on the right, in a 2 m x 1 m box of 32 x 16 cells.
mpm::Setup two_materials() {
  mpm::Setup setup;
  setup.extent = {2.0, 1.0, 1.0};
  setup.resolution = 32;
  setup.materials = {Material{}, Material{.kind = MaterialKind::elastic,
                                          .density = 1000.0,
                                          .youngs_modulus = 5.0e5,
                                          .poisson_ratio = 0.3}};
  setup.particles = block(setup, {0.3, 0.2}, {0.7, 0.5}, 0);
  const ParticleBatch elastic = block(setup, {1.2, 0.3}, {1.5, 0.6}, 1);
  setup.particles.positions.insert(setup.particles.positions.end(), elastic.positions.begin(),
                                   elastic.positions.end());
  setup.particles.velocities.insert(setup.particles.velocities.end(), elastic.velocities.begin(),
                                    elastic.velocities.end());
  setup.particles.volumes.insert(setup.particles.volumes.end(), elastic.volumes.begin(),
                                 elastic.volumes.end());
  setup.particles.materials.insert(setup.particles.materials.end(), elastic.materials.begin(),
                                   elastic.materials.end());
  return setup;
}

/// The message of the afem::Error that `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

double total(const std::vector<double>& values) {
  double sum = 0.0;
  for (const double v : values) {
    sum += v;
  }
  return sum;
}

void expect_same_state(const ParticleState& a, const ParticleState& b) {
  EXPECT_EQ(a.positions, b.positions);
  EXPECT_EQ(a.velocities, b.velocities);
  EXPECT_EQ(a.affine, b.affine);
  EXPECT_EQ(a.deformation, b.deformation);
  EXPECT_EQ(a.masses, b.masses);
  EXPECT_EQ(a.materials, b.materials);
}

class MpmSetupTest : public test::BackendTest {
protected:
  void SetUp() override {
    BackendTest::SetUp();
    directory_ = std::filesystem::temp_directory_path() /
                 ("afem_mpm_setup_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override {
    std::filesystem::remove_all(directory_);
    BackendTest::TearDown();
  }
  [[nodiscard]] std::string file(const char* name) const { return (directory_ / name).string(); }

  std::filesystem::path directory_;
};

TEST(MpmSetup, EveryBadFieldIsNamed) {
  const mpm::Setup good = two_materials();
  EXPECT_EQ(error_of([&] { validate_setup(good); }), "");
  const auto refused = [&](auto change, const char* field) {
    mpm::Setup setup = good;
    change(setup);
    const std::string message = error_of([&] { validate_setup(setup); });
    EXPECT_NE(message.find(field), std::string::npos)
        << "expected " << field << ", got '" << message << "'";
  };
  refused([](mpm::Setup& s) { s.dimension = 4; }, "Setup.dimension");
  refused([](mpm::Setup& s) { s.extent[1] = 1.01; }, "Setup.extent[1]");
  refused([](mpm::Setup& s) { s.extent[0] = -1.0; }, "Setup.extent[0]");
  refused([](mpm::Setup& s) { s.resolution = 2; }, "Setup.resolution");
  refused([](mpm::Setup& s) { s.gravity[0] = std::nan(""); }, "Setup.gravity[0]");
  refused([](mpm::Setup& s) { s.boundary_cells = 0; }, "Setup.boundary_cells");
  refused([](mpm::Setup& s) { s.materials.clear(); }, "Setup.materials");
  refused([](mpm::Setup& s) { s.materials[1].density = 0.0; }, "Setup.materials[1].density");
  refused([](mpm::Setup& s) { s.materials[0].poisson_ratio = 0.5; },
          "Setup.materials[0].poisson_ratio");
  refused([](mpm::Setup& s) { s.materials[0].kind = MaterialKind::incompressible_fluid; },
          "an incompressible fluid is the only material");
  refused(
      [](mpm::Setup& s) {
        s.materials = {Material{.kind = MaterialKind::incompressible_fluid, .density = 1000.0}};
        s.particles.materials.assign(s.particles.volumes.size(), 0);
        s.boundaries[static_cast<std::size_t>(Face::y_high)] = Boundary::open;
      },
      "Setup.boundaries[3]");
  refused([](mpm::Setup& s) { s.dt = -1.0; }, "Setup.dt");
  refused([](mpm::Setup& s) { s.cfl = 0.0; }, "Setup.cfl");
  refused([](mpm::Setup& s) { s.capacity = 3; }, "Setup.capacity");
  refused([](mpm::Setup& s) { s.particles.positions[2] = 2.5; }, "Setup.particles.positions[1]");
  refused([](mpm::Setup& s) { s.particles.materials[7] = 2; }, "Setup.particles.materials[7]");
  refused([](mpm::Setup& s) { s.particles.volumes[4] = 0.0; }, "Setup.particles.volumes[4]");
  refused([](mpm::Setup& s) { s.particles.velocities.pop_back(); }, "Setup.particles.velocities");
  refused([](mpm::Setup& s) { s.particles.volume_ratios = {1.0}; },
          "Setup.particles.volume_ratios");
}

TEST_F(MpmSetupTest, TheConstructorRefusesABadSetupAndTakesNothing) {
  mpm::Setup setup = two_materials();
  setup.particles.materials[0] = 5;
  const std::size_t live = pool_->stats().live_bytes;
  const std::string message = error_of([&] { Simulation<2>(setup, *pool_, *arena_); });
  EXPECT_NE(message.find("Setup.particles.materials[0]"), std::string::npos) << message;
  EXPECT_EQ(pool_->stats().live_bytes, live);
  EXPECT_NE(error_of([&] {
              Simulation<3>(two_materials(), *pool_, *arena_);
            }).find("Setup.dimension is 2"),
            std::string::npos);
}

TEST_F(MpmSetupTest, EachParticleTakesItsMaterialsDensityAndTheGridMassIsConserved) {
  const mpm::Setup setup = two_materials();
  Simulation<2> simulation(setup, *pool_, *arena_);
  const ParticleState state = simulation.particles();
  double expected = 0.0;
  for (std::size_t p = 0; p < state.masses.size(); ++p) {
    const double density =
        setup.materials[static_cast<std::size_t>(setup.particles.materials[p])].density;
    EXPECT_EQ(state.masses[p], density * setup.particles.volumes[p]) << "particle " << p;
    expected += state.masses[p];
  }
  simulation.rebin();
  simulation.particle_to_grid();
  EXPECT_NEAR(total(simulation.grid_state().masses), expected, 1e-12 * expected);
  EXPECT_EQ(state.materials, setup.particles.materials);
}

TEST_F(MpmSetupTest, TwoMaterialsBehaveAsTheirOwn) {
  // Both fall onto a sticky floor; the sand spreads into a pile, the elastic block stays a block.
  mpm::Setup setup = two_materials();
  setup.boundaries[static_cast<std::size_t>(Face::y_low)] = Boundary::sticky;
  Simulation<2> simulation(setup, *pool_, *arena_);
  for (int s = 0; s < 600; ++s) {
    simulation.step();
  }
  // The width along x of each material's particles.
  const auto widths = [](const std::vector<double>& positions,
                         const std::vector<std::int32_t>& materials) {
    std::array<double, 2> low{1e9, 1e9};
    std::array<double, 2> high{-1e9, -1e9};
    for (std::size_t p = 0; p < materials.size(); ++p) {
      const auto m = static_cast<std::size_t>(materials[p]);
      low[m] = std::min(low[m], positions[2 * p]);
      high[m] = std::max(high[m], positions[2 * p]);
    }
    return std::array<double, 2>{high[0] - low[0], high[1] - low[1]};
  };
  const auto before = widths(setup.particles.positions, setup.particles.materials);
  const ParticleState state = simulation.particles();
  const auto after = widths(state.positions, state.materials);
  EXPECT_GT(after[0], 1.2 * before[0]) << "the sand column did not spread";
  EXPECT_NEAR(after[1], before[1], 0.1 * before[1]) << "the elastic block did not keep its width";
}

TEST_F(MpmSetupTest, GravityFollowsItsVector) {
  // A free elastic block in gravity along +x, no faces closed where it goes: it falls along x at
  // g t and keeps its y.
  mpm::Setup setup;
  setup.resolution = 32;
  setup.gravity = {3.0, 0.0, 0.0};
  setup.boundaries.fill(Boundary::open);
  setup.materials = {Material{.kind = MaterialKind::elastic, .density = 1000.0}};
  setup.particles = block(setup, {0.2, 0.4}, {0.4, 0.6});
  Simulation<2> simulation(setup, *pool_, *arena_);
  for (int s = 0; s < 50; ++s) {
    simulation.step();
  }
  const ParticleState state = simulation.particles();
  const double t = simulation.time();
  for (std::size_t p = 0; p < state.masses.size(); ++p) {
    EXPECT_NEAR(state.velocities[2 * p], 3.0 * t, 1e-9) << "particle " << p;
    EXPECT_NEAR(state.velocities[2 * p + 1], 0.0, 1e-9) << "particle " << p;
  }
}

TEST_F(MpmSetupTest, SlipStickyAndOpenFloors) {
  // An elastic block thrown sideways and down onto the floor: a slip floor keeps it sliding, a
  // sticky floor stops it, an open floor lets it leave, and it is removed.
  const auto run = [&](Boundary floor) {
    mpm::Setup setup;
    setup.resolution = 32;
    setup.materials = {Material{.kind = MaterialKind::elastic, .density = 1000.0}};
    setup.boundaries[static_cast<std::size_t>(Face::y_low)] = floor;
    setup.particles = block(setup, {0.3, 0.1}, {0.5, 0.25});
    for (std::size_t p = 0; p < setup.particles.volumes.size(); ++p) {
      setup.particles.velocities[2 * p] = 1.0;
      setup.particles.velocities[2 * p + 1] = -2.0;
    }
    Simulation<2> simulation(setup, *pool_, *arena_);
    for (int s = 0; s < 400; ++s) {
      simulation.step();
    }
    return std::pair{simulation.particles(), simulation.particles_left()};
  };
  const auto [slip, slip_left] = run(Boundary::slip);
  const auto [sticky, sticky_left] = run(Boundary::sticky);
  const auto [open, open_left] = run(Boundary::open);
  const auto mean_x_velocity = [](const ParticleState& s) {
    double sum = 0.0;
    for (std::size_t p = 0; p < s.masses.size(); ++p) {
      sum += s.velocities[2 * p];
    }
    return s.masses.empty() ? 0.0 : sum / static_cast<double>(s.masses.size());
  };
  EXPECT_EQ(slip_left, 0);
  EXPECT_EQ(sticky_left, 0);
  EXPECT_GT(mean_x_velocity(slip), 0.5);
  EXPECT_LT(std::abs(mean_x_velocity(sticky)), 0.5 * mean_x_velocity(slip));
  EXPECT_EQ(open.masses.size() + static_cast<std::size_t>(open_left), slip.masses.size());
  EXPECT_TRUE(open.masses.empty()) << open.masses.size() << " particles stayed";
}

TEST_F(MpmSetupTest, ParticlesComeUpToTheCapacityAndGoInOrder) {
  mpm::Setup setup;
  setup.resolution = 32;
  setup.gravity = {0.0, 0.0, 0.0};
  setup.materials = {Material{}, Material{.kind = MaterialKind::elastic, .density = 1000.0}};
  setup.particles = block(setup, {0.3, 0.3}, {0.5, 0.5});
  ParticleBatch batch = block(setup, {0.6, 0.6}, {0.7, 0.7}, 1);
  const std::int64_t added_count = batch.count();
  ASSERT_GT(added_count, 10);
  batch.volume_ratios.assign(batch.volumes.size(), 0.125);
  const std::int64_t first = setup.particles.count();
  setup.capacity = first + added_count + 10;
  Simulation<2> simulation(setup, *pool_, *arena_);
  auto device_flags = memory::borrow_temporary<std::uint8_t>(
      *pool_, static_cast<std::size_t>(first + added_count), "test.flags");
  simulation.step();  // the warm-up: a rebuild holds the old and the new buffers at once
  simulation.step();
  const std::size_t reserved = pool_->stats().reserved_bytes;
  EXPECT_EQ(simulation.capacity(), setup.capacity);

  simulation.add_particles(batch);
  EXPECT_EQ(simulation.particle_count(), first + added_count);
  const ParticleState added = simulation.particles();
  const std::size_t last = added.masses.size() - 1;
  EXPECT_EQ(added.materials[last], 1);
  EXPECT_EQ(added.deformation[4 * last], std::pow(0.125, 0.5));  // J^(1/D) I
  EXPECT_EQ(added.deformation[4 * last + 1], 0.0);
  EXPECT_EQ(added.positions[2 * last], batch.positions[batch.positions.size() - 2]);

  // Past the capacity: refused, nothing changed.
  const std::string message = error_of([&] { simulation.add_particles(batch); });
  EXPECT_NE(message.find("exceed the capacity of " + std::to_string(setup.capacity)),
            std::string::npos)
      << message;
  ParticleBatch bad = batch;
  bad.materials[3] = 7;
  EXPECT_NE(error_of([&] { simulation.add_particles(bad); }).find("materials[3]"),
            std::string::npos);
  expect_same_state(simulation.particles(), added);

  // Remove every other particle: the others keep their order.
  const auto n = static_cast<std::size_t>(simulation.particle_count());
  std::vector<std::uint8_t> flags(n, 0);
  for (std::size_t p = 0; p < n; p += 2) {
    flags[p] = 1;
  }
  memory::copy_to_device(device_flags.view(), std::span<const std::uint8_t>(flags),
                         pool_->stream());
  ASSERT_EQ(device_flags.size(), n);
  EXPECT_THROW(simulation.remove_particles(device_flags.view().subview(0, n - 1)), Error);
  simulation.remove_particles(device_flags.view());
  const ParticleState kept = simulation.particles();
  ASSERT_EQ(kept.masses.size(), n / 2);
  for (std::size_t k = 0; k < kept.masses.size(); ++k) {
    EXPECT_EQ(kept.positions[2 * k], added.positions[2 * (2 * k + 1)]);
    EXPECT_EQ(kept.materials[k], added.materials[2 * k + 1]);
    EXPECT_EQ(kept.deformation[4 * k], added.deformation[4 * (2 * k + 1)]);
  }
  // The room freed is used again, and nothing was taken from the system for any of it.
  simulation.add_particles(batch);
  simulation.step();
  EXPECT_EQ(pool_->stats().reserved_bytes, reserved) << pool_->ledger().table();
}

// A particle at a non-finite position (a run that blew up) stops the next step with an error
// that says so, whether the box is closed or a face is open (where it would otherwise count as
// having left).
TEST_F(MpmSetupTest, ARunThatBlewUpIsNamed) {
  for (const Boundary floor : {Boundary::slip, Boundary::open}) {
    mpm::Setup setup;
    setup.resolution = 32;
    setup.materials = {Material{.kind = MaterialKind::elastic, .density = 1000.0}};
    setup.boundaries[static_cast<std::size_t>(Face::y_low)] = floor;
    setup.particles = block(setup, {0.4, 0.4}, {0.6, 0.6});
    Simulation<2> simulation(setup, *pool_, *arena_);
    simulation.step();
    const ParticleViews views = simulation.particle_views();
    const std::vector<double> nan = {std::numeric_limits<double>::quiet_NaN(), 0.5};
    memory::copy_to_device(views.positions.subview(6, 2), std::span<const double>(nan),
                           pool_->stream());
    const std::string message = error_of([&] { simulation.step(); });
    EXPECT_NE(message.find("blown up"), std::string::npos) << message;
    EXPECT_NE(message.find("1 particle "), std::string::npos) << message;
    EXPECT_NE(message.find("step 1"), std::string::npos) << message;
    EXPECT_EQ(simulation.particles_left(), 0);
  }
}

TEST_F(MpmSetupTest, AnExternalForceAddsItsImpulse) {
  // No gravity and an unstressed elastic block: the total momentum grows by the total force
  // times the time.
  mpm::Setup setup;
  setup.resolution = 32;
  setup.gravity = {0.0, 0.0, 0.0};
  setup.boundaries.fill(Boundary::open);
  setup.materials = {Material{.kind = MaterialKind::elastic, .density = 1000.0}};
  setup.external_forces = true;
  setup.particles = block(setup, {0.4, 0.4}, {0.6, 0.6});
  Simulation<2> simulation(setup, *pool_, *arena_);
  const ParticleViews views = simulation.particle_views();
  ASSERT_EQ(views.forces.size(), views.positions.size());
  const auto n = static_cast<std::size_t>(simulation.particle_count());
  std::vector<double> forces(2 * n);
  for (std::size_t p = 0; p < n; ++p) {
    forces[2 * p] = 0.01;
    forces[2 * p + 1] = -0.02;
  }
  memory::copy_to_device(views.forces, std::span<const double>(forces), pool_->stream());
  const int steps = 20;
  for (int s = 0; s < steps; ++s) {
    simulation.step();
  }
  const ParticleState state = simulation.particles();
  double px = 0.0;
  double py = 0.0;
  for (std::size_t p = 0; p < n; ++p) {
    px += state.masses[p] * state.velocities[2 * p];
    py += state.masses[p] * state.velocities[2 * p + 1];
  }
  const double impulse = static_cast<double>(n) * simulation.time();
  EXPECT_NEAR(px, 0.01 * impulse, 1e-9 * impulse);
  EXPECT_NEAR(py, -0.02 * impulse, 1e-9 * impulse);
}

/// Runs `first` steps, checkpoints, restores into a new simulation in another pool and runs
/// `second` more; expects the state of `first + second` uninterrupted steps, bitwise.
/// Every 50 steps, when there is room, `emitted` (if not empty) is added.
template <int D>
void expect_a_resumed_run_is_the_same(const mpm::Setup& setup, int first, int second,
                                      const std::string& path, const ParticleBatch& emitted = {}) {
  const auto advance = [&](Simulation<D>& simulation, int steps) {
    for (int s = 0; s < steps; ++s) {
      if (emitted.count() > 0 && simulation.steps_taken() % 50 == 0 &&
          simulation.particle_count() + emitted.count() <= simulation.capacity()) {
        simulation.add_particles(emitted);
      }
      simulation.step();
    }
  };
  memory::Pool pool_a(memory::device_resource(), {.name = "uninterrupted"});
  memory::Arena arena_a(pool_a, {"step", 1 << 20, 0});
  Simulation<D> uninterrupted(setup, pool_a, arena_a);
  advance(uninterrupted, first + second);

  memory::Pool pool_b(memory::device_resource(), {.name = "first"});
  memory::Arena arena_b(pool_b, {"step", 1 << 20, 0});
  Simulation<D> before(setup, pool_b, arena_b);
  advance(before, first);
  before.save_checkpoint(path);

  memory::Pool pool_c(memory::device_resource(), {.name = "resumed"});
  memory::Arena arena_c(pool_c, {"step", 1 << 20, 0});
  const Checkpoint saved = read_checkpoint(path);
  Simulation<D> resumed(saved.setup, pool_c, arena_c);
  resumed.restore(saved);
  EXPECT_EQ(resumed.steps_taken(), first);
  advance(resumed, second);
  EXPECT_EQ(resumed.steps_taken(), first + second);
  EXPECT_EQ(resumed.particle_count(), uninterrupted.particle_count());
  EXPECT_EQ(resumed.particles_left(), uninterrupted.particles_left());
  EXPECT_EQ(resumed.time(), uninterrupted.time());
  expect_same_state(resumed.particles(), uninterrupted.particles());
}

TEST_F(MpmSetupTest, AResumedRunIsBitwiseTheUninterruptedOne) {
  expect_a_resumed_run_is_the_same<2>(two_materials(), 100, 100, file("two.afem"));
  SceneOptions options;
  options.kind = SceneKind::dam_break;
  options.resolution = 24;
  options.incompressible = true;  // the pressure's warm start is part of the state
  expect_a_resumed_run_is_the_same<2>(make_scene(options), 30, 30, file("water.afem"));
  options.pressure_preconditioner = PressurePreconditioner::jacobi;  // saved with the setup
  const mpm::Setup jacobi = make_scene(options);
  expect_a_resumed_run_is_the_same<2>(jacobi, 30, 30, file("water_jacobi.afem"));
  EXPECT_EQ(read_checkpoint(file("water_jacobi.afem")).setup.pressure_preconditioner,
            PressurePreconditioner::jacobi);
  options = {};
  options.dimension = 3;
  options.resolution = 16;
  options.basis = GridBasis::bspline2;
  expect_a_resumed_run_is_the_same<3>(make_scene(options), 10, 10, file("sand3.afem"));
  // A ball thrown down through an open floor while blocks are emitted above it.
  options = {};
  options.kind = SceneKind::elastic_drop;
  options.resolution = 32;
  mpm::Setup draining = make_scene(options);
  draining.boundaries[static_cast<std::size_t>(Face::y_low)] = Boundary::open;
  draining.capacity = draining.particles.count() * 2;
  for (std::size_t p = 0; p < draining.particles.volumes.size(); ++p) {
    draining.particles.velocities[2 * p + 1] = -3.0;
  }
  ParticleBatch emitted = block(draining, {0.45, 0.75}, {0.55, 0.8});
  for (std::size_t p = 0; p < emitted.volumes.size(); ++p) {
    emitted.velocities[2 * p + 1] = -3.0;
  }
  expect_a_resumed_run_is_the_same<2>(draining, 150, 150, file("drain.afem"), emitted);
}

TEST_F(MpmSetupTest, ABadCheckpointIsRefusedAndChangesNothing) {
  const mpm::Setup setup = two_materials();
  Simulation<2> simulation(setup, *pool_, *arena_);
  for (int s = 0; s < 5; ++s) {
    simulation.step();
  }
  const std::string path = file("good.afem");
  simulation.save_checkpoint(path);
  simulation.step();
  const ParticleState state = simulation.particles();
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  const auto write = [&](const char* name, const std::vector<char>& content) {
    std::ofstream(file(name), std::ios::binary)
        .write(content.data(), static_cast<std::streamsize>(content.size()));
    return file(name);
  };
  const auto refused = [&](const std::string& bad, const char* expected) {
    const std::string message = error_of([&] { simulation.load_checkpoint(bad); });
    EXPECT_NE(message.find(expected), std::string::npos)
        << "expected '" << expected << "', got '" << message << "'";
    EXPECT_NE(message.find(bad), std::string::npos) << "the file is not named: " << message;
    EXPECT_EQ(simulation.steps_taken(), 6);
    expect_same_state(simulation.particles(), state);
  };
  refused(file("missing.afem"), "cannot open");
  refused(write("truncated.afem", std::vector<char>(bytes.begin(), bytes.end() - 100)),
          "truncated");
  std::vector<char> corrupted = bytes;
  corrupted[bytes.size() / 2] ^= 0x10;
  refused(write("corrupted.afem", corrupted), "checksum");
  std::vector<char> version = bytes;
  version[8] = 7;
  refused(write("version.afem", version), "format version 7");
  refused(write("other.afem", {'n', 'o', 't', ' ', 'o', 'u', 'r', 's', '!'}), "AFEMCKPT");
  // A sound file (its checksum recomputed) with a pressure preconditioner code that is not one:
  // the byte after the setup's cfl, 106 bytes into the payload at 24.
  std::vector<char> preconditioner = bytes;
  preconditioner[24 + 106] = 2;
  std::uint64_t hash = 14695981039346656037ULL;
  for (std::size_t i = 0; i + 8 < preconditioner.size(); ++i) {
    hash ^= static_cast<unsigned char>(preconditioner[i]);
    hash *= 1099511628211ULL;
  }
  for (std::size_t b = 0; b < 8; ++b) {
    preconditioner[preconditioner.size() - 8 + b] = static_cast<char>((hash >> (8 * b)) & 0xFFU);
  }
  refused(write("preconditioner.afem", preconditioner),
          "pressure preconditioner 2, expected 0 or 1");

  // A checkpoint of another setup (3D, another grid) is refused by restore().
  SceneOptions options;
  options.dimension = 3;
  options.resolution = 16;
  memory::Arena other_arena(*pool_, {"other", 1 << 20, 0});
  Simulation<3> other(make_scene(options), *pool_, other_arena);
  other.save_checkpoint(file("3d.afem"));
  const std::string message = error_of([&] { simulation.load_checkpoint(file("3d.afem")); });
  EXPECT_NE(message.find("Setup.dimension differs"), std::string::npos) << message;
  expect_same_state(simulation.particles(), state);

  // A checkpoint whose file is sound but whose particles are not: refused by restore().
  Checkpoint outside = read_checkpoint(path);
  outside.positions[0] = 5.0;  // the box is closed: the particle could not be there
  EXPECT_NE(error_of([&] { simulation.restore(outside); }).find("lies outside the grid"),
            std::string::npos);
  Checkpoint weightless = read_checkpoint(path);
  weightless.volumes[3] = 0.0;
  EXPECT_NE(error_of([&] { simulation.restore(weightless); }).find("particle 3 has volume 0"),
            std::string::npos);
  expect_same_state(simulation.particles(), state);

  // The good one loads.
  simulation.load_checkpoint(path);
  EXPECT_EQ(simulation.steps_taken(), 5);
}

/// A border sum that records what a step hands it and adds nothing (or throws, when asked).
class RecordingBorderSum final : public BorderSum {
public:
  void add_shared(memory::ArrayView<double> mass, memory::ArrayView<double> momentum) override {
    if (fail) {
      throw Error("border sum: the other process left");
    }
    calls.emplace_back(mass.size(), momentum.size());
  }
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  bool fail = false;
};

TEST_F(MpmSetupTest, ABorderSumIsCalledTwicePerStepWithTheWholeGrid) {
  const mpm::Setup setup = two_materials();
  Simulation<2> plain(setup, *pool_, *arena_);
  Simulation<2> summed(setup, *pool_, *arena_);
  RecordingBorderSum sum;
  summed.set_border_sum(&sum);
  for (int s = 0; s < 5; ++s) {
    plain.step();
    summed.step();
  }
  // Q1 nodes of 32 x 16 cells: the mass and momentum after particle-to-grid, the remapped
  // momentum alone in grid-to-particle; adding nothing changes nothing.
  const std::size_t nodes = std::size_t{33} * 17;
  ASSERT_EQ(sum.calls.size(), 10U);
  EXPECT_EQ(sum.calls[0], std::make_pair(nodes, 2 * nodes));
  EXPECT_EQ(sum.calls[1], std::make_pair(std::size_t{0}, 2 * nodes));
  expect_same_state(summed.particles(), plain.particles());
  // A captured step cannot call out.
  EXPECT_NE(error_of([&] { summed.set_step_mode(StepMode::captured); }).find("border sum"),
            std::string::npos);
  // A border sum that throws stops the step with its message.
  sum.fail = true;
  EXPECT_NE(error_of([&] { summed.step(); }).find("the other process left"), std::string::npos);
  summed.set_border_sum(nullptr);
  plain.set_step_mode(StepMode::captured);
  EXPECT_NE(error_of([&] { plain.set_border_sum(&sum); }).find("StepMode::direct"),
            std::string::npos);
}

TEST_F(MpmSetupTest, ParticlesMovedThroughSlotsKeepTheirHistory) {
  // A run of 10 steps moved whole into a second simulation through add_particle_slots continues
  // bitwise as the first: the affine velocities and deformations come along (add_particles
  // would restart them).
  const mpm::Setup setup = two_materials();
  Simulation<2> first(setup, *pool_, *arena_);
  Simulation<2> second(setup, *pool_, *arena_);
  for (int s = 0; s < 10; ++s) {
    first.step();
  }
  const auto n = static_cast<std::size_t>(first.particle_count());
  auto everyone = memory::borrow_temporary<std::uint8_t>(*pool_, n, "test.flags");
  const std::vector<std::uint8_t> ones(n, 1);
  memory::copy_to_device(everyone.view(), std::span<const std::uint8_t>(ones), pool_->stream());
  second.remove_particles(everyone.view());
  ASSERT_EQ(second.particle_count(), 0);
  EXPECT_NE(error_of([&] {
              (void)second.add_particle_slots(first.capacity() + 1);
            }).find("exceed the capacity"),
            std::string::npos);
  EXPECT_EQ(second.particle_count(), 0);
  const ParticleViews to = second.add_particle_slots(static_cast<std::int32_t>(n));
  const ParticleViews from = first.particle_views();
  const auto move = [this](auto source, auto target) {
    using T = std::remove_const_t<typename decltype(source)::value_type>;
    std::vector<T> host(source.size());
    memory::copy_to_host(std::span<T>(host), source, pool_->stream());
    memory::copy_to_device(target, std::span<const T>(host), pool_->stream());
  };
  move(from.positions, to.positions);
  move(from.velocities, to.velocities);
  move(from.affine, to.affine);
  move(from.deformation, to.deformation);
  move(from.volumes, to.volumes);
  move(from.materials, to.materials);
  pool_->stream().synchronize();
  for (int s = 0; s < 10; ++s) {
    first.step();
    second.step();
  }
  expect_same_state(second.particles(), first.particles());
}

}  // namespace
}  // namespace afem::apps::mpm
