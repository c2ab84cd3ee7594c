#pragma once

/// @file
/// DistributedSimulation<D>: an MPM Simulation split over the ranks of a communicator (built with
/// ARENAFEM_MPI, CPU backend). The grid is cut into slabs of whole cell layers along its last axis
/// (y in 2D, z in 3D), one per rank, cut so that the ranks start with about as many particles each;
/// each rank runs a Simulation on its slab and holds the particles in it. Each step
/// - moves the particles that left a slab to the rank whose slab holds them, with their whole
///   state (one message per pair of ranks that trade particles);
/// - after particle-to-grid, sums the mass and momentum of the nodes that two neighbouring slabs
///   share (one layer of vertices for Q1, two layers of cell centres for B-splines), and on Q1 the
///   same for the momentum remapped in grid-to-particle;
/// so the particles follow the serial run's to round-off (the shared nodes add their two parts in
/// another order than the serial sum), and a run is bitwise the same from one run to the next for
/// a given rank count. A failure on any rank during a step (an exhausted arena, a rank out of
/// capacity) stops every rank with the same afem::memory::CollectiveError.

#ifndef ARENAFEM_WITH_MPI
#error "arenafem/apps/mpm/distributed_simulation.hpp needs a build with ARENAFEM_MPI=ON"
#endif

#include <cstdint>
#include <memory>
#include <vector>

#include "arenafem/apps/mpm/setup.hpp"
#include "arenafem/apps/mpm/simulation.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/communicator.hpp"
#include "arenafem/memory/pool.hpp"

namespace afem::apps::mpm {

/// How a DistributedSimulation sizes each rank's part.
struct DistributedOptions {
  /// Particles one rank can hold; 0: the setup's capacity, so that any rank can hold every
  /// particle. A step that would bring more to a rank stops every rank with an error naming it.
  std::int64_t rank_capacity = 0;
};

/// The cell layers [first, last) along the last axis that a rank's slab of the grid holds.
struct Slab {
  std::int32_t first = 0;
  std::int32_t last = 0;
};

/// This rank's messages since construction.
struct TrafficReport {
  std::int64_t particles_sent = 0;
  std::int64_t particles_received = 0;
  std::int64_t particle_bytes_sent = 0;
  /// Bytes this rank sends its neighbours in a step's border sums (after particle-to-grid, and on
  /// Q1 after the remap).
  std::int64_t border_bytes_per_step = 0;
  /// Bytes this rank has sent its neighbours in border sums since construction.
  std::int64_t border_bytes_sent = 0;
};

/// The fewest cell layers a slab may have: 2 * Setup::boundary_cells + 4, so that no grid node
/// is near both faces of its slab.
int min_slab_layers(const Setup& setup);

/// The slabs of `ranks` ranks over `setup`'s grid: whole cell layers along the last axis, at
/// least min_slab_layers() each, cut where the initial particles split most evenly (in the middle
/// of the empty layers where several cuts split them the same). Throws
/// afem::Error when the grid has too few layers for that many ranks.
std::vector<Slab> cut_slabs(const Setup& setup, int ranks);

namespace detail {
template <int D>
class DistributedState;
}  // namespace detail

/// An MPM run over the ranks of `comm`: this rank's slab, its Simulation and its particles. Owns,
/// in `pool`, the local Simulation (whose ownership is Simulation's), each local particle's number
/// ("MpmDistributed.particle_numbers"), the migration's flags, destinations and message buffers
/// (sized for the rank's capacity) and the border sums' buffers, all released when it is
/// destroyed; a step takes nothing from the pool after the local Simulation's warm-up. Every
/// member is collective (every rank calls it, in the same order) unless its comment says
/// otherwise.
template <int D>
class DistributedSimulation {
public:
  /// Sets up this rank's part of `setup`, which every rank passes whole (the same on every rank:
  /// checked). Throws CollectiveError on every rank when a rank cannot: validate_setup() refuses
  /// the setup, its dimension is not D, its material is the incompressible fluid (its pressure
  /// solve runs on one process), the build runs on CUDA, the grid has too few cell layers for the
  /// ranks, the setups differ, or a rank's initial particles pass its capacity.
  DistributedSimulation(const Setup& setup, const memory::Communicator& comm, memory::Pool& pool,
                        memory::Arena& step_arena, const DistributedOptions& options = {});
  ~DistributedSimulation();
  DistributedSimulation(const DistributedSimulation&) = delete;
  DistributedSimulation& operator=(const DistributedSimulation&) = delete;
  DistributedSimulation(DistributedSimulation&&) = delete;
  DistributedSimulation& operator=(DistributedSimulation&&) = delete;

  /// One time step: particles move to the ranks whose slabs hold them (those that left the box
  /// through an open face are removed), then the local Simulation steps with the border sums.
  void step();

  /// This rank's Simulation (not collective); step it through step() only.
  [[nodiscard]] Simulation<D>& local();
  [[nodiscard]] const Simulation<D>& local() const;
  /// Every rank's slab, in rank order (not collective).
  [[nodiscard]] const std::vector<Slab>& slabs() const;
  /// The number of each of this rank's particles: its index in the setup's initial particles (not
  /// collective).
  [[nodiscard]] memory::ArrayView<const std::int64_t> particle_numbers() const;
  /// Particles over every rank.
  [[nodiscard]] std::int64_t particle_count() const;
  /// Particles removed over the run because they left the box, over every rank.
  [[nodiscard]] std::int64_t particles_left() const;
  /// Every particle's state on rank `root`, in the order of their numbers (the serial run's order:
  /// it removes particles keeping the order of the others); empty on the other ranks.
  [[nodiscard]] ParticleState gather_particles(int root = 0) const;
  /// This rank's messages so far (not collective).
  [[nodiscard]] TrafficReport traffic() const;
  [[nodiscard]] std::int64_t steps_taken() const;
  [[nodiscard]] double time() const;

private:
  std::unique_ptr<detail::DistributedState<D>> state_;
};

extern template class DistributedSimulation<2>;
extern template class DistributedSimulation<3>;

}  // namespace afem::apps::mpm
