#pragma once

/// @file
/// Simulation<D>: explicit MPM on a regular grid, written with the fem layer: particles are the
/// quadrature points of a PicQuadrature, particle-to-grid transfers are linear forms assembled by
/// integrate() (mass, and momentum with the stress's force, in one pass). On Q1 (APIC) the
/// grid-to-particle transfer reads the grid velocity at the particles in the prepare() of a
/// remap's linear form, which maps their momentum back to the grid, and interpolate()s the
/// remapped velocity's gradient there; on quadratic B-splines (MLS-MPM) one interpolate() gives
/// each particle its velocity and affine velocity from the grid velocity's value and first moment,
/// and the momentum form reads the basis's constant moment matrix instead of its gradients. All
/// sums run in a fixed order (cell-sorted particles, per-node sums in element order), so a run is
/// bitwise the same across runs and OpenMP thread counts. Set up from a Setup (apps/mpm/setup.hpp);
/// embedders link arenafem::mpm.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arenafem/apps/mpm/material.hpp"
#include "arenafem/apps/mpm/setup.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh_data.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/pool.hpp"

namespace afem::apps::mpm {

/// The particles' state copied to the host: D values per particle for positions and velocities,
/// D x D row-major per particle for the affine velocity C and the deformation gradient F.
struct ParticleState {
  std::vector<double> positions;
  std::vector<double> velocities;
  std::vector<double> affine;
  std::vector<double> deformation;
  std::vector<double> masses;
  std::vector<std::int32_t> materials;
};

/// The particles' state where the kernels keep it (the pool's memory: the GPU's in the CUDA
/// build), one entry per particle in the simulation's current order (which changes when a step
/// sorts the particles into cell order, see Simulation::set_particle_sort_interval()): D values
/// per particle for positions, velocities and forces, D x D row-major for the affine velocity C
/// and the deformation gradient F. The views stay valid until the particle count changes (a step
/// that removes particles leaving through an open face, add_particles, remove_particles,
/// load_checkpoint) or the simulation is destroyed. Write them between steps only, keep positions
/// inside the domain box (a particle past an open face is removed at the next step) and material
/// indices in range. On CUDA a step returns with its work queued on the pool's stream: read or
/// write the views in that stream's order (memory::copy_to_host/copy_to_device on it).
struct ParticleViews {
  memory::ArrayView<double> positions;
  memory::ArrayView<double> velocities;
  memory::ArrayView<double> affine;
  memory::ArrayView<double> deformation;
  /// Reference volume of each particle (its mass over its material's density).
  memory::ArrayView<double> volumes;
  /// Index into Setup::materials of each particle; keep it in range.
  memory::ArrayView<std::int32_t> materials;
  /// External force on each particle in newtons, added to its momentum every step; empty unless
  /// Setup::external_forces.
  memory::ArrayView<double> forces;
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
  /// The incompressible fluid's velocity on the Q1 grid, which is staggered: component d on the
  /// centres of the faces normal to axis d (numbered as MacLattice<D> numbers them); empty for
  /// the other runs. `velocities` then holds it averaged to the vertices.
  std::array<std::vector<double>, 3> faces;
};

/// How Simulation::step() runs.
/// - direct: every part runs as it is called, over the cells that hold particles (selected anew
///   each step).
/// - captured: the step runs as the captured step of a memory::CaptureCache, a CUDA graph on a
///   GPU and the recorded list of its launches on the CPU, over every cell of the grid (a fixed
///   shape: selecting the active cells reads their count back, which a graph cannot). Particles
///   come out bitwise the same as in direct mode. The first two steps, and each step whose
///   particle count exceeds every count before, run directly to size the capture's scratch and
///   leave the binning's buffers in the pool's cache (sizing steps); a step whose particle count
///   differs from the capture's releases it and captures anew (a recapture), so a run that loses
///   particles through an open face every few steps recaptures as often. Removal through an open
///   face runs before the captured part. The incompressible fluid cannot be captured (its solve
///   reads residuals back).
enum class StepMode : std::uint8_t { direct, captured };

/// Counters of a Simulation's captured steps.
struct CaptureReport {
  std::uint64_t captures = 0;      ///< steps captured, the first included
  std::uint64_t recaptures = 0;    ///< captures after the first (after a count change, or a
                                   ///< release by a direct step or a failed capture)
  std::uint64_t replays = 0;       ///< captured steps run (a capture replays once)
  std::uint64_t sizing_steps = 0;  ///< fixed-shape steps run directly to size the scratch
  std::size_t retained_bytes = 0;  ///< pool bytes the live capture holds (its scratch)
};

/// The sum of grid values at the nodes that particles of other processes also reach (the
/// distributed simulation's border sum, apps/mpm/distributed_simulation.hpp). A step given one
/// (Simulation::set_border_sum) calls it twice: after particle_to_grid's integrals with the nodes'
/// mass (one value per node) and momentum (D values per node), and in grid_to_particle with the
/// momentum remapped from the particles (`mass` empty). Nodes are numbered x fastest. It adds to
/// each shared node what the other processes hold there; it may throw to stop the step.
class BorderSum {
public:
  virtual ~BorderSum() = default;
  virtual void add_shared(memory::ArrayView<double> mass, memory::ArrayView<double> momentum) = 0;

protected:
  BorderSum() = default;
  BorderSum(const BorderSum&) = default;
  BorderSum& operator=(const BorderSum&) = default;
  BorderSum(BorderSum&&) = default;
  BorderSum& operator=(BorderSum&&) = default;
};

/// The grid `setup` describes (D of its axes): cubes of Setup::cell_size() from its origin,
/// Setup::cells(d) of them along axis d. Does not validate the setup.
template <int D>
geometry::Grid<D> setup_grid(const Setup& setup);

struct Checkpoint;

namespace detail {
template <int D>
class SimulationState;
}  // namespace detail

/// Steps between the sorts of a Simulation's particles into cell order, unless
/// Simulation::set_particle_sort_interval() says otherwise.
inline constexpr int default_particle_sort_interval = 16;

/// An MPM simulation of one Setup, behind a plain C++ interface (the kernels are compiled in the
/// library, so a program that embeds it needs no CUDA compiler). Owns, in `pool`, the particles'
/// positions, velocities, affine velocities, deformation gradients, volumes, material indices and
/// (when asked for) external forces ("Mpm.*", sized for Setup's capacity), the materials, the
/// grid's mass and velocity fields, the spaces on the grid, the partition of the active cells
/// (those holding particles, selected anew every step), the scalar space's restriction to it (the
/// vector forms read it with D components) and the PicQuadrature over it; all are sized at
/// construction for every cell and for the capacity, so the per-step rebuilds through
/// replace_owned reuse the same blocks while particles come and go, and all are released when the
/// simulation is destroyed. Scratch comes from `step_arena` (on the pool's stream), which step()
/// resets when it returns: it is the simulation's per-step arena. A step's scratch grows with the
/// particle count: once the run has held its largest count (after the first two steps when the
/// count does not change), a step takes nothing from the pool.
template <int D>
class Simulation {
public:
  /// Sets the simulation up. Throws afem::Error naming the field when validate_setup() refuses
  /// `setup` or its dimension is not D.
  Simulation(const Setup& setup, memory::Pool& pool, memory::Arena& step_arena);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;
  Simulation(Simulation&&) = delete;
  Simulation& operator=(Simulation&&) = delete;

  /// One time step: rebin, particle_to_grid, update_grid, grid_to_particle (as step_mode() says);
  /// then resets the step arena. A step whose count (steps_taken() before it) is a multiple of
  /// particle_sort_interval() ends with sort_particles(); its scratch is borrowed first, so a
  /// step that throws leaves the particles as they were.
  void step();
  /// Selects how step() runs (StepMode::direct at construction). Throws afem::Error for
  /// StepMode::captured on the incompressible fluid, or when the pool runs on CUDA's legacy
  /// default stream (give it a memory::OwnedStream). Leaving captured mode, rebin() and
  /// destruction release the captured step, waiting for its queued work first. A capture that
  /// throws (out of memory) keeps nothing, and the next step sizes and captures anew.
  void set_step_mode(StepMode mode);
  /// How step() runs.
  [[nodiscard]] StepMode step_mode() const;
  /// Makes every step call `sum` (not owned: it must outlive the simulation or be unset with
  /// nullptr) to add the values other processes hold at shared grid nodes. Throws afem::Error in
  /// StepMode::captured: a captured step cannot call out.
  void set_border_sum(BorderSum* sum);
  /// The captured steps' counters (zeros in direct mode before any capture).
  [[nodiscard]] CaptureReport capture_report() const;

  /// The parts of a step, in order (for benchmarks and tests; step() calls them). rebin removes
  /// the particles that left the domain box (through an open face), locates the others, selects
  /// the cells that hold them, restricts the spaces to those and bins the particles there.
  void rebin();
  /// Reorders the particle arrays into the order the last rebin() binned them in: cell by cell
  /// (a cell's particles in their previous order, those outside the grid last), so that the
  /// transfers, which run cell by cell, read neighbouring memory. A particle's index changes, its
  /// state does not; the binning then refers to the old indices, so particle_to_grid() and
  /// grid_to_particle() throw afem::Error until rebin() runs. Throws afem::Error, changing
  /// nothing, when particles were added or removed since the last rebin() or the step arena
  /// cannot hold a copy of the particles.
  void sort_particles();
  /// Makes step() sort the particles at its end whenever steps_taken() is a multiple of `steps`, in
  /// direct and captured mode alike (default_particle_sort_interval at construction; 0: never,
  /// so that indices change only when particles are removed). Not part of a checkpoint: a resumed
  /// run continues bitwise when it sorts at the same interval. Throws afem::Error for a negative
  /// count.
  void set_particle_sort_interval(int steps);
  [[nodiscard]] int particle_sort_interval() const;
  void particle_to_grid();
  void update_grid();
  void grid_to_particle();

  /// The setup it runs (its `particles` left empty: the state is on the device), with the time
  /// step resolved in `dt`.
  [[nodiscard]] const Setup& setup() const;
  [[nodiscard]] std::int32_t particle_count() const;
  /// The most particles it can hold (Setup::particle_capacity()).
  [[nodiscard]] std::int32_t capacity() const;
  /// Particles removed because they left the domain box, over the whole run.
  [[nodiscard]] std::int64_t particles_left() const;
  [[nodiscard]] std::int64_t steps_taken() const;
  [[nodiscard]] double time() const;
  /// Cells that held particles at the last rebin() (in captured mode: every cell of the grid).
  [[nodiscard]] std::int32_t active_cell_count() const;
  /// Particles outside the grid at the last rebin() (with an open face, 0: rebin() first removes
  /// those that left); reads one value back from the device.
  [[nodiscard]] std::int32_t outside_count() const;
  /// The last pressure solve of the incompressible fluid (zeros for other materials).
  [[nodiscard]] PressureSolve pressure_solve() const;
  /// The grid as a quadrilateral or hexahedron mesh on the host (for output).
  [[nodiscard]] geometry::MeshData grid_mesh() const;
  [[nodiscard]] memory::Pool& pool() const;
  [[nodiscard]] memory::Arena& step_arena() const;

  /// Copies the particles' state to the host (waits for the pool's stream).
  [[nodiscard]] ParticleState particles() const;
  /// The particles' state in the pool's memory, to read or write between steps.
  [[nodiscard]] ParticleViews particle_views();

  /// Appends `batch` after the current particles (zero affine velocity and force, deformation
  /// J^(1/D) I). Throws afem::Error, changing nothing, when check_particles() refuses the batch or
  /// it would take the count past the capacity. Call it between steps: it resets the step arena
  /// (handles borrowed from it go stale).
  void add_particles(const ParticleBatch& batch);
  /// Appends `count` particles and returns the views of the new particles alone, for the caller to
  /// write their whole state (positions, velocities, affine velocities, deformations, volumes,
  /// materials, forces) before the next step: to move particles from another simulation with their
  /// history. Their entries hold stale values until written. Throws afem::Error, changing
  /// nothing, when the count is negative or would pass the capacity.
  ParticleViews add_particle_slots(std::int32_t count);
  /// Removes the particles whose entry in `remove` is not 0 (one per particle, in the pool's
  /// memory, not the step arena's), keeping the others in their order. Throws afem::Error, changing
  /// nothing, when `remove` does not hold particle_count() entries. Call it between steps: it
  /// resets the step arena.
  void remove_particles(memory::ArrayView<const std::uint8_t> remove);

  /// Writes the whole state (setup, step count, particles, the pressure solve's warm start) to
  /// `path` in the checkpoint format of apps/mpm/checkpoint.hpp; a run resumed from it with
  /// load_checkpoint() continues bitwise as this one would. Throws afem::Error when the file
  /// cannot be written.
  void save_checkpoint(const std::string& path) const;
  /// Replaces the state with the one saved in `path` (read_checkpoint(), then restore()).
  /// Throws afem::Error naming the file, and leaves the simulation unchanged, when the file is
  /// missing, truncated, corrupted (checksum), of another format version, or restore() refuses it.
  void load_checkpoint(const std::string& path);
  /// Replaces the state with `checkpoint`'s. Its setup must be this simulation's setup() (set the
  /// simulation up from `checkpoint.setup` to resume a run); throws afem::Error naming the first
  /// field that differs, or an array that disagrees with the particle count, and changes nothing.
  void restore(const Checkpoint& checkpoint);
  /// Copies the grid's mass and velocity to the host as the last part of a step left them: after
  /// update_grid() the updated (for the incompressible fluid, projected) velocity; after
  /// grid_to_particle() or step() the velocity remapped from the particles on Q1, the updated one
  /// on B-splines (what frames show).
  [[nodiscard]] GridState grid_state() const;

private:
  std::unique_ptr<detail::SimulationState<D>> state_;
};

extern template class Simulation<2>;
extern template class Simulation<3>;

}  // namespace afem::apps::mpm
