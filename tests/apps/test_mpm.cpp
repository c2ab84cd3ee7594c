// The MPM app's simulation: conservation, determinism across runs and thread counts, physical
// sanity of the scenes, memory taken per step, and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <numbers>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "arenafem/apps/mpm/options.hpp"
#include "arenafem/apps/mpm/scene.hpp"
#include "arenafem/apps/mpm/simulation.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/temporary.hpp"
#include "support/backend_test.hpp"
#include "support/fault_injection.hpp"
#include "support/thread_count.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace afem::apps::mpm {
namespace {

class MpmTest : public test::BackendTest {
protected:
  template <int D>
  ParticleState run(const mpm::Setup& scene, int steps) {
    Simulation<D> simulation(scene, *pool_, *arena_);
    for (int s = 0; s < steps; ++s) {
      simulation.step();
    }
    return simulation.particles();
  }
};

mpm::Setup scene_of(SceneKind kind, int dimension, int resolution,
                    GridBasis basis = GridBasis::q1) {
  SceneOptions options;
  options.kind = kind;
  options.dimension = dimension;
  options.resolution = resolution;
  options.basis = basis;
  return make_scene(options);
}

template <int D>
std::vector<double> momentum(const ParticleState& state) {
  std::vector<double> total(D, 0.0);
  for (std::size_t p = 0; p < state.masses.size(); ++p) {
    for (std::size_t d = 0; d < D; ++d) {
      total[d] += state.masses[p] * state.velocities[p * D + d];
    }
  }
  return total;
}

double max_speed(const ParticleState& state, int dimension) {
  const auto dim = static_cast<std::size_t>(dimension);
  double speed = 0.0;
  for (std::size_t p = 0; p < state.masses.size(); ++p) {
    double v2 = 0.0;
    for (std::size_t d = 0; d < dim; ++d) {
      v2 += state.velocities[p * dim + d] * state.velocities[p * dim + d];
    }
    speed = std::max(speed, std::sqrt(v2));
  }
  return speed;
}

class MpmBasisTest : public MpmTest, public ::testing::WithParamInterface<GridBasis> {};
INSTANTIATE_TEST_SUITE_P(Bases, MpmBasisTest, ::testing::Values(GridBasis::q1, GridBasis::bspline2),
                         [](const auto& test_case) { return to_string(test_case.param); });

TEST_P(MpmBasisTest, GridMassEqualsParticleMassAndParticlesKeepTheirMass) {
  const mpm::Setup scene = scene_of(SceneKind::sand_column, 2, 32, GetParam());
  Simulation<2> simulation(scene, *pool_, *arena_);
  const ParticleState before = simulation.particles();
  double particle_mass = 0.0;
  for (const double m : before.masses) {
    particle_mass += m;
  }
  for (int s = 0; s < 30; ++s) {
    simulation.rebin();
    simulation.particle_to_grid();
    simulation.update_grid();
    const GridState grid = simulation.grid_state();
    double grid_mass = 0.0;
    for (const double m : grid.masses) {
      grid_mass += m;
    }
    ASSERT_NEAR(grid_mass, particle_mass, 1e-13 * particle_mass) << "step " << s;
    simulation.grid_to_particle();
    arena_->reset();
  }
  const ParticleState after = simulation.particles();
  EXPECT_EQ(after.masses, before.masses);
  EXPECT_EQ(simulation.outside_count(), 0);
  EXPECT_GT(simulation.active_cell_count(), 0);
  EXPECT_LT(simulation.active_cell_count(), 32 * 32 / 4);  // only the cells holding sand
}

template <int D>
mpm::Setup spinning_ball(int resolution, GridBasis basis = GridBasis::q1) {
  SceneOptions options;
  options.basis = basis;
  options.kind = SceneKind::elastic_drop;
  options.dimension = D;
  options.resolution = resolution;
  options.gravity = false;
  options.walls = false;
  mpm::Setup scene = make_scene(options);
  // Translation, rotation about the ball's centre and a squeeze: every transfer term is active.
  for (std::size_t p = 0; p < scene.particles.volumes.size(); ++p) {
    const double x = scene.particles.positions[p * D] - 0.5;
    const double y = scene.particles.positions[p * D + 1] - 0.4;
    scene.particles.velocities[p * D] = 0.3 - 2.0 * y - 1.5 * x;
    scene.particles.velocities[p * D + 1] = -0.2 + 2.0 * x;
  }
  return scene;
}

template <int D>
void expect_momentum_conserved(const ParticleState& before, const ParticleState& after) {
  const std::vector<double> p0 = momentum<D>(before);
  const std::vector<double> p1 = momentum<D>(after);
  double scale = 0.0;
  for (std::size_t p = 0; p < before.masses.size(); ++p) {
    for (std::size_t d = 0; d < D; ++d) {
      scale += before.masses[p] * std::abs(before.velocities[p * D + d]);
    }
  }
  // Round-off of 100 steps; quadratic B-splines sum 9 or 27 terms per particle where Q1 sums 4
  // or 8.
  for (std::size_t d = 0; d < D; ++d) {
    EXPECT_NEAR(p1[d], p0[d], 1e-11 * scale) << "component " << d;
  }
  EXPECT_NE(before.velocities, after.velocities);  // the ball did move and deform
}

TEST_P(MpmBasisTest, MomentumIsConservedWithoutGravityAndWalls2D) {
  const mpm::Setup scene = spinning_ball<2>(32, GetParam());
  Simulation<2> simulation(scene, *pool_, *arena_);
  const ParticleState before = simulation.particles();
  for (int s = 0; s < 100; ++s) {
    simulation.step();
  }
  expect_momentum_conserved<2>(before, simulation.particles());
}

TEST_P(MpmBasisTest, MomentumIsConservedWithoutGravityAndWalls3D) {
  const mpm::Setup scene = spinning_ball<3>(16, GetParam());
  Simulation<3> simulation(scene, *pool_, *arena_);
  const ParticleState before = simulation.particles();
  for (int s = 0; s < 20; ++s) {
    simulation.step();
  }
  expect_momentum_conserved<3>(before, simulation.particles());
}

/// One step of the B-spline transfers (MLS-MPM) from particles whose velocity is the affine field
/// a + G x and whose affine velocity is G: the grid momentum is the field times the node mass
/// exactly, so every particle takes a + G x back at its old position, and G.
template <int D>
void expect_affine_field_kept(memory::Pool& pool, memory::Arena& arena) {
  const mpm::Setup scene = spinning_ball<D>(D == 2 ? 32 : 16, GridBasis::bspline2);
  Simulation<D> simulation(scene, pool, arena);
  simulation.set_particle_sort_interval(0);  // the particles keep their order
  const ParticleState start = simulation.particles();
  const std::size_t n = start.masses.size();
  double g[D][D];
  double a[D];
  for (std::size_t r = 0; r < D; ++r) {
    a[r] = 0.1 * static_cast<double>(r + 1);
    for (std::size_t c = 0; c < D; ++c) {
      g[r][c] = r == c ? -0.4 + 0.3 * static_cast<double>(r) : 0.7 - 0.5 * static_cast<double>(c);
    }
  }
  std::vector<double> velocities(n * D);
  std::vector<double> affine(n * D * D);
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t r = 0; r < D; ++r) {
      velocities[p * D + r] = a[r];
      for (std::size_t c = 0; c < D; ++c) {
        velocities[p * D + r] += g[r][c] * start.positions[p * D + c];
        affine[(p * D + r) * D + c] = g[r][c];
      }
    }
  }
  const ParticleViews views = simulation.particle_views();
  memory::copy_to_device(views.velocities, std::span<const double>(velocities), pool.stream());
  memory::copy_to_device(views.affine, std::span<const double>(affine), pool.stream());
  pool.stream().synchronize();
  simulation.step();
  const ParticleState end = simulation.particles();
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t k = 0; k < D; ++k) {
      ASSERT_NEAR(end.velocities[p * D + k], velocities[p * D + k], 1e-13) << "particle " << p;
    }
    for (std::size_t k = 0; k < std::size_t{D} * D; ++k) {
      ASSERT_NEAR(end.affine[p * D * D + k], affine[p * D * D + k], 1e-11) << "particle " << p;
    }
    // The elastic ball keeps F, moved by the step: (I + dt G) F (row-major per particle).
    for (std::size_t r = 0; r < D; ++r) {
      for (std::size_t c = 0; c < D; ++c) {
        double moved = 0.0;
        for (std::size_t k = 0; k < D; ++k) {
          const double step = (r == k ? 1.0 : 0.0) + scene.dt * g[r][k];
          moved += step * start.deformation[p * D * D + k * D + c];
        }
        ASSERT_NEAR(end.deformation[p * D * D + r * D + c], moved, 1e-13)
            << "particle " << p << ", F(" << r << ", " << c << ")";
      }
    }
  }
}

TEST_F(MpmTest, BSplineTransfersKeepAnAffineVelocityField) {
  expect_affine_field_kept<2>(*pool_, *arena_);
  expect_affine_field_kept<3>(*pool_, *arena_);
}

void expect_bitwise_equal(const ParticleState& a, const ParticleState& b) {
  EXPECT_EQ(a.positions, b.positions);
  EXPECT_EQ(a.velocities, b.velocities);
  EXPECT_EQ(a.affine, b.affine);
  EXPECT_EQ(a.deformation, b.deformation);
}

TEST_P(MpmBasisTest, RunsAreBitwiseIdenticalAcrossRunsAndThreadCounts) {
  const mpm::Setup sand = scene_of(SceneKind::sand_column, 2, 32, GetParam());
  const mpm::Setup water = scene_of(SceneKind::dam_break, 3, 16, GetParam());
#if defined(_OPENMP)
  const test::ThreadCount one(1);
#endif
  const ParticleState sand_one = run<2>(sand, 60);
  const ParticleState water_one = run<3>(water, 10);
  expect_bitwise_equal(run<2>(sand, 60), sand_one);  // the same again
  for (const int count : {2, 3, 4}) {
    SCOPED_TRACE(std::to_string(count) + " threads");
#if defined(_OPENMP)
    const test::ThreadCount threads(count);
    ASSERT_EQ(omp_get_max_threads(), count);
#endif
    expect_bitwise_equal(run<2>(sand, 60), sand_one);
    expect_bitwise_equal(run<3>(water, 10), water_one);
  }
  EXPECT_NE(sand_one.positions, sand.particles.positions);  // the sand did move
}

/// The scene with every particle's volume made distinct (by parts in 1e9), so that its mass
/// names it whatever order the simulation keeps.
mpm::Setup tagged(mpm::Setup scene) {
  for (std::size_t p = 0; p < scene.particles.volumes.size(); ++p) {
    scene.particles.volumes[p] *= 1.0 + 1e-9 * static_cast<double>(p);
  }
  return scene;
}

/// Where each particle of `state` is in `reference`, matched by mass.
std::vector<std::size_t> match_by_mass(const ParticleState& state, const ParticleState& reference) {
  std::map<double, std::size_t> slot;
  for (std::size_t p = 0; p < reference.masses.size(); ++p) {
    slot.emplace(reference.masses[p], p);
  }
  EXPECT_EQ(slot.size(), reference.masses.size()) << "the masses do not name the particles";
  std::vector<std::size_t> match(state.masses.size());
  for (std::size_t p = 0; p < state.masses.size(); ++p) {
    const auto found = slot.find(state.masses[p]);
    EXPECT_NE(found, slot.end()) << "particle " << p << " has no match";
    match[p] = found == slot.end() ? 0 : found->second;
  }
  return match;
}

/// The grid cell (x fastest) of every particle of `state`.
std::vector<std::int64_t> cells_of(const ParticleState& state, const mpm::Setup& setup, int dim) {
  const auto d_count = static_cast<std::size_t>(dim);
  std::vector<std::int64_t> cells(state.masses.size());
  for (std::size_t p = 0; p < cells.size(); ++p) {
    std::int64_t cell = 0;
    for (int d = dim - 1; d >= 0; --d) {
      const auto k = static_cast<std::size_t>(d);
      const double x = (state.positions[p * d_count + k] - setup.origin[k]) / setup.cell_size();
      cell = cell * setup.cells(d) + static_cast<std::int64_t>(std::floor(x));
    }
    cells[p] = cell;
  }
  return cells;
}

// sort_particles() reorders the particles cell by cell and changes nothing of any particle.
TEST_P(MpmBasisTest, SortingPutsTheParticlesInCellOrderAndKeepsTheirState) {
  const mpm::Setup scene = tagged(scene_of(SceneKind::dam_break, 2, 32, GetParam()));
  Simulation<2> simulation(scene, *pool_, *arena_);
  simulation.set_particle_sort_interval(0);
  for (int s = 0; s < 60; ++s) {
    simulation.step();
  }
  const ParticleState before = simulation.particles();
  const std::vector<std::int64_t> cells_before = cells_of(before, scene, 2);
  ASSERT_FALSE(std::is_sorted(cells_before.begin(), cells_before.end()))
      << "the particles are in cell order already: the test would not test the sort";
  simulation.rebin();
  simulation.sort_particles();
  const ParticleState after = simulation.particles();
  const std::vector<std::int64_t> cells_after = cells_of(after, scene, 2);
  EXPECT_TRUE(std::is_sorted(cells_after.begin(), cells_after.end()));
  ASSERT_EQ(after.masses.size(), before.masses.size());
  const std::vector<std::size_t> match = match_by_mass(after, before);
  for (std::size_t p = 0; p < match.size(); ++p) {
    const std::size_t q = match[p];
    for (std::size_t d = 0; d < 2; ++d) {
      EXPECT_EQ(after.positions[p * 2 + d], before.positions[q * 2 + d]);
      EXPECT_EQ(after.velocities[p * 2 + d], before.velocities[q * 2 + d]);
    }
    for (std::size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(after.affine[p * 4 + k], before.affine[q * 4 + k]);
      EXPECT_EQ(after.deformation[p * 4 + k], before.deformation[q * 4 + k]);
    }
    EXPECT_EQ(after.materials[p], before.materials[q]);
  }
  // Within a cell the particles keep their order: sorting again changes nothing.
  simulation.rebin();
  simulation.sort_particles();
  expect_bitwise_equal(simulation.particles(), after);
}

// A run that sorts every few steps follows the run that never sorts, particle by particle, to
// rounding (the sums over a cell's particles may add in another order).
TEST_P(MpmBasisTest, RunsThatSortFollowTheRunThatDoesNot) {
  const mpm::Setup scene = tagged(scene_of(SceneKind::dam_break, 3, 16, GetParam()));
  const auto run_sorting_every = [&](int interval) {
    Simulation<3> simulation(scene, *pool_, *arena_);
    simulation.set_particle_sort_interval(interval);
    for (int s = 0; s < 40; ++s) {
      simulation.step();
    }
    return simulation.particles();
  };
  const ParticleState unsorted = run_sorting_every(0);
  const ParticleState sorted = run_sorting_every(3);
  ASSERT_EQ(sorted.masses.size(), unsorted.masses.size());
  EXPECT_NE(sorted.masses, unsorted.masses) << "the order did not change";
  const std::vector<std::size_t> match = match_by_mass(sorted, unsorted);
  const double speed = max_speed(unsorted, 3);
  ASSERT_GT(speed, 0.1);
  double position = 0.0;
  double velocity = 0.0;
  for (std::size_t p = 0; p < match.size(); ++p) {
    for (std::size_t d = 0; d < 3; ++d) {
      position = std::max(
          position, std::abs(sorted.positions[p * 3 + d] - unsorted.positions[match[p] * 3 + d]));
      velocity = std::max(
          velocity, std::abs(sorted.velocities[p * 3 + d] - unsorted.velocities[match[p] * 3 + d]));
    }
  }
  EXPECT_LE(position, 1e-12);
  EXPECT_LE(velocity, 1e-10 * speed);
}

TEST_P(MpmBasisTest, StillWaterStaysAtRest) {
  const mpm::Setup scene = scene_of(SceneKind::still_water, 2, 32, GetParam());
  const ParticleState state = run<2>(scene, 200);
  EXPECT_LT(max_speed(state, 2), 1e-4);
}

TEST_F(MpmTest, ElasticBallFallsAndBounces) {
  const mpm::Setup scene = scene_of(SceneKind::elastic_drop, 2, 32);
  Simulation<2> simulation(scene, *pool_, *arena_);
  const auto centre_height = [&] {
    const ParticleState state = simulation.particles();
    double sum = 0.0;
    double mass = 0.0;
    for (std::size_t p = 0; p < state.masses.size(); ++p) {
      sum += state.masses[p] * state.positions[p * 2 + 1];
      mass += state.masses[p];
    }
    return sum / mass;
  };
  const double start = centre_height();
  double lowest = start;
  double rebound = 0.0;
  bool bounced = false;
  while (simulation.time() < 0.6) {
    simulation.step();
    const double height = centre_height();
    if (!bounced && height < lowest) {
      lowest = height;
    } else if (height > lowest + 1e-3) {
      bounced = true;
      rebound = std::max(rebound, height);
    }
  }
  ASSERT_TRUE(bounced);
  EXPECT_LT(lowest, start - 0.2);  // it fell onto the floor ...
  // ... and came back up by more than half the drop.
  EXPECT_GT(rebound - lowest, 0.5 * (start - lowest));
}

/// The angle of the pile's flanks in degrees: the top surface's height per column of particles,
/// fitted by a line on each side between 40 % and 90 % of the pile's height.
double pile_angle(const ParticleState& state, double column_width) {
  std::map<int, double> top;
  for (std::size_t p = 0; p < state.masses.size(); ++p) {
    const int column = static_cast<int>(state.positions[p * 2] / column_width);
    top[column] = std::max(top[column], state.positions[p * 2 + 1]);
  }
  double peak = 0.0;
  int peak_column = 0;
  for (const auto& [column, height] : top) {
    if (height > peak) {
      peak = height;
      peak_column = column;
    }
  }
  double angle_sum = 0.0;
  for (const int side : {-1, 1}) {
    double sx = 0.0;
    double sy = 0.0;
    double sxx = 0.0;
    double sxy = 0.0;
    int count = 0;
    for (const auto& [column, height] : top) {
      if ((column - peak_column) * side > 0 && height > 0.4 * peak && height < 0.9 * peak) {
        const double x = (column + 0.5) * column_width;
        sx += x;
        sy += height;
        sxx += x * x;
        sxy += x * height;
        ++count;
      }
    }
    EXPECT_GE(count, 3) << "side " << side;
    const double slope = (count * sxy - sx * sy) / (count * sxx - sx * sx);
    angle_sum += std::atan(std::abs(slope)) * 180.0 / std::numbers::pi;
  }
  return angle_sum / 2.0;
}

TEST_F(MpmTest, SandColumnSettlesIntoAPileAtAStableAngle) {
  const mpm::Setup scene = scene_of(SceneKind::sand_column, 2, 32);
  Simulation<2> simulation(scene, *pool_, *arena_);
  while (simulation.time() < 1.2) {
    simulation.step();
  }
  const ParticleState state = simulation.particles();
  EXPECT_LT(max_speed(state, 2), 0.15);  // settled
  const double angle = pile_angle(state, 2.0 * scene.cell_size());
  std::printf("[          ] pile angle %.1f degrees, max speed %.3f m/s at t = %.2f s\n", angle,
              max_speed(state, 2), simulation.time());
  EXPECT_GE(angle, 20.0);
  EXPECT_LE(angle, 45.0);
}

// Nine particles per cell jam where the dam break's wave runs up the far wall into the corner
// (from step 300 of 64^2): the fluid compresses to J = 0.6, where the Tait sound speed would be
// 4.6 times its speed at rest and cross more than a cell per step. The pressure's sound speed
// limit keeps the run stable through the impact and the wave's fall.
TEST_F(MpmTest, DamBreakWithNineParticlesPerCellStaysStableThroughTheWallImpact) {
  SceneOptions options;
  options.kind = SceneKind::dam_break;
  options.resolution = 64;
  options.particles_per_cell = 3;
  const mpm::Setup scene = make_scene(options);
  Simulation<2> simulation(scene, *pool_, *arena_);
  double fastest = 0.0;
  for (int s = 0; s < 800; ++s) {
    ASSERT_NO_THROW(simulation.step()) << "step " << s;
    if (s % 50 == 49) {
      fastest = std::max(fastest, max_speed(simulation.particles(), 2));
    }
  }
  // The splash stays within 3 times the dam's free-fall speed sqrt(2 g h), h = 0.5 m (a run that
  // blows up moves particles cells per step: 35 m/s here).
  EXPECT_LT(fastest, 3.0 * std::sqrt(2.0 * 9.81 * 0.5));
  EXPECT_GT(fastest, 1.0);
}

// Warm-up is two steps: a rebin holds the new binning and the previous one at once.
TEST_F(MpmTest, StepsTakeNothingFromThePoolAfterWarmUp) {
  const mpm::Setup scene = scene_of(SceneKind::dam_break, 2, 32);
  Simulation<2> simulation(scene, *pool_, *arena_);
  simulation.step();
  simulation.step();
  const memory::PoolStats warm = pool_->stats();
  for (int s = 0; s < 50; ++s) {
    simulation.step();
  }
  const memory::PoolStats stats = pool_->stats();
  EXPECT_EQ(stats.upstream_allocations, warm.upstream_allocations);
  EXPECT_EQ(stats.reserved_bytes, warm.reserved_bytes);
  EXPECT_EQ(stats.live_bytes, warm.live_bytes);
  EXPECT_EQ(arena_->stats().live_handles, 0U);
}

mpm::Setup incompressible_scene(SceneKind kind, int resolution, int dimension = 2,
                                GridBasis basis = GridBasis::q1) {
  SceneOptions options;
  options.kind = kind;
  options.resolution = resolution;
  options.dimension = dimension;
  options.basis = basis;
  options.incompressible = true;
  return make_scene(options);
}

/// The staggered velocity's face numbering, recomputed here: component d lives on the faces
/// normal to axis d, cells[d] + 1 layers along d and cells[a] + 2 along every other axis a (a
/// ghost layer beside each side), the first axis fastest.
template <int D>
struct Faces {
  std::array<std::int64_t, D> cells{};
  explicit Faces(const mpm::Setup& scene) {
    for (int a = 0; a < D; ++a) {
      cells[static_cast<std::size_t>(a)] = scene.cells(a);
    }
  }
  [[nodiscard]] std::int64_t layers(int d, int a) const {
    return cells[static_cast<std::size_t>(a)] + (a == d ? 1 : 2);
  }
  [[nodiscard]] std::size_t count(int d) const {
    std::int64_t total = 1;
    for (int a = 0; a < D; ++a) {
      total *= layers(d, a);
    }
    return static_cast<std::size_t>(total);
  }
  /// The face of component d on the low (side 0) or high (1) end of cell `k`.
  [[nodiscard]] std::size_t of(int d, const std::array<std::int64_t, D>& k, int side) const {
    std::int64_t index = 0;
    for (int a = D - 1; a >= 0; --a) {
      const std::int64_t along = k[static_cast<std::size_t>(a)] + (a == d ? side : 1);
      index = index * layers(d, a) + along;
    }
    return static_cast<std::size_t>(index);
  }
  /// The cell that holds particle p.
  [[nodiscard]] std::array<std::int64_t, D> cell_of(const mpm::Setup& scene,
                                                    const ParticleState& particles,
                                                    std::size_t p) const {
    std::array<std::int64_t, D> k{};
    for (std::size_t a = 0; a < D; ++a) {
      const double at = (particles.positions[p * D + a] - scene.origin[a]) / scene.cell_size();
      k[a] = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(at)), 0, cells[a] - 1);
    }
    return k;
  }
};

// The divergence of the staggered grid velocity, recomputed here on the host from its definition:
// the net outflow sum_d u_d(high face) - u_d(low face) of every cell that holds a particle.
// Returns the largest |outflow| relative to the largest sum of the same terms' absolute values.
template <int D>
double relative_divergence(const mpm::Setup& scene, const ParticleState& particles,
                           const GridState& grid) {
  const Faces<D> faces(scene);
  for (int d = 0; d < D; ++d) {
    EXPECT_EQ(grid.faces[static_cast<std::size_t>(d)].size(), faces.count(d)) << "component " << d;
    if (grid.faces[static_cast<std::size_t>(d)].size() != faces.count(d)) {
      return 1.0;
    }
  }
  std::map<std::array<std::int64_t, D>, bool> fluid;
  for (std::size_t p = 0; p < particles.masses.size(); ++p) {
    fluid[faces.cell_of(scene, particles, p)] = true;
  }
  double largest = 0.0;
  double scale = 0.0;
  for (const auto& [k, wet] : fluid) {
    double outflow = 0.0;
    double magnitude = 0.0;
    for (int d = 0; d < D; ++d) {
      const std::vector<double>& u = grid.faces[static_cast<std::size_t>(d)];
      const double high = u[faces.of(d, k, 1)];
      const double low = u[faces.of(d, k, 0)];
      outflow += high - low;
      magnitude += std::abs(high) + std::abs(low);
    }
    largest = std::max(largest, std::abs(outflow));
    scale = std::max(scale, magnitude);
  }
  return scale > 0.0 ? largest / scale : 0.0;
}

/// The check above can fail: a grid velocity with one face of a fluid cell nudged reads far above
/// 1e-7.
template <int D>
void expect_a_nudge_is_seen(const mpm::Setup& scene, const ParticleState& particles,
                            GridState grid) {
  const Faces<D> faces(scene);
  grid.faces[0][faces.of(0, faces.cell_of(scene, particles, 0), 1)] += 1e-3;
  EXPECT_GT(relative_divergence<D>(scene, particles, grid), 1e-5);
}

/// Checks the divergence of the simulation's projected grid velocity (call after update_grid())
/// against the recomputation above, and with `nudge` that the check can fail; returns the value
/// seen.
template <int D>
double check_divergence(const mpm::Setup& scene, const Simulation<D>& simulation, int step,
                        bool nudge) {
  const GridState grid = simulation.grid_state();
  const ParticleState particles = simulation.particles();
  const double divergence = relative_divergence<D>(scene, particles, grid);
  EXPECT_LT(divergence, 1e-7) << "step " << step;
  if (nudge) {
    expect_a_nudge_is_seen<D>(scene, particles, grid);
  }
  return divergence;
}

// apic_fluid: the projected (staggered) grid velocity is divergence-free over the fluid cells to
// the solver's tolerance (checked against the definition, recomputed here), the dam collapses and
// its front runs along the floor at a bounded speed.
TEST_F(MpmTest, IncompressibleDamBreakIsDivergenceFreeAndFlowsAlongTheFloor) {
  const mpm::Setup scene = incompressible_scene(SceneKind::dam_break, 32);
  Simulation<2> simulation(scene, *pool_, *arena_);
  int step = 0;
  double largest_divergence = 0.0;
  while (step * scene.dt < 0.25) {
    simulation.rebin();
    simulation.particle_to_grid();
    simulation.update_grid();
    const PressureSolve solve = simulation.pressure_solve();
    ASSERT_GT(solve.iterations, 0);
    ASSERT_LT(solve.residual, 1e-8);
    if (step % 10 == 0) {
      largest_divergence =
          std::max(largest_divergence, check_divergence(scene, simulation, step, step == 20));
    }
    ASSERT_LT(solve.divergence, 1e-8);
    simulation.grid_to_particle();
    arena_->reset();
    ++step;
  }
  std::printf("[          ] largest |B u| recomputed on the host: %.1e of its terms\n",
              largest_divergence);
  const ParticleState state = simulation.particles();
  double front = 0.0;
  for (std::size_t p = 0; p < state.masses.size(); ++p) {
    front = std::max(front, state.positions[p * 2]);
  }
  EXPECT_GT(front, 0.55);  // from 0.4
  EXPECT_LT(max_speed(state, 2), 2.0 * std::sqrt(2.0 * 9.81 * 0.6));
}

// The same in 3D.
TEST_F(MpmTest, IncompressibleDamBreakIsDivergenceFree3D) {
  const mpm::Setup scene = incompressible_scene(SceneKind::dam_break, 16, 3);
  Simulation<3> simulation(scene, *pool_, *arena_);
  double largest_divergence = 0.0;
  for (int s = 0; s < 10; ++s) {
    simulation.rebin();
    simulation.particle_to_grid();
    simulation.update_grid();
    ASSERT_LT(simulation.pressure_solve().divergence, 1e-8);
    if (s % 3 == 0) {
      largest_divergence =
          std::max(largest_divergence, check_divergence(scene, simulation, s, s == 9));
    }
    simulation.grid_to_particle();
    arena_->reset();
  }
  std::printf("[          ] largest |B u| recomputed on the host: %.1e of its terms\n",
              largest_divergence);
  EXPECT_GT(max_speed(simulation.particles(), 3), 0.1);
}

/// The staggered fluid's particle-to-grid, recomputed here on the host from its definition: face
/// i of component d gets sum_p (m_p (v_p + C_p (x_i - x_p)) + dt f_p)_d N_i(x_p), N_i the
/// multilinear hat of the component's grid (the face centres: cell corners along d, cell centres,
/// with a ghost layer beside each side, along the other axes). The particles take velocities,
/// affine velocities and external forces that differ from particle to particle, so every term of
/// the form counts.
template <int D>
void expect_face_momenta_as_defined(memory::Pool& pool, memory::Arena& arena) {
  mpm::Setup scene = incompressible_scene(SceneKind::dam_break, D == 2 ? 32 : 16, D);
  scene.external_forces = true;
  Simulation<D> simulation(scene, pool, arena);
  const ParticleState start = simulation.particles();
  const std::size_t n = start.masses.size();
  std::vector<double> velocities(n * D);
  std::vector<double> affine(n * D * D);
  std::vector<double> forces(n * D);
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t k = 0; k < D; ++k) {
      velocities[p * D + k] = std::sin(0.37 * static_cast<double>(p * D + k));
      forces[p * D + k] = 1e-3 * std::cos(0.53 * static_cast<double>(p * D + k));
    }
    for (std::size_t k = 0; k < std::size_t{D} * D; ++k) {
      affine[p * D * D + k] = 3.0 * std::cos(0.71 * static_cast<double>(p * D * D + k));
    }
  }
  const ParticleViews views = simulation.particle_views();
  memory::copy_to_device(views.velocities, std::span<const double>(velocities), pool.stream());
  memory::copy_to_device(views.affine, std::span<const double>(affine), pool.stream());
  memory::copy_to_device(views.forces, std::span<const double>(forces), pool.stream());
  pool.stream().synchronize();
  simulation.rebin();
  simulation.particle_to_grid();
  const GridState grid = simulation.grid_state();  // the faces hold the momenta until update_grid
  arena.reset();

  const Faces<D> faces(scene);
  const double h = scene.cell_size();
  for (int d = 0; d < D; ++d) {
    const auto dd = static_cast<std::size_t>(d);
    std::vector<double> expected(faces.count(d), 0.0);
    std::vector<double> magnitude(faces.count(d), 0.0);
    for (std::size_t p = 0; p < n; ++p) {
      std::array<std::int64_t, D> low{};
      std::array<std::array<double, 2>, D> weight{};
      for (std::size_t a = 0; a < D; ++a) {
        // Node k of axis a sits at origin + k h along d and origin + (k - 1/2) h across.
        const double shift = a == dd ? 0.0 : -0.5;
        const double t = (start.positions[p * D + a] - scene.origin[a]) / h - shift;
        low[a] = static_cast<std::int64_t>(std::floor(t));
        const double f = t - static_cast<double>(low[a]);
        weight[a] = {1.0 - f, f};
      }
      for (int corner = 0; corner < (1 << D); ++corner) {
        double basis = 1.0;
        double affine_term = 0.0;
        std::int64_t index = 0;
        for (int a = D - 1; a >= 0; --a) {
          const auto aa = static_cast<std::size_t>(a);
          const int bit = (corner >> a) & 1;
          const std::int64_t k = low[aa] + bit;
          const double shift = a == d ? 0.0 : -0.5;
          const double node = scene.origin[aa] + (static_cast<double>(k) + shift) * h;
          basis *= weight[aa][static_cast<std::size_t>(bit)];
          affine_term += affine[(p * D + dd) * D + aa] * (node - start.positions[p * D + aa]);
          index = index * faces.layers(d, a) + k;
        }
        const double term = (start.masses[p] * (velocities[p * D + dd] + affine_term) +
                             simulation.setup().dt * forces[p * D + dd]) *
                            basis;
        expected[static_cast<std::size_t>(index)] += term;
        magnitude[static_cast<std::size_t>(index)] += std::abs(term);
      }
    }
    ASSERT_EQ(grid.faces[dd].size(), expected.size()) << "component " << d;
    std::size_t touched = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      touched += magnitude[i] > 0.0 ? 1 : 0;
      ASSERT_NEAR(grid.faces[dd][i], expected[i], 1e-12 * magnitude[i] + 1e-300)
          << "component " << d << ", face " << i;
    }
    EXPECT_GT(touched, expected.size() / 16) << "component " << d;
  }
}

TEST_F(MpmTest, IncompressibleParticleToGridGivesTheApicFaceMomenta) {
  expect_face_momenta_as_defined<2>(*pool_, *arena_);
  expect_face_momenta_as_defined<3>(*pool_, *arena_);
}

// The staggered fluid's runs are bitwise the same on 1 to 4 threads, with either preconditioner
// of the pressure solve, and the two solves agree to their tolerance.
TEST_F(MpmTest, IncompressibleRunsAreBitwiseIdenticalAcrossThreadCounts) {
  mpm::Setup scene = incompressible_scene(SceneKind::dam_break, 32);
  std::array<ParticleState, 2> one;
  for (const PressurePreconditioner solve :
       {PressurePreconditioner::jacobi, PressurePreconditioner::multigrid}) {
    scene.pressure_preconditioner = solve;
    const auto k = static_cast<std::size_t>(solve);
    {
#if defined(_OPENMP)
      const test::ThreadCount threads(1);
#endif
      one[k] = run<2>(scene, 30);
    }
    for (const int count : {2, 3, 4}) {
      SCOPED_TRACE(std::to_string(count) + " threads, " + to_string(solve));
#if defined(_OPENMP)
      const test::ThreadCount threads(count);
#endif
      expect_bitwise_equal(run<2>(scene, 30), one[k]);
    }
  }
  double largest = 0.0;
  for (std::size_t i = 0; i < one[0].velocities.size(); ++i) {
    largest = std::max(largest, std::abs(one[0].velocities[i] - one[1].velocities[i]));
  }
  EXPECT_LT(largest, 1e-6 * max_speed(one[1], 2));
  EXPECT_GT(max_speed(one[1], 2), 0.1);
}

// Water at rest in gravity is in exact discrete balance with its hydrostatic pressure.
TEST_F(MpmTest, IncompressibleStillWaterStaysAtRest) {
  const mpm::Setup scene = incompressible_scene(SceneKind::still_water, 32);
  const ParticleState state = run<2>(scene, 200);
  std::printf("[          ] still water after 200 steps: max speed %.2e m/s\n",
              max_speed(state, 2));
  EXPECT_LT(max_speed(state, 2), 1e-9);  // as README says
}

// On quadratic B-spline velocities (Q1 pressures) the projection holds the same balance: every
// step's pressure solve converges and leaves ||B u|| / ||B u*|| below 1e-8, the dam collapses
// along the floor at a bounded speed (2D to t = 0.25 s, 3D for 10 steps), and still water stays
// at rest.
TEST_F(MpmTest, IncompressibleDamBreakOnBSplinesIsDivergenceFree) {
  for (const int dim : {2, 3}) {
    const mpm::Setup scene =
        incompressible_scene(SceneKind::dam_break, dim == 2 ? 32 : 16, dim, GridBasis::bspline2);
    std::unique_ptr<Simulation<2>> plane;
    std::unique_ptr<Simulation<3>> space;
    if (dim == 2) {
      plane = std::make_unique<Simulation<2>>(scene, *pool_, *arena_);
    } else {
      space = std::make_unique<Simulation<3>>(scene, *pool_, *arena_);
    }
    const auto advance = [&](auto& simulation) {
      simulation.rebin();
      simulation.particle_to_grid();
      simulation.update_grid();
      const PressureSolve solve = simulation.pressure_solve();
      simulation.grid_to_particle();
      arena_->reset();
      return solve;
    };
    int iterations = 0;
    int step = 0;
    for (; dim == 2 ? step * scene.dt < 0.25 : step < 10; ++step) {
      const PressureSolve solve = dim == 2 ? advance(*plane) : advance(*space);
      ASSERT_GT(solve.iterations, 0) << dim << "D step " << step;
      ASSERT_LT(solve.residual, 1e-8) << dim << "D step " << step;
      ASSERT_LT(solve.divergence, 1e-8) << dim << "D step " << step;
      iterations = std::max(iterations, solve.iterations);
    }
    std::printf("[          ] %dD, %d steps: at most %d CG iterations\n", dim, step, iterations);
    const ParticleState state = dim == 2 ? plane->particles() : space->particles();
    double front = 0.0;
    for (std::size_t p = 0; p < state.masses.size(); ++p) {
      front = std::max(front, state.positions[p * static_cast<std::size_t>(dim)]);
    }
    if (dim == 2) {
      EXPECT_GT(front, 0.55);  // from 0.4
    }
    EXPECT_GT(max_speed(state, dim), 0.1) << dim << "D";
    EXPECT_LT(max_speed(state, dim), 2.0 * std::sqrt(2.0 * 9.81 * 0.6)) << dim << "D";
    plane.reset();
    space.reset();
  }
}

TEST_F(MpmTest, IncompressibleStillWaterOnBSplinesStaysAtRest) {
  const mpm::Setup scene = incompressible_scene(SceneKind::still_water, 32, 2, GridBasis::bspline2);
  const ParticleState state = run<2>(scene, 200);
  std::printf("[          ] still water after 200 steps: max speed %.2e m/s\n",
              max_speed(state, 2));
  EXPECT_LT(max_speed(state, 2), 1e-9);
}

// Fault injection: a step with cold caches (the first one, or one after `warm_steps` steps once
// the arena's chunks and the pool's cache were given back) fails at each of its upstream
// allocations in turn. Every time the error is an OutOfMemory naming the label, the
// particles are bitwise as before, the arena holds nothing, and a retry without the fault gives
// the state of a run that never failed; once the objects are gone the pool holds nothing.
void expect_steps_survive_every_fault(const mpm::Setup& scene, int warm_steps,
                                      int expected_min_faults) {
  // Runs `steps` steps, then empties the arena's and the pool's caches.
  const auto advance = [](Simulation<2>& simulation, memory::Arena& arena, memory::Pool& pool,
                          int steps) {
    for (int s = 0; s < steps; ++s) {
      simulation.step();
    }
    arena.release_chunks();
    pool.trim();
  };
  ParticleState clean;
  {
    test::FaultyPool faulty;
    memory::Arena arena(faulty.pool, {.name = "step"});
    Simulation<2> simulation(scene, faulty.pool, arena);
    advance(simulation, arena, faulty.pool, warm_steps);
    simulation.step();
    simulation.step();
    clean = simulation.particles();
  }
  const int faults = test::fail_each_allocation([&](int k) {
    bool failed = false;
    test::FaultyPool faulty;
    {
      memory::Arena arena(faulty.pool, {.name = "step"});
      Simulation<2> simulation(scene, faulty.pool, arena);
      advance(simulation, arena, faulty.pool, warm_steps);
      const ParticleState before = simulation.particles();
      faulty.plan_fault(k);
      try {
        simulation.step();
      } catch (const afem::OutOfMemory& error) {
        failed = true;
        test::expect_names_a_label(error);
        const ParticleState after = simulation.particles();
        EXPECT_EQ(after.positions, before.positions) << "fault " << k;
        EXPECT_EQ(after.velocities, before.velocities) << "fault " << k;
        EXPECT_EQ(after.affine, before.affine) << "fault " << k;
        EXPECT_EQ(after.deformation, before.deformation) << "fault " << k;
        EXPECT_EQ(arena.stats().live_handles, 0U) << "fault " << k;
        EXPECT_EQ(simulation.steps_taken(), warm_steps) << "fault " << k;
      }
      faulty.clear_fault();
      if (failed) {
        simulation.step();  // the retry
      }
      simulation.step();
      const ParticleState result = simulation.particles();
      EXPECT_EQ(result.positions, clean.positions) << "fault " << k;
      EXPECT_EQ(result.velocities, clean.velocities) << "fault " << k;
      EXPECT_EQ(result.deformation, clean.deformation) << "fault " << k;
    }
    EXPECT_EQ(faulty.pool.stats().live_bytes, 0U) << "fault " << k;
    EXPECT_EQ(faulty.pool.ledger().live_bytes(), 0U) << "fault " << k;
    // A fault that fired must have failed the operation (none swallowed).
    EXPECT_EQ(failed, faulty.resource.failures() > 0) << "fault " << k;
    return failed;
  });
  EXPECT_GE(faults, expected_min_faults);
  std::printf("[ faults   ] %s, step %d: %d injected upstream faults, each survived\n",
              to_string(scene.materials[0].kind).c_str(), warm_steps + 1, faults);
}

TEST_F(MpmTest, AStepSurvivesAFailureAtEachOfItsAllocations) {
  expect_steps_survive_every_fault(scene_of(SceneKind::sand_column, 2, 32), 0, 5);
  expect_steps_survive_every_fault(scene_of(SceneKind::sand_column, 2, 32), 40, 5);
  // B-splines take the MLS-MPM transfers: other allocations, in another order.
  expect_steps_survive_every_fault(scene_of(SceneKind::sand_column, 2, 32, GridBasis::bspline2), 0,
                                   5);
}

TEST_F(MpmTest, AnIncompressibleStepSurvivesAFailureAtEachOfItsAllocations) {
  expect_steps_survive_every_fault(incompressible_scene(SceneKind::dam_break, 16), 0, 5);
  expect_steps_survive_every_fault(incompressible_scene(SceneKind::dam_break, 16), 20, 5);
}

// A step arena at a hard capacity too small for the step: OutOfMemory naming the largest holders,
// particles unchanged, and the simulation steps on once the arena may grow.
TEST_F(MpmTest, AStepArenaAtItsHardCapacityFailsCleanly) {
  // 36 particles per cell: the step needs more scratch than the construction (which fits).
  SceneOptions options;
  options.resolution = 32;
  options.particles_per_cell = 6;
  const mpm::Setup scene = make_scene(options);
  memory::Arena bounded(*pool_,
                        {.name = "bounded", .chunk_bytes = 64 << 10, .capacity_bytes = 64 << 10});
  Simulation<2> simulation(scene, *pool_, bounded);
  const ParticleState before = simulation.particles();
  try {
    simulation.step();
    FAIL() << "the step fitted in 64 KiB of scratch";
  } catch (const afem::OutOfMemory& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'bounded'"), std::string::npos) << message;
    EXPECT_NE(message.find("largest live"), std::string::npos) << message;
  }
  const ParticleState after = simulation.particles();
  EXPECT_EQ(after.positions, before.positions);
  EXPECT_EQ(after.velocities, before.velocities);
  EXPECT_EQ(after.affine, before.affine);
  EXPECT_EQ(after.deformation, before.deformation);
  EXPECT_EQ(bounded.stats().live_handles, 0U);
  const auto usable = memory::borrow_temporary<double>(bounded, 1000, "after");
  EXPECT_EQ(usable.size(), 1000U);
}

TEST(MpmScene, BadOptionsAreNamed) {
  SceneOptions options;
  options.resolution = 8;
  EXPECT_THROW(
      {
        try {
          (void)make_scene(options);
        } catch (const Error& error) {
          EXPECT_NE(std::string(error.what()).find("resolution 8"), std::string::npos);
          throw;
        }
      },
      Error);
  options = {};
  options.dimension = 4;
  EXPECT_THROW((void)make_scene(options), Error);
  EXPECT_THROW((void)parse_scene("sand"), Error);
  options = {};
  options.incompressible = true;  // the sand column holds no fluid
  EXPECT_THROW((void)make_scene(options), Error);
  EXPECT_EQ(parse_scene("dam_break"), SceneKind::dam_break);
  EXPECT_THROW((void)parse_integer("--steps", "12x", 0, 100), Error);
  EXPECT_THROW((void)parse_integer("--steps", "101", 0, 100), Error);
  EXPECT_EQ(parse_integer("--steps", "42", 0, 100), 42);
  EXPECT_THROW((void)parse_positive("--dt", "-1"), Error);
  EXPECT_THROW((void)parse_positive("--dt", "nan"), Error);
  EXPECT_DOUBLE_EQ(parse_positive("--dt", "2.5e-4"), 2.5e-4);
}

TEST(MpmScene, SortEveryTakesACountOfStepsFromZero) {
  const Program program{.name = "mpm"};
  const auto parse = [&](std::vector<std::string_view> arguments) {
    return parse_command_line(arguments, program);
  };
  EXPECT_EQ(parse({}).sort_every, default_particle_sort_interval);
  EXPECT_EQ(parse({"--sort-every", "0"}).sort_every, 0);
  EXPECT_EQ(parse({"--sort-every", "4"}).sort_every, 4);
  for (const char* bad : {"-1", "x", "4.5"}) {
    try {
      (void)parse({"--sort-every", bad});
      ADD_FAILURE() << "--sort-every " << bad << " was taken";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("--sort-every"), std::string::npos) << error.what();
    }
  }
}

TEST(MpmScene, HelpListsTheScenesAProgramRuns) {
  const std::string all = scene_flags_help(Program{.name = "mpm"});
  EXPECT_NE(all.find("sand_column (default), elastic_drop, dam_break or"), std::string::npos)
      << all;
  EXPECT_NE(all.find("still_water"), std::string::npos) << all;
  const std::string fluid = scene_flags_help(
      Program{.name = "apic_fluid", .default_scene = SceneKind::dam_break, .incompressible = true});
  EXPECT_NE(fluid.find("--scene NAME              dam_break (default) or still_water\n"),
            std::string::npos)
      << fluid;
  EXPECT_EQ(fluid.find("sand_column"), std::string::npos) << fluid;
  EXPECT_EQ(fluid.find("elastic_drop"), std::string::npos) << fluid;
  // Only a program with a pressure solve lists its preconditioner.
  EXPECT_NE(fluid.find("--preconditioner NAME     of the pressure solve: multigrid (default) or "
                       "jacobi\n"),
            std::string::npos)
      << fluid;
  EXPECT_EQ(all.find("--preconditioner"), std::string::npos) << all;
  for (const std::string& text : {all, fluid}) {
    std::size_t start = 0;
    while (start < text.size()) {
      const std::size_t end = text.find('\n', start);
      ASSERT_NE(end, std::string::npos) << "the help's last line ends without a newline";
      EXPECT_LE(end - start, 80U) << text.substr(start, end - start);
      start = end + 1;
    }
  }
  // The scenes an incompressible program lists are those make_scene takes as incompressible.
  for (const SceneKind kind : {SceneKind::sand_column, SceneKind::elastic_drop,
                               SceneKind::dam_break, SceneKind::still_water}) {
    SceneOptions options;
    options.kind = kind;
    options.resolution = 16;
    options.incompressible = true;
    if (holds_fluid(kind)) {
      EXPECT_EQ(make_scene(options).materials[0].kind, MaterialKind::incompressible_fluid);
    } else {
      EXPECT_THROW((void)make_scene(options), Error) << to_string(kind);
    }
  }
}

TEST_F(MpmTest, BadSortRequestsAreRefusedAndChangeNothing) {
  const mpm::Setup scene = scene_of(SceneKind::dam_break, 2, 16);
  Simulation<2> simulation(scene, *pool_, *arena_);
  EXPECT_EQ(simulation.particle_sort_interval(), default_particle_sort_interval);
  EXPECT_THROW(simulation.set_particle_sort_interval(-1), Error);
  EXPECT_EQ(simulation.particle_sort_interval(), default_particle_sort_interval);
  ParticleBatch batch;
  batch.positions = {0.5, 0.5};
  batch.velocities = {0.0, 0.0};
  batch.volumes = {scene.particles.volumes[0]};
  mpm::Setup roomy = scene;
  roomy.capacity = scene.particles.count() + 1;
  Simulation<2> growing(roomy, *pool_, *arena_);
  growing.step();
  growing.add_particles(batch);
  const ParticleState before = growing.particles();
  try {
    growing.sort_particles();  // the new particle was never binned
    ADD_FAILURE() << "sort_particles() sorted particles the last rebin did not bin";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("rebin"), std::string::npos) << error.what();
  }
  expect_bitwise_equal(growing.particles(), before);

  // After a sort the binning names the old indices: the transfers and another sort wait for a
  // rebin.
  simulation.step();
  simulation.rebin();
  simulation.sort_particles();
  const ParticleState sorted = simulation.particles();
  for (const auto& part : {std::function<void()>([&] { simulation.particle_to_grid(); }),
                           std::function<void()>([&] { simulation.grid_to_particle(); }),
                           std::function<void()>([&] { simulation.sort_particles(); })}) {
    try {
      part();
      ADD_FAILURE() << "a part ran on the binning from before the sort";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("call rebin() first"), std::string::npos)
          << error.what();
    }
  }
  expect_bitwise_equal(simulation.particles(), sorted);
  simulation.rebin();
  simulation.particle_to_grid();
  simulation.update_grid();
  simulation.grid_to_particle();
  simulation.step();
}

TEST_F(MpmTest, MismatchedScenesAreRefused) {
  mpm::Setup scene = scene_of(SceneKind::sand_column, 2, 16);
  EXPECT_THROW(Simulation<3>(scene, *pool_, *arena_), Error);
  scene.particles.velocities.pop_back();
  const std::size_t live = pool_->stats().live_bytes;
  EXPECT_THROW(Simulation<2>(scene, *pool_, *arena_), Error);
  EXPECT_EQ(pool_->stats().live_bytes, live);
}

}  // namespace
}  // namespace afem::apps::mpm
