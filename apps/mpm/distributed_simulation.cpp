// DistributedSimulation<D>: slabs, particle migration and border sums over MPI ranks.
#include "arenafem/apps/mpm/distributed_simulation.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <utility>

#include "arenafem/geometry/grid.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"

namespace afem::apps::mpm {

namespace {

/// Message tags of the particles and of the border sums.
constexpr int particle_tag = 7201;
constexpr int border_tag = 7202;

/// The cell layer along the last axis of each initial particle (clamped to the grid).
std::vector<std::int64_t> layer_counts(const Setup& setup) {
  const int axis = setup.dimension - 1;
  const std::int32_t layers = setup.cells(axis);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(layers), 0);
  const double h = setup.cell_size();
  const auto dim = static_cast<std::size_t>(setup.dimension);
  for (std::size_t p = 0; p < static_cast<std::size_t>(setup.particles.count()); ++p) {
    const double t = (setup.particles.positions[p * dim + dim - 1] -
                      setup.origin[static_cast<std::size_t>(axis)]) /
                     h;
    const auto layer =
        static_cast<std::int32_t>(std::clamp(std::floor(t), 0.0, static_cast<double>(layers - 1)));
    ++counts[static_cast<std::size_t>(layer)];
  }
  return counts;
}

/// A hash of what decides the run, to check that every rank was given the same setup.
std::int64_t setup_hash(const Setup& setup) {
  std::uint64_t hash = 1469598103934665603ULL;
  const auto mix = [&hash](const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) {
      hash = (hash ^ p[i]) * 1099511628211ULL;
    }
  };
  const auto values = [&mix](const auto& vector) {
    const auto size = static_cast<std::int64_t>(vector.size());
    mix(&size, sizeof size);
    mix(vector.data(), vector.size() * sizeof(vector[0]));
  };
  mix(&setup.dimension, sizeof setup.dimension);
  mix(setup.origin.data(), sizeof setup.origin);
  mix(setup.extent.data(), sizeof setup.extent);
  mix(&setup.resolution, sizeof setup.resolution);
  mix(&setup.basis, sizeof setup.basis);
  mix(setup.gravity.data(), sizeof setup.gravity);
  mix(setup.boundaries.data(), sizeof setup.boundaries);
  mix(&setup.boundary_cells, sizeof setup.boundary_cells);
  for (const Material& m : setup.materials) {
    mix(&m.kind, sizeof m.kind);
    for (const double constant : {m.density, m.youngs_modulus, m.poisson_ratio,
                                  m.friction_angle_degrees, m.bulk_modulus, m.tait_exponent}) {
      mix(&constant, sizeof constant);
    }
  }
  mix(&setup.dt, sizeof setup.dt);
  mix(&setup.cfl, sizeof setup.cfl);
  mix(&setup.capacity, sizeof setup.capacity);
  mix(&setup.external_forces, sizeof setup.external_forces);
  values(setup.particles.positions);
  values(setup.particles.velocities);
  values(setup.particles.volumes);
  values(setup.particles.volume_ratios);
  values(setup.particles.materials);
  return static_cast<std::int64_t>(hash >> 1U);
}

}  // namespace

int min_slab_layers(const Setup& setup) {
  return 2 * setup.boundary_cells + 4;
}

std::vector<Slab> cut_slabs(const Setup& setup, int ranks) {
  const int axis = setup.dimension - 1;
  const std::int32_t layers = setup.cells(axis);
  const int fewest = min_slab_layers(setup);
  AFEM_EXPECTS(ranks >= 1, "cut_slabs: " + std::to_string(ranks) + " ranks");
  if (static_cast<std::int64_t>(layers) < static_cast<std::int64_t>(ranks) * fewest) {
    throw Error("DistributedSimulation: the grid's " + std::to_string(layers) +
                " cell layers along " + (axis == 1 ? "y" : "z") + " give " + std::to_string(ranks) +
                " ranks fewer than " + std::to_string(fewest) +
                " layers each (2 * Setup.boundary_cells + 4); run on at most " +
                std::to_string(layers / fewest) + " ranks or refine the grid");
  }
  const std::vector<std::int64_t> counts = layer_counts(setup);
  std::vector<std::int64_t> below(counts.size() + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), below.begin() + 1);
  const std::int64_t total = below.back();
  std::vector<Slab> slabs(static_cast<std::size_t>(ranks));
  std::int32_t first = 0;
  for (int r = 0; r < ranks; ++r) {
    std::int32_t last = layers;
    if (r + 1 < ranks) {
      // The first cut at or past an even share of the particles (of the layers when there are
      // none), leaving every later rank its fewest layers.
      std::int32_t cut = 0;
      if (total > 0) {
        const std::int64_t share = total * (r + 1) / ranks;
        // Where no particle lies between several candidate cuts, the middle of them (stacked
        // bodies: the slabs then split the empty grid between them too).
        const auto low = std::lower_bound(below.begin(), below.end(), share);
        const auto high = std::upper_bound(low, below.end(), *low);
        cut = static_cast<std::int32_t>((low - below.begin()) + (high - 1 - low) / 2);
      } else {
        cut = static_cast<std::int32_t>(static_cast<std::int64_t>(layers) * (r + 1) / ranks);
      }
      last = std::clamp(cut, first + fewest, layers - (ranks - r - 1) * fewest);
    }
    slabs[static_cast<std::size_t>(r)] = {first, last};
    first = last;
  }
  return slabs;
}

namespace detail {

/// What a DistributedSimulation<D> owns: the slabs, the local Simulation, the particle numbers and
/// the message buffers; it is the local Simulation's border sum.
template <int D>
class DistributedState final : public BorderSum {
public:
  DistributedState(const Setup& setup, const memory::Communicator& comm, memory::Pool& pool,
                   memory::Arena& step_arena, const DistributedOptions& options);
  ~DistributedState() override {
    if (simulation_) {
      simulation_->set_border_sum(nullptr);
    }
  }
  DistributedState(const DistributedState&) = delete;
  DistributedState& operator=(const DistributedState&) = delete;
  DistributedState(DistributedState&&) = delete;
  DistributedState& operator=(DistributedState&&) = delete;

  void step();
  void add_shared(memory::ArrayView<double> mass, memory::ArrayView<double> momentum) override;
  [[nodiscard]] ParticleState gather(int root) const;

  /// The rank whose slab holds `x` (D values), or -1 outside the grid.
  [[nodiscard]] int owner(const double* x) const;
  /// Entries of a particle's D x D matrix, as a pointer offset.
  static constexpr std::ptrdiff_t matrix_size = std::ptrdiff_t{D} * D;
  /// Values per particle in a message: number, position, velocity, affine, deformation, volume,
  /// material[, force].
  [[nodiscard]] std::size_t record_width() const {
    return 3 + 2 * D + 2 * D * D + (external_forces_ ? D : 0);
  }

  const memory::Communicator* comm_;
  std::vector<Slab> slabs_;
  geometry::Grid<D> whole_grid_;
  std::int32_t cells_per_layer_ = 1;
  bool external_forces_ = false;
  /// Whether some face of the whole box is open (particles may leave it).
  bool open_box_ = false;
  /// The box's origin along the slabs' axis, one over the cell size, and this slab's layers
  /// shrunk by a margin that no rounding crosses (particles between them are this rank's).
  double slab_origin_ = 0.0;
  double inverse_cell_size_ = 1.0;
  double inner_first_ = 0.0;
  double inner_last_ = 0.0;
  std::unique_ptr<Simulation<D>> simulation_;
  std::int64_t left_ = 0;
  TrafficReport traffic_;
  memory::Temporary<std::int64_t> numbers_;
  memory::Temporary<std::uint8_t> leaving_;
  memory::Temporary<std::int32_t> destinations_;
  memory::Temporary<double> outgoing_;
  memory::Temporary<double> incoming_;
  /// Nodes per layer of the grid space, layers of nodes shared with a neighbour, node layers.
  std::size_t layer_nodes_ = 0;
  std::size_t shared_layers_ = 1;
  std::size_t node_layers_ = 0;
  /// Border values sent to, and received from, the lower and the upper neighbour.
  std::array<memory::Temporary<double>, 2> border_out_;
  std::array<memory::Temporary<double>, 2> border_in_;
  /// Per rank: particles to send, particles to receive, where each rank's part of outgoing_ starts.
  std::vector<std::int64_t> send_counts_;
  std::vector<std::int64_t> receive_counts_;
  std::vector<std::int64_t> send_offsets_;
  std::vector<memory::MessageRange> send_ranges_;
  std::vector<memory::MessageRange> receive_ranges_;
  std::vector<MPI_Request> requests_;

private:
  void migrate();
};

/// Checks `setup` for a distributed run (the same on every rank), then cuts its slabs.
template <int D>
std::vector<Slab> checked_slabs(const Setup& setup, const memory::Communicator& comm) {
  std::vector<Slab> slabs;
  comm.collective([&] {
    AFEM_EXPECTS(setup.dimension == D, "DistributedSimulation<" + std::to_string(D) +
                                           ">: Setup.dimension is " +
                                           std::to_string(setup.dimension));
    validate_setup(setup);
    AFEM_EXPECTS(!has_cuda,
                 "DistributedSimulation: runs on the CPU backend (a CUDA build does not move "
                 "particles between ranks yet)");
    AFEM_EXPECTS(setup.materials[0].kind != MaterialKind::incompressible_fluid,
                 "DistributedSimulation: the incompressible fluid's pressure solve runs on one "
                 "process; run it without mpirun");
    slabs = cut_slabs(setup, comm.size());
  });
  const std::int64_t hash = setup_hash(setup);
  comm.raise_if_any_failed(comm.max(hash) != -comm.max(-hash)
                               ? "DistributedSimulation: the ranks were given different setups "
                                 "(every rank passes the whole, same Setup)"
                               : std::string());
  return slabs;
}

/// This rank's part of `setup`: its slab of the grid (the faces between slabs open) and the
/// initial particles in it, whose numbers go to `numbers`.
inline Setup slab_setup(const Setup& setup, const std::vector<Slab>& slabs, int rank,
                        const DistributedOptions& options, std::vector<std::int64_t>& numbers,
                        const std::function<int(const double*)>& owner) {
  const auto axis = static_cast<std::size_t>(setup.dimension - 1);
  const Slab slab = slabs[static_cast<std::size_t>(rank)];
  Setup local = setup;
  local.particles = ParticleBatch{};
  const double h = setup.cell_size();
  local.origin[axis] = setup.origin[axis] + slab.first * h;
  // The last slab ends where the box does (the serial run's upper wall), the others a whole
  // number of cells up.
  const bool last = rank + 1 == static_cast<int>(slabs.size());
  local.extent[axis] = last ? setup.origin[axis] + setup.extent[axis] - local.origin[axis]
                            : (slab.last - slab.first) * h;
  const double low = local.origin[axis];
  const double high = local.origin[axis] + (slab.last - slab.first) * h;
  if (rank > 0) {
    local.boundaries[2 * axis] = Boundary::open;
  }
  if (rank + 1 < static_cast<int>(slabs.size())) {
    local.boundaries[2 * axis + 1] = Boundary::open;
  }
  local.dt = setup.time_step();
  local.capacity = options.rank_capacity > 0 ? options.rank_capacity : setup.particle_capacity();
  const ParticleBatch& all = setup.particles;
  const auto dim = static_cast<std::size_t>(setup.dimension);
  for (std::size_t p = 0; p < static_cast<std::size_t>(all.count()); ++p) {
    if (owner(&all.positions[p * dim]) != rank) {
      continue;
    }
    numbers.push_back(static_cast<std::int64_t>(p));
    for (std::size_t d = 0; d < dim; ++d) {
      // A particle on a cut may round an ulp outside the slab that owns it: it moves onto it.
      const double x = all.positions[p * dim + d];
      local.particles.positions.push_back(d == axis ? std::clamp(x, low, high) : x);
      local.particles.velocities.push_back(all.velocities[p * dim + d]);
    }
    local.particles.volumes.push_back(all.volumes[p]);
    if (!all.volume_ratios.empty()) {
      local.particles.volume_ratios.push_back(all.volume_ratios[p]);
    }
    if (!all.materials.empty()) {
      local.particles.materials.push_back(all.materials[p]);
    }
  }
  if (static_cast<std::int64_t>(numbers.size()) > local.capacity) {
    throw Error("DistributedSimulation: rank " + std::to_string(rank) + " starts with " +
                std::to_string(numbers.size()) + " particles, more than its capacity of " +
                std::to_string(local.capacity) + " (DistributedOptions::rank_capacity)");
  }
  return local;
}

template <int D>
DistributedState<D>::DistributedState(const Setup& setup, const memory::Communicator& comm,
                                      memory::Pool& pool, memory::Arena& step_arena,
                                      const DistributedOptions& options)
    : comm_(&comm),
      slabs_(checked_slabs<D>(setup, comm)),
      whole_grid_(setup_grid<D>(setup)),
      external_forces_(setup.external_forces),
      open_box_(std::any_of(setup.boundaries.begin(),
                            setup.boundaries.begin() + std::ptrdiff_t{2} * D,
                            [](Boundary b) { return b == Boundary::open; })) {
  for (int d = 0; d + 1 < D; ++d) {
    cells_per_layer_ *= setup.cells(d);
  }
  const Slab mine = slabs_[static_cast<std::size_t>(comm.rank())];
  slab_origin_ = setup.origin[D - 1];
  inverse_cell_size_ = 1.0 / setup.cell_size();
  inner_first_ = mine.first + 1e-6;
  inner_last_ = mine.last - 1e-6;
  const auto ranks = static_cast<std::size_t>(comm.size());
  send_counts_.assign(ranks, 0);
  receive_counts_.assign(ranks, 0);
  send_offsets_.assign(ranks, 0);
  send_ranges_.reserve(ranks);
  receive_ranges_.reserve(ranks);
  requests_.reserve(2 * ranks + 4);
  comm.collective([&] {
    std::vector<std::int64_t> numbers;
    const Setup local = slab_setup(setup, slabs_, comm.rank(), options, numbers,
                                   [this](const double* x) { return owner(x); });
    simulation_ = std::make_unique<Simulation<D>>(local, pool, step_arena);
    // The particle numbers sit beside the local arrays, index for index.
    simulation_->set_particle_sort_interval(0);
    const auto capacity = static_cast<std::size_t>(simulation_->capacity());
    memory::replace_owned(numbers_, memory::borrow_temporary<std::int64_t>(
                                        pool, capacity, "MpmDistributed.particle_numbers"));
    std::copy(numbers.begin(), numbers.end(), numbers_.view().begin());
    memory::replace_owned(leaving_, memory::borrow_temporary<std::uint8_t>(
                                        pool, capacity, "MpmDistributed.migration"));
    memory::replace_owned(destinations_, memory::borrow_temporary<std::int32_t>(
                                             pool, capacity, "MpmDistributed.migration"));
    memory::replace_owned(outgoing_,
                          memory::borrow_temporary<double>(pool, capacity * record_width(),
                                                           "MpmDistributed.migration"));
    memory::replace_owned(incoming_,
                          memory::borrow_temporary<double>(pool, capacity * record_width(),
                                                           "MpmDistributed.migration"));
    // Q1 nodes are the vertices (neighbours share one layer); B-spline nodes the cell centres
    // and a ghost layer (neighbours share two).
    const bool q1 = setup.basis == GridBasis::q1;
    const std::size_t extra = q1 ? 1 : 2;
    shared_layers_ = q1 ? 1 : 2;
    layer_nodes_ = 1;
    for (int d = 0; d + 1 < D; ++d) {
      layer_nodes_ *= static_cast<std::size_t>(setup.cells(d)) + extra;
    }
    const Slab slab = slabs_[static_cast<std::size_t>(comm.rank())];
    node_layers_ = static_cast<std::size_t>(slab.last - slab.first) + extra;
    const std::size_t border_values = shared_layers_ * layer_nodes_ * (1 + D);
    for (std::size_t side = 0; side < 2; ++side) {
      const int neighbour = comm.rank() + (side == 0 ? -1 : 1);
      if (neighbour < 0 || neighbour >= comm.size()) {
        continue;
      }
      memory::replace_owned(border_out_[side], memory::borrow_temporary<double>(
                                                   pool, border_values, "MpmDistributed.border"));
      memory::replace_owned(border_in_[side], memory::borrow_temporary<double>(
                                                  pool, border_values, "MpmDistributed.border"));
      // Mass and momentum after particle-to-grid; on Q1 the remapped momentum too.
      const std::size_t values_per_node = q1 ? 1 + 2 * D : 1 + D;
      traffic_.border_bytes_per_step += static_cast<std::int64_t>(shared_layers_ * layer_nodes_ *
                                                                  values_per_node * sizeof(double));
    }
    simulation_->set_border_sum(this);
  });
}

template <int D>
int DistributedState<D>::owner(const double* x) const {
  typename geometry::Grid<D>::View::Point at;
  for (int d = 0; d < D; ++d) {
    at[d] = x[d];
  }
  std::int32_t cell = -1;
  typename geometry::Grid<D>::View::Coords xi;
  if (!whole_grid_.view().locate(at, cell, xi)) {
    return -1;
  }
  const std::int32_t layer = cell / cells_per_layer_;
  const auto after = std::upper_bound(slabs_.begin(), slabs_.end(), layer,
                                      [](std::int32_t l, const Slab& s) { return l < s.last; });
  return static_cast<int>(after - slabs_.begin());
}

template <int D>
void DistributedState<D>::migrate() {
  const memory::Communicator& comm = *comm_;
  const int me = comm.rank();
  const std::size_t width = record_width();
  const std::size_t n = static_cast<std::size_t>(simulation_->particle_count());
  std::int64_t leaving = 0;
  comm.collective([&] {
    const ParticleViews views = simulation_->particle_views();
    const auto flags = leaving_.view();
    const auto destinations = destinations_.view();
    std::fill(send_counts_.begin(), send_counts_.end(), 0);
    for (std::size_t p = 0; p < n; ++p) {
      // Most particles stay well inside the slab along its axis: one product tells.
      const double layer = (views.positions[p * D + D - 1] - slab_origin_) * inverse_cell_size_;
      bool finite = true;
      for (int d = 0; d < D; ++d) {
        finite = finite && std::isfinite(views.positions[p * D + d]);
      }
      const int to = finite && !open_box_ && layer > inner_first_ && layer < inner_last_
                         ? me
                         : owner(&views.positions[p * D]);
      destinations[p] = to;
      flags[p] = to == me ? 0 : 1;
      leaving += flags[p];
      if (to < 0) {
        if (!open_box_) {
          throw Error("DistributedSimulation: particle " + std::to_string(numbers_.view()[p]) +
                      " is outside the closed box (at " + std::to_string(views.positions[p * D]) +
                      ", " + std::to_string(views.positions[p * D + 1]) +
                      " ...): the run has blown up; reduce Setup.dt or Setup.cfl");
        }
        ++left_;  // left the box through an open face
      } else if (to != me) {
        ++send_counts_[static_cast<std::size_t>(to)];
      }
    }
    std::exclusive_scan(send_counts_.begin(), send_counts_.end(), send_offsets_.begin(),
                        std::int64_t{0});
    const auto out = outgoing_.view();
    const auto numbers = numbers_.view();
    for (std::size_t p = 0; p < n; ++p) {
      const int to = destinations[p];
      if (to < 0 || to == me) {
        continue;
      }
      double* record =
          &out[static_cast<std::size_t>(send_offsets_[static_cast<std::size_t>(to)]++) * width];
      *record++ = static_cast<double>(numbers[p]);
      record = std::copy_n(&views.positions[p * D], D, record);
      record = std::copy_n(&views.velocities[p * D], D, record);
      record = std::copy_n(&views.affine[p * D * D], D * D, record);
      record = std::copy_n(&views.deformation[p * D * D], D * D, record);
      *record++ = views.volumes[p];
      *record++ = static_cast<double>(views.materials[p]);
      if (external_forces_) {
        std::copy_n(&views.forces[p * D], D, record);
      }
    }
  });
  comm.all_to_all(send_counts_, receive_counts_);
  const std::int64_t arriving =
      std::accumulate(receive_counts_.begin(), receive_counts_.end(), std::int64_t{0});
  const std::int64_t after = static_cast<std::int64_t>(n) - leaving + arriving;
  // MPI counts are ints: one message holds at most INT32_MAX values.
  const std::int64_t largest =
      std::max(*std::max_element(send_counts_.begin(), send_counts_.end()),
               *std::max_element(receive_counts_.begin(), receive_counts_.end()));
  const bool too_large = largest > INT32_MAX / static_cast<std::int64_t>(width);
  comm.raise_if_any_failed(
      after > simulation_->capacity()
          ? "DistributedSimulation: " + std::to_string(arriving) + " particles arrive at rank " +
                std::to_string(me) + ", which would then hold " + std::to_string(after) +
                ", more than its capacity of " + std::to_string(simulation_->capacity()) +
                " (DistributedOptions::rank_capacity)"
      : too_large ? "DistributedSimulation: rank " + std::to_string(me) + " trades " +
                        std::to_string(largest) +
                        " particles with one rank in a step, more than an MPI message holds"
                  : std::string());
  send_ranges_.clear();
  receive_ranges_.clear();
  std::int64_t sent = 0;
  std::int64_t received = 0;
  for (std::size_t r = 0; r < send_counts_.size(); ++r) {
    if (send_counts_[r] > 0) {
      send_ranges_.push_back({static_cast<int>(r), static_cast<std::int32_t>(sent),
                              static_cast<std::int32_t>(sent + send_counts_[r])});
      sent += send_counts_[r];
    }
    if (receive_counts_[r] > 0) {
      receive_ranges_.push_back({static_cast<int>(r), static_cast<std::int32_t>(received),
                                 static_cast<std::int32_t>(received + receive_counts_[r])});
      received += receive_counts_[r];
    }
  }
  comm.post_receives(receive_ranges_, incoming_.view().data(), width, particle_tag, requests_);
  comm.post_sends(send_ranges_, outgoing_.view().data(), width, particle_tag, requests_);
  memory::Communicator::wait_all(requests_);
  traffic_.particles_sent += sent;
  traffic_.particles_received += received;
  traffic_.particle_bytes_sent += sent * static_cast<std::int64_t>(width * sizeof(double));
  comm.collective([&] {
    if (leaving > 0) {
      simulation_->remove_particles(leaving_.view().subview(0, n));
      const auto numbers = numbers_.view();
      const auto flags = leaving_.view();
      std::size_t kept = 0;
      for (std::size_t p = 0; p < n; ++p) {
        if (flags[p] == 0) {
          numbers[kept++] = numbers[p];
        }
      }
    }
    if (arriving == 0) {
      return;
    }
    const std::size_t first = static_cast<std::size_t>(simulation_->particle_count());
    const ParticleViews slots =
        simulation_->add_particle_slots(static_cast<std::int32_t>(arriving));
    const auto numbers = numbers_.view();
    const double* record = incoming_.view().data();
    for (std::size_t p = 0; p < static_cast<std::size_t>(arriving); ++p) {
      numbers[first + p] = static_cast<std::int64_t>(*record++);
      std::copy_n(record, D, &slots.positions[p * D]);
      record += D;
      std::copy_n(record, D, &slots.velocities[p * D]);
      record += D;
      std::copy_n(record, D * D, &slots.affine[p * D * D]);
      record += matrix_size;
      std::copy_n(record, D * D, &slots.deformation[p * D * D]);
      record += matrix_size;
      slots.volumes[p] = *record++;
      slots.materials[p] = static_cast<std::int32_t>(*record++);
      if (external_forces_) {
        std::copy_n(record, D, &slots.forces[p * D]);
        record += D;
      }
    }
  });
}

template <int D>
void DistributedState<D>::step() {
  const memory::Communicator& comm = *comm_;
  try {
    migrate();
    const std::int64_t removed = simulation_->particles_left();
    simulation_->step();
    // Every particle is in its slab after the migration: one the slab's own step removed (off
    // its grid by more than rounding) would leave the particle numbers behind.
    AFEM_EXPECTS(simulation_->particles_left() == removed,
                 "DistributedSimulation: the slab's step removed " +
                     std::to_string(simulation_->particles_left() - removed) +
                     " particles that the migration placed in it");
  } catch (const memory::CollectiveError&) {
    throw;
  } catch (const std::exception& error) {
    // The other ranks wait in the next check of the step (a border sum's or the one below).
    const std::string message = error.what();
    comm.raise_if_any_failed(message.empty() ? "an exception without a message" : message);
    throw;
  }
  comm.raise_if_any_failed(std::string());
}

template <int D>
void DistributedState<D>::add_shared(memory::ArrayView<double> mass,
                                     memory::ArrayView<double> momentum) {
  const memory::Communicator& comm = *comm_;
  AFEM_EXPECTS(momentum.size() == node_layers_ * layer_nodes_ * D &&
                   (mass.empty() || mass.size() == node_layers_ * layer_nodes_),
               "DistributedSimulation: a border sum of " + std::to_string(momentum.size()) +
                   " momentum values for " + std::to_string(node_layers_ * layer_nodes_) +
                   " nodes");
  // A rank that failed earlier in the step waits here (see step()).
  comm.raise_if_any_failed(std::string());
  const std::size_t nodes = shared_layers_ * layer_nodes_;
  const std::size_t count = nodes * (D + (mass.empty() ? 0 : 1));
  const std::array<std::size_t, 2> first_node{0, (node_layers_ - shared_layers_) * layer_nodes_};
  for (std::size_t side = 0; side < 2; ++side) {
    if (border_out_[side].view().empty()) {
      continue;
    }
    double* out = border_out_[side].view().data();
    if (!mass.empty()) {
      out = std::copy_n(&mass[first_node[side]], nodes, out);
    }
    std::copy_n(&momentum[first_node[side] * D], nodes * D, out);
    const memory::MessageRange range{comm.rank() + (side == 0 ? -1 : 1), 0,
                                     static_cast<std::int32_t>(count)};
    comm.post_receives(std::span(&range, 1), border_in_[side].view().data(), 1, border_tag,
                       requests_);
    comm.post_sends(std::span(&range, 1), border_out_[side].view().data(), 1, border_tag,
                    requests_);
    traffic_.border_bytes_sent += static_cast<std::int64_t>(count * sizeof(double));
  }
  memory::Communicator::wait_all(requests_);
  for (std::size_t side = 0; side < 2; ++side) {
    if (border_in_[side].view().empty()) {
      continue;
    }
    // x + y is y + x in IEEE arithmetic: both neighbours get the same bits.
    const double* in = border_in_[side].view().data();
    if (!mass.empty()) {
      for (std::size_t i = 0; i < nodes; ++i) {
        mass[first_node[side] + i] += *in++;
      }
    }
    for (std::size_t i = 0; i < nodes * D; ++i) {
      momentum[first_node[side] * D + i] += *in++;
    }
  }
}

template <int D>
ParticleState DistributedState<D>::gather(int root) const {
  const memory::Communicator& comm = *comm_;
  constexpr std::size_t width = 3 + 2 * D + 2 * D * D;
  std::vector<std::vector<double>> to(static_cast<std::size_t>(comm.size()));
  comm.collective([&] {
    const ParticleState mine = simulation_->particles();
    const auto numbers = numbers_.view();
    std::vector<double>& records = to[static_cast<std::size_t>(root)];
    for (std::size_t p = 0; p < mine.masses.size(); ++p) {
      records.push_back(static_cast<double>(numbers[p]));
      records.insert(records.end(), &mine.positions[p * D], &mine.positions[p * D] + D);
      records.insert(records.end(), &mine.velocities[p * D], &mine.velocities[p * D] + D);
      records.insert(records.end(), &mine.affine[p * D * D], &mine.affine[p * D * D] + matrix_size);
      records.insert(records.end(), &mine.deformation[p * D * D],
                     &mine.deformation[p * D * D] + matrix_size);
      records.push_back(mine.masses[p]);
      records.push_back(static_cast<double>(mine.materials[p]));
    }
  });
  const std::vector<std::vector<double>> from = comm.exchange(to);
  ParticleState state;
  if (comm.rank() != root) {
    return state;
  }
  std::vector<const double*> records;
  for (const std::vector<double>& part : from) {
    for (std::size_t k = 0; k < part.size(); k += width) {
      records.push_back(&part[k]);
    }
  }
  std::sort(records.begin(), records.end(),
            [](const double* a, const double* b) { return a[0] < b[0]; });
  for (const double* record : records) {
    const double* at = record + 1;
    state.positions.insert(state.positions.end(), at, at + D);
    at += D;
    state.velocities.insert(state.velocities.end(), at, at + D);
    at += D;
    state.affine.insert(state.affine.end(), at, at + matrix_size);
    at += matrix_size;
    state.deformation.insert(state.deformation.end(), at, at + matrix_size);
    at += matrix_size;
    state.masses.push_back(*at++);
    state.materials.push_back(static_cast<std::int32_t>(*at));
  }
  return state;
}

}  // namespace detail

template <int D>
DistributedSimulation<D>::DistributedSimulation(const Setup& setup,
                                                const memory::Communicator& comm,
                                                memory::Pool& pool, memory::Arena& step_arena,
                                                const DistributedOptions& options)
    : state_(
          std::make_unique<detail::DistributedState<D>>(setup, comm, pool, step_arena, options)) {}

template <int D>
DistributedSimulation<D>::~DistributedSimulation() = default;

template <int D>
void DistributedSimulation<D>::step() {
  state_->step();
}

template <int D>
Simulation<D>& DistributedSimulation<D>::local() {
  return *state_->simulation_;
}

template <int D>
const Simulation<D>& DistributedSimulation<D>::local() const {
  return *state_->simulation_;
}

template <int D>
const std::vector<Slab>& DistributedSimulation<D>::slabs() const {
  return state_->slabs_;
}

template <int D>
memory::ArrayView<const std::int64_t> DistributedSimulation<D>::particle_numbers() const {
  return state_->numbers_.view().subview(0, static_cast<std::size_t>(local().particle_count()));
}

template <int D>
std::int64_t DistributedSimulation<D>::particle_count() const {
  return state_->comm_->sum(static_cast<std::int64_t>(local().particle_count()));
}

template <int D>
std::int64_t DistributedSimulation<D>::particles_left() const {
  return state_->comm_->sum(state_->left_ + local().particles_left());
}

template <int D>
ParticleState DistributedSimulation<D>::gather_particles(int root) const {
  return state_->gather(root);
}

template <int D>
TrafficReport DistributedSimulation<D>::traffic() const {
  return state_->traffic_;
}

template <int D>
std::int64_t DistributedSimulation<D>::steps_taken() const {
  return local().steps_taken();
}

template <int D>
double DistributedSimulation<D>::time() const {
  return local().time();
}

template class DistributedSimulation<2>;
template class DistributedSimulation<3>;

}  // namespace afem::apps::mpm
