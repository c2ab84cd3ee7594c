#pragma once

/// @file
/// Simulation<D>: explicit MPM with APIC transfers on a regular grid, written with the fem layer:
/// particles are the quadrature points of a PicQuadrature, particle-to-grid transfers are linear
/// forms assembled by integrate() (mass, and momentum with the stress divergence in one form),
/// grid-to-particle transfers read the grid velocity at the particles (in the prepare() of the
/// remap's linear form, which maps their momentum back to the grid) and interpolate() the
/// remapped velocity's gradient there. All sums run in a fixed order (cell-sorted particles,
/// per-node sums in element order), so a run is bitwise the same across runs and OpenMP thread
/// counts.

#include <cstdint>
#include <memory>
#include <vector>

#include "apps/mpm/material.hpp"
#include "apps/mpm/scene.hpp"
#include "geometry/mesh_data.hpp"
#include "memory/arena.hpp"
#include "memory/pool.hpp"

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

/// CG iterations, final relative residual and divergence left by a pressure projection.
struct PressureSolve {
  int iterations = 0;
  double residual = 0.0;
  /// ||B u|| / ||B u*||: the discrete divergence (over the fluid cells) left by the projection,
  /// relative to the one before it.
  double divergence = 0.0;
};

/// The grid's state copied to the host: mass and velocity (D values) per grid vertex, vertices
/// numbered x fastest.
struct GridState {
  std::vector<double> masses;
  std::vector<double> velocities;
};

namespace detail {
template <int D>
class SimulationState;
}  // namespace detail

/// An MPM simulation of one scene, behind a plain C++ interface (the kernels are compiled in the
/// library, so a program that embeds it needs no CUDA compiler). Owns, in `pool`, the particles'
/// positions, velocities, affine velocities, deformation gradients and volumes ("Mpm.*"), the
/// grid's mass and velocity fields, the spaces on the grid, the partition of the active cells
/// (those holding particles, selected anew every step), the scalar space's restriction to it (the
/// vector forms read it with D components) and the PicQuadrature over it; all are sized at
/// construction for every cell and particle, so the per-step rebuilds through replace_owned reuse
/// the same blocks, and all are released when the simulation is destroyed. Scratch comes from
/// `step_arena`, which step() resets when it returns: it is the simulation's per-step arena. After
/// the first step a step takes nothing from the pool.
template <int D>
class Simulation {
public:
  /// Sets the scene up. Throws afem::Error when the scene's dimension is not D or its particle
  /// arrays disagree in size.
  Simulation(const Scene& scene, memory::Pool& pool, memory::Arena& step_arena);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;
  Simulation(Simulation&&) = delete;
  Simulation& operator=(Simulation&&) = delete;

  /// One time step: rebin, particle_to_grid, update_grid, grid_to_particle; then resets the step
  /// arena.
  void step();

  /// The parts of a step, in order (for benchmarks and tests; step() calls them). rebin locates
  /// the particles, selects the cells that hold them, restricts the spaces to those and bins the
  /// particles there.
  void rebin();
  void particle_to_grid();
  void update_grid();
  void grid_to_particle();

  [[nodiscard]] const Scene& scene() const;
  [[nodiscard]] std::int32_t particle_count() const;
  [[nodiscard]] std::int64_t steps_taken() const;
  [[nodiscard]] double time() const;
  /// Cells that held particles at the last rebin().
  [[nodiscard]] std::int32_t active_cell_count() const;
  /// Particles outside the grid at the last rebin() (the walls keep them in: 0); reads one value
  /// back from the device.
  [[nodiscard]] std::int32_t outside_count() const;
  /// The last pressure solve of the incompressible fluid (zeros for other materials).
  [[nodiscard]] PressureSolve pressure_solve() const;
  /// The grid as a quadrilateral or hexahedron mesh on the host (for output).
  [[nodiscard]] geometry::MeshData grid_mesh() const;
  [[nodiscard]] memory::Pool& pool() const;
  [[nodiscard]] memory::Arena& step_arena() const;

  /// Copies the particles' state to the host (waits for the pool's stream).
  [[nodiscard]] ParticleState particles() const;
  /// Copies the grid's mass and velocity to the host as the last part of a step left them: after
  /// update_grid() the updated (for the incompressible fluid, projected) velocity; after
  /// grid_to_particle() or step() the velocity remapped from the particles (what frames show).
  [[nodiscard]] GridState grid_state() const;

private:
  std::unique_ptr<detail::SimulationState<D>> state_;
};

extern template class Simulation<2>;
extern template class Simulation<3>;

}  // namespace afem::apps::mpm
