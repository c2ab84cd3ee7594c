#pragma once

/// @file
/// Simulation<D>: explicit MPM with APIC transfers on a regular grid, written with the fem layer:
/// particles are the quadrature points of a PicQuadrature, particle-to-grid transfers are linear
/// forms assembled by integrate() (mass, and momentum with the stress divergence in one form),
/// grid-to-particle transfers are interpolate() of the grid velocity and its gradient at the
/// particles. All sums run in a fixed order (cell-sorted particles, per-node sums in element
/// order), so a run is bitwise the same across runs and OpenMP thread counts.

#include <cstdint>
#include <vector>

#include "apps/mpm/material.hpp"
#include "apps/mpm/scene.hpp"
#include "fem/field.hpp"
#include "fem/space.hpp"
#include "fem/space_restriction.hpp"
#include "geometry/grid.hpp"
#include "geometry/partition.hpp"
#include "memory/arena.hpp"
#include "memory/pool.hpp"
#include "memory/temporary.hpp"
#include "quadrature/domain.hpp"
#include "quadrature/pic_quadrature.hpp"

namespace afem::apps::mpm {

/// The particles' state copied to the host: D values per particle for positions and velocities,
/// D x D row-major per particle for the affine velocity C and the deformation gradient F.
struct ParticleState {
  std::vector<double> positions;
  std::vector<double> velocities;
  std::vector<double> affine;
  std::vector<double> deformation;
  std::vector<double> masses;
};

/// The grid's state copied to the host: mass and velocity (D values) per grid vertex, vertices
/// numbered x fastest.
struct GridState {
  std::vector<double> masses;
  std::vector<double> velocities;
};

/// An MPM simulation of one scene. Owns, in `pool`, the particles' positions, velocities, affine
/// velocities, deformation gradients and volumes ("Mpm.*"), the grid's mass and velocity fields,
/// the spaces on the grid, the partition of the active cells (those holding particles, selected
/// anew every step), the spaces' restrictions to it and the PicQuadrature over it; all are sized
/// at construction for every cell and particle, so the per-step rebuilds through replace_owned
/// reuse the same blocks, and all are released when the simulation is destroyed. Scratch
/// comes from `step_arena`, which step() resets when it returns: it is the simulation's per-step
/// arena. After the first step a step takes nothing from the pool.
template <int D>
class Simulation {
public:
  using Grid = geometry::Grid<D>;
  using ScalarSpace = fem::LagrangeSpace<Grid, 1, 1>;
  using VectorSpace = fem::LagrangeSpace<Grid, 1, D>;

  /// Sets the scene up. Throws afem::Error when the scene's dimension is not D.
  Simulation(const Scene& scene, memory::Pool& pool, memory::Arena& step_arena);

  /// One time step: rebin, particle_to_grid, update_grid, grid_to_particle; then resets the step
  /// arena.
  void step();

  /// The parts of a step, in order (for benchmarks and tests; step() calls them). rebin selects
  /// the active cells, restricts the spaces to them and bins the particles there.
  void rebin();
  void particle_to_grid();
  void update_grid();
  void grid_to_particle();

  [[nodiscard]] const Scene& scene() const { return scene_; }
  [[nodiscard]] const Grid& grid() const { return grid_; }
  [[nodiscard]] std::int32_t particle_count() const { return particle_count_; }
  [[nodiscard]] std::int64_t steps_taken() const { return steps_; }
  [[nodiscard]] double time() const { return static_cast<double>(steps_) * scene_.dt; }
  [[nodiscard]] const quadrature::PicQuadrature<Grid>& quadrature() const { return quadrature_; }
  /// The cells that held particles at the last rebin().
  [[nodiscard]] const geometry::CellBasedGeometryPartition<Grid>& active_cells() const {
    return active_partition_;
  }
  [[nodiscard]] memory::Pool& pool() const { return *pool_; }
  [[nodiscard]] memory::Arena& step_arena() const { return *arena_; }

  /// Copies the particles' state to the host (waits for the pool's stream).
  [[nodiscard]] ParticleState particles() const;
  /// Copies the grid's mass and velocity after the last update_grid() to the host.
  [[nodiscard]] GridState grid_state() const;

private:
  /// Grid velocity = momentum / mass + gravity_dt along y, with the walls (velocity_ holds the
  /// momentum on entry).
  void apply_grid_velocity(double gravity_dt);

  Scene scene_;
  memory::Pool* pool_;
  memory::Arena* arena_;
  Grid grid_;
  std::int32_t particle_count_ = 0;
  std::int64_t steps_ = 0;
  memory::Temporary<double> positions_;
  memory::Temporary<double> velocities_;
  memory::Temporary<double> affine_;
  memory::Temporary<double> deformation_;
  memory::Temporary<double> volumes_;
  ScalarSpace scalar_space_;
  VectorSpace vector_space_;
  geometry::CellBasedGeometryPartition<Grid> active_partition_;
  quadrature::Cells<Grid> active_cells_;
  fem::SpaceRestriction<ScalarSpace, quadrature::Cells<Grid>> scalar_restriction_;
  fem::SpaceRestriction<VectorSpace, quadrature::Cells<Grid>> vector_restriction_;
  fem::DiscreteField<ScalarSpace> mass_;
  fem::DiscreteField<VectorSpace> velocity_;
  quadrature::PicQuadrature<Grid> quadrature_;
};

extern template class Simulation<2>;
extern template class Simulation<3>;

}  // namespace afem::apps::mpm
