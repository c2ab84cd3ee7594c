// The MPM run over MPI ranks follows the serial run (particle masses exactly, momentum and
// positions to round-off) with particles crossing slabs, is bitwise the same from run to run,
// takes no pool memory once warm, and a failure on one rank stops every rank with its error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "arenafem/apps/mpm/distributed_simulation.hpp"
#include "arenafem/apps/mpm/scene.hpp"
#include "arenafem/memory/communicator.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "support/rank_faults.hpp"

namespace afem::apps::mpm {
namespace {

/// A scene on a grid of 32 layers along the split axis (room for 4 slabs), its particles
/// moving across the slabs (in 3D gravity acts along z as well as y).
Setup scene(SceneKind kind, int dimension, GridBasis basis) {
  SceneOptions options;
  options.kind = kind;
  options.dimension = dimension;
  options.resolution = dimension == 2 ? 32 : 16;
  options.basis = basis;
  mpm::Setup setup = make_scene(options);
  if (dimension == 3) {
    // 16 cells along x and y, 32 along z: a box twice as deep.
    setup.extent[2] = 2.0;
    for (std::size_t p = 0; p < static_cast<std::size_t>(setup.particles.count()); ++p) {
      setup.particles.positions[p * 3 + 2] += 0.5;
    }
    setup.gravity = {0.0, -9.81, -9.81};
  }
  // Solids thrown down the split axis, so that particles cross the cuts within a few tens of
  // steps (the dam's water crosses them as it falls).
  const auto d = static_cast<std::size_t>(dimension);
  for (std::size_t p = 0; p < static_cast<std::size_t>(setup.particles.count()); ++p) {
    setup.particles.velocities[p * d + d - 1] -= kind == SceneKind::dam_break ? 0.0 : 4.0;
  }
  return setup;
}

/// The sum over particles, in the order given, of mass times velocity component `d`.
double momentum(const ParticleState& state, int dimension, int d) {
  double total = 0.0;
  for (std::size_t p = 0; p < state.masses.size(); ++p) {
    total +=
        state.masses[p] *
        state.velocities[p * static_cast<std::size_t>(dimension) + static_cast<std::size_t>(d)];
  }
  return total;
}

double largest_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double largest = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    largest = std::max(largest, std::abs(a[i] - b[i]));
  }
  return largest;
}

double largest_magnitude(const std::vector<double>& a) {
  double largest = 0.0;
  for (const double v : a) {
    largest = std::max(largest, std::abs(v));
  }
  return largest;
}

class DistributedMpm : public ::testing::Test {
protected:
  template <int D>
  ParticleState run_serial(const mpm::Setup& setup, int steps) {
    Simulation<D> simulation(setup, pool_, arena_);
    simulation.set_particle_sort_interval(0);  // particle numbers are the serial indices
    for (int s = 0; s < steps; ++s) {
      simulation.step();
    }
    return simulation.particles();
  }

  /// Runs `steps` steps over the ranks; returns the particles on rank 0 and the particles sent
  /// over every rank.
  template <int D>
  std::pair<ParticleState, std::int64_t> run_distributed(const mpm::Setup& setup, int steps) {
    DistributedSimulation<D> simulation(setup, comm_, pool_, arena_);
    for (int s = 0; s < steps; ++s) {
      simulation.step();
    }
    // The border sums sent what the traffic report says a step sends.
    EXPECT_EQ(simulation.traffic().border_bytes_sent,
              steps * simulation.traffic().border_bytes_per_step);
    if (comm_.size() > 1) {
      EXPECT_GT(simulation.traffic().border_bytes_sent, 0);
    }
    const std::int64_t sent = comm_.sum(simulation.traffic().particles_sent);
    return {simulation.gather_particles(0), sent};
  }

  /// The distributed run follows the serial one: every particle, in number order, has the same
  /// mass (bitwise) and material, its position and velocity to round-off; the momentum is the
  /// serial one's to round-off; and particles crossed slabs on more than one rank.
  template <int D>
  void expect_serial_particles(const mpm::Setup& setup, int steps) {
    const ParticleState serial = run_serial<D>(setup, steps);
    const auto [distributed, sent] = run_distributed<D>(setup, steps);
    if (comm_.size() > 1) {
      EXPECT_GT(sent, 0) << "no particle crossed a slab: the test would not test migration";
    }
    if (comm_.rank() != 0) {
      return;
    }
    ASSERT_EQ(distributed.masses.size(), serial.masses.size());
    EXPECT_EQ(distributed.masses, serial.masses);
    EXPECT_EQ(distributed.materials, serial.materials);
    const double extent = setup.extent[0];
    EXPECT_LE(largest_difference(distributed.positions, serial.positions), 1e-11 * extent);
    const double speed = std::max(largest_magnitude(serial.velocities), 1e-3);
    EXPECT_LE(largest_difference(distributed.velocities, serial.velocities), 1e-9 * speed);
    EXPECT_LE(largest_difference(distributed.deformation, serial.deformation), 1e-9);
    double mass = 0.0;
    for (const double m : serial.masses) {
      mass += m;
    }
    for (int d = 0; d < D; ++d) {
      EXPECT_NEAR(momentum(distributed, D, d), momentum(serial, D, d), 1e-11 * mass * speed)
          << "axis " << d;
    }
  }

  memory::Communicator comm_;
  memory::Pool pool_{memory::device_resource(), {.name = "mpm"}};
  memory::Arena arena_{pool_, {"step", 1 << 20, 0}};
};

TEST_F(DistributedMpm, SlabsCoverTheGridAndSplitTheParticles) {
  const mpm::Setup setup = scene(SceneKind::sand_column, 2, GridBasis::q1);
  const int layers = setup.cells(1);
  for (int ranks = 1; ranks <= layers / min_slab_layers(setup); ++ranks) {
    const std::vector<Slab> slabs = cut_slabs(setup, ranks);
    ASSERT_EQ(slabs.size(), static_cast<std::size_t>(ranks));
    EXPECT_EQ(slabs.front().first, 0);
    EXPECT_EQ(slabs.back().last, layers);
    for (std::size_t r = 0; r < slabs.size(); ++r) {
      EXPECT_GE(slabs[r].last - slabs[r].first, min_slab_layers(setup)) << r;
      if (r > 0) {
        EXPECT_EQ(slabs[r].first, slabs[r - 1].last);
      }
    }
  }
  // The column stands on the floor: two ranks cut it below the middle of the box.
  const std::vector<Slab> two = cut_slabs(setup, 2);
  EXPECT_LT(two[0].last, layers / 2);
  try {
    (void)cut_slabs(setup, layers / min_slab_layers(setup) + 1);
    ADD_FAILURE() << "too many ranks accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("cell layers along y"), std::string::npos)
        << error.what();
  }
}

TEST_F(DistributedMpm, FollowsTheSerialRunIn2D) {
  expect_serial_particles<2>(scene(SceneKind::sand_column, 2, GridBasis::q1), 60);
  expect_serial_particles<2>(scene(SceneKind::elastic_drop, 2, GridBasis::bspline2), 60);
  expect_serial_particles<2>(scene(SceneKind::dam_break, 2, GridBasis::q1), 60);
}

TEST_F(DistributedMpm, FollowsTheSerialRunIn3D) {
  expect_serial_particles<3>(scene(SceneKind::sand_column, 3, GridBasis::q1), 30);
  expect_serial_particles<3>(scene(SceneKind::elastic_drop, 3, GridBasis::bspline2), 30);
}

TEST_F(DistributedMpm, ConservesMomentumAcrossTheSlabsToRounding) {
  // An elastic block in free flight (no gravity, no wall reached) across the cut between two
  // slabs: APIC transfers conserve its momentum, and the border sums must neither lose nor add
  // any. Over 80 steps the total drifts by rounding only, as in the serial run.
  mpm::Setup setup;
  setup.resolution = 32;
  setup.gravity = {0.0, 0.0, 0.0};
  setup.materials = {Material{.kind = MaterialKind::elastic,
                              .density = 1000.0,
                              .youngs_modulus = 1.0e5,
                              .poisson_ratio = 0.3}};
  const double spacing = setup.cell_size() / 2.0;
  for (double y = 0.25 + 0.5 * spacing; y < 0.6; y += spacing) {
    for (double x = 0.3 + 0.5 * spacing; x < 0.7; x += spacing) {
      setup.particles.positions.insert(setup.particles.positions.end(), {x, y});
      // Moving up, spinning a little: every particle's velocity differs.
      setup.particles.velocities.insert(setup.particles.velocities.end(),
                                        {0.3 * (y - 0.4), 1.5 - 0.3 * (x - 0.5)});
      setup.particles.volumes.push_back(spacing * spacing);
    }
  }
  DistributedSimulation<2> simulation(setup, comm_, pool_, arena_);
  const auto total = [&](int d) {
    const ParticleState state = simulation.gather_particles(0);
    return comm_.rank() == 0 ? momentum(state, 2, d) : 0.0;
  };
  const double start_x = total(0);
  const double start_y = total(1);
  for (int s = 0; s < 80; ++s) {
    simulation.step();
  }
  if (comm_.size() > 1) {
    EXPECT_GT(comm_.sum(simulation.traffic().particles_sent), 0);
  }
  const double end_x = total(0);
  const double end_y = total(1);
  if (comm_.rank() == 0) {
    EXPECT_NEAR(end_y, start_y, 1e-12 * std::abs(start_y));
    EXPECT_NEAR(end_x, start_x, 1e-12 * std::abs(start_y));
  }
}

TEST_F(DistributedMpm, RemovesWhatLeavesThroughAnOpenFloorAsTheSerialRunDoes) {
  mpm::Setup setup = scene(SceneKind::dam_break, 2, GridBasis::q1);
  setup.boundaries[static_cast<std::size_t>(Face::y_low)] = Boundary::open;
  const int steps = 120;
  Simulation<2> serial(setup, pool_, arena_);
  serial.set_particle_sort_interval(0);  // particle numbers are the serial indices
  for (int s = 0; s < steps; ++s) {
    serial.step();
  }
  DistributedSimulation<2> distributed(setup, comm_, pool_, arena_);
  for (int s = 0; s < steps; ++s) {
    distributed.step();
  }
  ASSERT_GT(serial.particles_left(), 0) << "no particle left: the test would not test removal";
  EXPECT_EQ(distributed.particles_left(), serial.particles_left());
  EXPECT_EQ(distributed.particle_count(), serial.particle_count());
  const ParticleState gathered = distributed.gather_particles(0);
  if (comm_.rank() == 0) {
    const ParticleState expected = serial.particles();
    EXPECT_EQ(gathered.masses, expected.masses);
    EXPECT_LE(largest_difference(gathered.positions, expected.positions), 1e-11);
  }
}

TEST_F(DistributedMpm, IsBitwiseTheSameFromRunToRun) {
  const mpm::Setup setup = scene(SceneKind::sand_column, 2, GridBasis::bspline2);
  const ParticleState first = run_distributed<2>(setup, 40).first;
  const ParticleState second = run_distributed<2>(setup, 40).first;
  if (comm_.rank() == 0) {
    EXPECT_EQ(first.positions, second.positions);
    EXPECT_EQ(first.velocities, second.velocities);
    EXPECT_EQ(first.affine, second.affine);
    EXPECT_EQ(first.deformation, second.deformation);
  }
}

TEST_F(DistributedMpm, WarmStepsTakeNothingFromThePool) {
  const mpm::Setup setup = scene(SceneKind::dam_break, 2, GridBasis::q1);
  memory::Pool pool(memory::device_resource(), {.name = "flat"});
  memory::Arena arena(pool, {"step", 1 << 20, 0});
  DistributedSimulation<2> simulation(setup, comm_, pool, arena);
  for (int s = 0; s < 10; ++s) {
    simulation.step();
  }
  const memory::PoolStats warm = pool.stats();
  const std::int64_t sent_before = simulation.traffic().particles_sent;
  for (int s = 0; s < 40; ++s) {
    simulation.step();
  }
  const memory::PoolStats after = pool.stats();
  EXPECT_EQ(after.upstream_allocations, warm.upstream_allocations);
  EXPECT_EQ(after.live_bytes, warm.live_bytes);
  EXPECT_EQ(after.reserved_bytes, warm.reserved_bytes);
  if (comm_.size() > 1) {
    EXPECT_GT(comm_.sum(simulation.traffic().particles_sent - sent_before), 0);
  }
}

TEST_F(DistributedMpm, RefusesWhatItCannotRunOnEveryRank) {
  const auto expect_refused = [this](const mpm::Setup& setup, const std::string& words) {
    try {
      DistributedSimulation<2> simulation(setup, comm_, pool_, arena_);
      ADD_FAILURE() << "accepted a setup it should refuse (" << words << ")";
    } catch (const memory::CollectiveError& error) {
      EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
    }
  };
  SceneOptions fluid;
  fluid.kind = SceneKind::dam_break;
  fluid.resolution = 32;
  fluid.incompressible = true;
  expect_refused(make_scene(fluid), "incompressible fluid");
  mpm::Setup coarse = scene(SceneKind::sand_column, 2, GridBasis::q1);
  coarse.resolution = 8;
  coarse.boundary_cells = 1;
  if (comm_.size() > 1) {
    expect_refused(coarse, "cell layers along y");
    mpm::Setup differs = scene(SceneKind::sand_column, 2, GridBasis::q1);
    differs.particles.velocities[0] += comm_.rank() == 1 ? 1.0 : 0.0;
    expect_refused(differs, "different setups");
    mpm::Setup other_material = scene(SceneKind::sand_column, 2, GridBasis::q1);
    other_material.materials[0].friction_angle_degrees += comm_.rank() == 1 ? 1.0 : 0.0;
    expect_refused(other_material, "different setups");
  }
  // A particle outside a closed box (a run that blew up) stops every rank with its number.
  {
    DistributedSimulation<2> simulation(scene(SceneKind::sand_column, 2, GridBasis::q1), comm_,
                                        pool_, arena_);
    const ParticleViews views = simulation.local().particle_views();
    // Its x alone is lost: its layer along the slabs' axis still looks at home.
    if (comm_.rank() == 0 && !views.positions.empty()) {
      views.positions[0] = std::nan("");
    }
    try {
      simulation.step();
      ADD_FAILURE() << "a particle outside the closed box went unnoticed";
    } catch (const memory::CollectiveError& error) {
      EXPECT_NE(std::string(error.what()).find("outside the closed box"), std::string::npos)
          << error.what();
    }
  }
  // A rank that cannot take the particles arriving stops every rank.
  if (comm_.size() > 1) {
    const mpm::Setup setup = scene(SceneKind::dam_break, 2, GridBasis::q1);
    std::int64_t most = 0;
    {
      const DistributedSimulation<2> roomy(setup, comm_, pool_, arena_);
      most = comm_.max(std::int64_t{roomy.local().particle_count()});
    }
    // Room for a few more than the fullest rank starts with: the water falling into the lowest
    // slab overfills it.
    DistributedSimulation<2> simulation(setup, comm_, pool_, arena_, {.rank_capacity = most + 4});
    try {
      for (int s = 0; s < 400; ++s) {
        simulation.step();
      }
      ADD_FAILURE() << "no rank ran out of capacity";
    } catch (const memory::CollectiveError& error) {
      EXPECT_NE(std::string(error.what()).find("DistributedOptions::rank_capacity"),
                std::string::npos)
          << error.what();
    }
  }
}

TEST_F(DistributedMpm, AFailedAllocationOnOneRankStopsEveryRank) {
  const mpm::Setup setup = scene(SceneKind::sand_column, 2, GridBasis::q1);
  const int faulty_rank = comm_.size() - 1;
  test::FaultyPool faulty;
  memory::Arena faulty_arena(faulty.pool, {"step", 1 << 16, 0});
  memory::Pool& pool = comm_.rank() == faulty_rank ? faulty.pool : pool_;
  memory::Arena& arena = comm_.rank() == faulty_rank ? faulty_arena : arena_;
  // The faulty rank's arena grows in small chunks, so that faults land in the steps too.
  int faults_in_steps = 0;
  const int failures =
      test::fail_each_allocation_of_one_rank(comm_, faulty, faulty_rank, "fault injected", [&] {
        DistributedSimulation<2> simulation(setup, comm_, pool, arena);
        try {
          for (int s = 0; s < 3; ++s) {
            simulation.step();
          }
        } catch (const memory::CollectiveError&) {
          ++faults_in_steps;
          throw;
        }
      });
  EXPECT_GT(faults_in_steps, 0);
  EXPECT_GT(failures, 5);
}

}  // namespace
}  // namespace afem::apps::mpm
