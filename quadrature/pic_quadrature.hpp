#pragma once

/// @file
/// PicQuadrature: particles as quadrature points. Each rebin looks the particles up in the
/// geometry, sorts them by element of the domain (its cells: of the whole geometry or of a
/// partition, such as the cells that hold particles) and builds per-element offsets; the result
/// is owned as Temporaries swapped in with replace_owned, scratch comes from the step arena.

#include <thrust/count.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>

#include "arenafem/geometry/geometry.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/counting_sort.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"
#include "arenafem/quadrature/domain.hpp"

namespace afem::quadrature {

/// Upper bounds that fix the sizes of a PicQuadrature's buffers, so that rebins with a varying
/// number of particles reuse the same blocks. 0: sized by each rebin's particle count.
struct PicCapacity {
  std::int32_t max_particles = 0;
};

/// What kernels see of a PicQuadrature: the particles of element e of the domain (cell e of a
/// whole-geometry domain) are
/// cell_particle_indices[cell_particle_offsets[e] .. cell_particle_offsets[e + 1]); particle i
/// has its cell (-1 outside the domain), reference coordinates in it, and its fraction of the
/// cell's measure (its measure / the cell's; 0 outside).
struct PicQuadratureView {
  /// Points differ per cell; weights are the particles' measures (not scaled by the cell map).
  static constexpr bool uniform = false;
  static constexpr bool physical_weights = true;

  memory::ArrayView<const std::int32_t> cell_particle_offsets;
  memory::ArrayView<const std::int32_t> cell_particle_indices;
  memory::ArrayView<const double> particle_fraction;
  memory::ArrayView<const double> particle_coords;
  memory::ArrayView<const std::int32_t> particle_cells;
  memory::ArrayView<const double> particle_measure;
  std::int32_t dimension = 0;

  AFEM_HOST_DEVICE std::int32_t point_count(std::int32_t cell) const {
    const auto c = static_cast<std::size_t>(cell);
    return cell_particle_offsets[c + 1] - cell_particle_offsets[c];
  }
  /// The particle that is point `p` of `cell`.
  AFEM_HOST_DEVICE std::int32_t particle(std::int32_t cell, std::int32_t p) const {
    const std::int32_t slot = cell_particle_offsets[static_cast<std::size_t>(cell)] + p;
    return cell_particle_indices[static_cast<std::size_t>(slot)];
  }
  AFEM_HOST_DEVICE double coordinate(std::int32_t cell, std::int32_t p, int axis) const {
    return particle_coords[static_cast<std::size_t>(particle(cell, p)) *
                               static_cast<std::size_t>(dimension) +
                           static_cast<std::size_t>(axis)];
  }
  AFEM_HOST_DEVICE double weight(std::int32_t cell, std::int32_t p) const {
    return particle_measure[static_cast<std::size_t>(particle(cell, p))];
  }
  /// interpolate() writes a particle's value at the particle's index.
  AFEM_HOST_DEVICE std::size_t output_index(std::int32_t cell, std::int32_t p) const {
    return static_cast<std::size_t>(particle(cell, p));
  }
};

/// Particles binned into the cells of a domain: a whole geometry, or a CellBasedGeometryPartition
/// (read at each rebin; particles in cells outside it count as outside). The offsets are sized by
/// the domain's element_capacity() when it has one. Owns "PicQuadrature.cell_particle_offsets",
/// "PicQuadrature.cell_particle_indices", "PicQuadrature.particle_fraction",
/// "PicQuadrature.particle_coords", "PicQuadrature.particle_cells",
/// "PicQuadrature.particle_measure" and
/// "PicQuadrature.outside_count" in its pool until destroyed; rebin() builds fresh ones and
/// swaps them in, so an error leaves the previous binning in place.
template <geometry::Geometry G>
class PicQuadrature {
public:
  using DomainType = Cells<G>;
  static constexpr int dimension = G::dimension;

  PicQuadrature(const G& geometry, memory::Pool& pool, PicCapacity capacity = {})
      : PicQuadrature(Cells<G>(geometry), pool, capacity) {}
  /// Over `domain`, whose partition (if any) must outlive the quadrature.
  PicQuadrature(const Cells<G>& domain, memory::Pool& pool, PicCapacity capacity = {})
      : geometry_(&domain.geometry()), pool_(&pool), capacity_(capacity), domain_(domain) {
    AFEM_EXPECTS(capacity.max_particles >= 0, "PicQuadrature: max_particles is " +
                                                  std::to_string(capacity.max_particles) +
                                                  ", expected >= 0");
  }

  /// Particles located in the geometry but not yet binned (what locate() returns and bin()
  /// takes): each particle's cell (-1 outside the geometry) and reference coordinates, in fresh
  /// buffers of the quadrature's pool, and the caller's measures, which must stay valid until
  /// bin(). Move-only (a moved-from one holds no particles); owns its buffers until bin() takes
  /// them or it is destroyed.
  class LocatedParticles {
  public:
    LocatedParticles(LocatedParticles&& other) noexcept
        : cells_(std::move(other.cells_)),
          coords_(std::move(other.coords_)),
          measures_(other.measures_),
          count_(std::exchange(other.count_, 0)),
          geometry_(std::exchange(other.geometry_, nullptr)) {}
    LocatedParticles(const LocatedParticles&) = delete;
    LocatedParticles& operator=(const LocatedParticles&) = delete;
    LocatedParticles& operator=(LocatedParticles&&) = delete;
    ~LocatedParticles() = default;

    /// Each particle's cell of the geometry, -1 outside it.
    [[nodiscard]] memory::ArrayView<const std::int32_t> cells() const {
      return cells_.view().subview(0, static_cast<std::size_t>(count_));
    }
    /// How many particles were located.
    [[nodiscard]] std::int32_t count() const { return count_; }

  private:
    friend class PicQuadrature;
    LocatedParticles(memory::Temporary<std::int32_t> cells, memory::Temporary<double> coords,
                     memory::ArrayView<const double> measures, std::int32_t count,
                     const G* geometry)
        : cells_(std::move(cells)),
          coords_(std::move(coords)),
          measures_(measures),
          count_(count),
          geometry_(geometry) {}
    memory::Temporary<std::int32_t> cells_;
    memory::Temporary<double> coords_;
    memory::ArrayView<const double> measures_;
    std::int32_t count_ = 0;
    const G* geometry_ = nullptr;  ///< where they were located; null once moved
  };

  /// Bins the particles at `positions` (dimension values per particle) with `measures` (volume or
  /// area per particle), both in the pool's memory: locate() then bin(). Particles outside the
  /// geometry are counted and left out of every cell. Throws afem::Error when the sizes disagree
  /// or exceed the capacity; no device-to-host read happens here.
  void rebin(memory::ArrayView<const double> positions, memory::ArrayView<const double> measures,
             memory::Arena& scratch) {
    bin(locate(positions, measures, scratch), scratch);
  }

  /// The first half of rebin(): looks the particles up in the geometry. Changes nothing in the
  /// quadrature, so a caller can select the domain's cells from the particles' cells (the cells
  /// that hold particles) before bin(). Throws afem::Error when the sizes disagree or exceed the
  /// capacity.
  [[nodiscard]] LocatedParticles locate(memory::ArrayView<const double> positions,
                                        memory::ArrayView<const double> measures,
                                        memory::Arena& scratch) const {
    const auto n = static_cast<std::int64_t>(measures.size());
    AFEM_EXPECTS(positions.size() == measures.size() * dimension,
                 "PicQuadrature: " + std::to_string(positions.size()) + " position values for " +
                     std::to_string(n) + " particles, expected " + std::to_string(dimension) +
                     " per particle");
    AFEM_EXPECTS(n < std::numeric_limits<std::int32_t>::max(),
                 "PicQuadrature: " + std::to_string(n) + " particles overflow 32-bit indices");
    AFEM_EXPECTS(capacity_.max_particles == 0 || n <= capacity_.max_particles,
                 "PicQuadrature: " + std::to_string(n) + " particles exceed the capacity of " +
                     std::to_string(capacity_.max_particles));
    const auto count = static_cast<std::int32_t>(n);
    const auto slots = static_cast<std::size_t>(std::max(count, capacity_.max_particles));
    auto cells =
        memory::borrow_temporary<std::int32_t>(*pool_, slots, "PicQuadrature.particle_cells");
    auto coords = memory::borrow_temporary<double>(*pool_, slots * dimension,
                                                   "PicQuadrature.particle_coords");
    const auto used = static_cast<std::size_t>(count);
    geometry_->lookup(positions,
                      geometry::LookupResult{cells.view().subview(0, used),
                                             coords.view().subview(0, used * dimension)},
                      scratch);
    return LocatedParticles(std::move(cells), std::move(coords), measures, count, geometry_);
  }

  /// The second half of rebin(): bins located particles into the elements of the domain as it is
  /// now (particles in cells outside its partition count as outside) and swaps the result in.
  /// Takes `located` whatever happens: an error (particles located by a quadrature on another
  /// geometry, already binned, or out of memory) leaves the previous binning in place, and the
  /// particles must be located again.
  void bin(LocatedParticles located, memory::Arena& scratch) {
    AFEM_EXPECTS(located.geometry_ != nullptr,
                 "PicQuadrature::bin: the located particles were binned (or moved) already");
    AFEM_EXPECTS(located.geometry_ == geometry_,
                 "PicQuadrature::bin: the particles were located on another geometry");
    const std::int32_t count = located.count_;
    const auto slots = located.cells_.size();
    const std::int32_t elements = domain_.element_count();
    const std::int64_t element_slots = std::max<std::int64_t>(elements, domain_.element_capacity());
    memory::Pool& pool = *pool_;
    auto offsets = memory::borrow_temporary<std::int32_t>(
        pool, static_cast<std::size_t>(element_slots) + 1, "PicQuadrature.cell_particle_offsets");
    auto indices =
        memory::borrow_temporary<std::int32_t>(pool, slots, "PicQuadrature.cell_particle_indices");
    auto fraction =
        memory::borrow_temporary<double>(pool, slots, "PicQuadrature.particle_fraction");
    auto measure = memory::borrow_temporary<double>(pool, slots, "PicQuadrature.particle_measure");
    auto outside = memory::borrow_temporary<std::int32_t>(pool, 1, "PicQuadrature.outside_count");
    detail_bin(located.measures_, count, offsets.view(), indices.view(), fraction.view(),
               located.cells_.view(), measure.view(), outside.view(), scratch);
    memory::replace_owned(offsets_, std::move(offsets));
    memory::replace_owned(indices_, std::move(indices));
    memory::replace_owned(fraction_, std::move(fraction));
    memory::replace_owned(coords_, std::move(located.coords_));
    memory::replace_owned(cells_, std::move(located.cells_));
    memory::replace_owned(measure_, std::move(measure));
    memory::replace_owned(outside_, std::move(outside));
    particle_count_ = count;
    element_count_ = elements;
  }

  [[nodiscard]] const G& geometry() const { return *geometry_; }
  /// The cells the particles are binned into.
  [[nodiscard]] const Cells<G>& domain() const { return domain_; }
  [[nodiscard]] std::int32_t particle_count() const { return particle_count_; }
  /// One sample per particle (interpolate() writes particle_count() values).
  [[nodiscard]] std::int64_t sample_count() const { return particle_count_; }
  /// Particles of the last rebin outside the geometry; reads one value back from the device.
  [[nodiscard]] std::int32_t outside_count() const {
    if (outside_.empty()) {
      return 0;
    }
    std::int32_t value = 0;
    memory::copy_to_host(std::span<std::int32_t>(&value, 1),
                         memory::ArrayView<const std::int32_t>(outside_.view()), pool_->stream());
    pool_->stream().synchronize();
    return value;
  }
  [[nodiscard]] PicQuadratureView view() const {
    const auto n = static_cast<std::size_t>(particle_count_);
    if (offsets_.empty()) {
      return {{}, {}, {}, {}, {}, {}, dimension};
    }
    return {offsets_.view().subview(0, static_cast<std::size_t>(element_count_) + 1),
            indices_.view().subview(0, n),
            fraction_.view().subview(0, n),
            coords_.view().subview(0, n * dimension),
            cells_.view().subview(0, n),
            measure_.view().subview(0, n),
            dimension};
  }

  /// The binning kernels (public for nvcc's device lambdas; call rebin(), or locate() and bin()).
  void detail_bin(memory::ArrayView<const double> measures, std::int32_t count,
                  memory::ArrayView<std::int32_t> offsets, memory::ArrayView<std::int32_t> indices,
                  memory::ArrayView<double> fraction,
                  memory::ArrayView<std::int32_t> particle_cells, memory::ArrayView<double> measure,
                  memory::ArrayView<std::int32_t> outside, memory::Arena& scratch) const {
    auto policy = memory::arena_policy(scratch, "PicQuadrature.thrust");
    const auto domain = domain_.view();
    const std::int32_t elements = domain.count;
    const std::int32_t cells = geometry_->cell_count();
    const auto n = static_cast<std::size_t>(count);
    // Element of each cell: the cell itself, or its place in the partition (-1 outside it).
    const bool listed = domain.source == Cells<G>::View::Source::list;
    auto element_map = memory::borrow_temporary<std::int32_t>(
        scratch, listed ? static_cast<std::size_t>(cells) : 0, "PicQuadrature.element_of_cell");
    const memory::ArrayView<std::int32_t> element_of_cell = element_map.view();
    if (listed) {
      thrust::fill(policy, element_of_cell.begin(), element_of_cell.end(), -1);
      thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), elements,
                         [=] AFEM_HOST_DEVICE(std::int32_t e) {
                           element_of_cell[static_cast<std::size_t>(domain.element_index(e))] = e;
                         });
    }
    auto keys = memory::borrow_temporary<std::int32_t>(scratch, n, "PicQuadrature.sort_keys");
    const memory::ArrayView<std::int32_t> key = keys.view();
    const auto view = geometry_->view();
    // Outside particles sort after every element (key = element count) and get no fraction.
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), n,
                       [=] AFEM_HOST_DEVICE(std::size_t i) {
                         std::int32_t cell = particle_cells[i];
                         std::int32_t element = cell;
                         if (cell >= 0 && listed) {
                           element = element_of_cell[static_cast<std::size_t>(cell)];
                           cell = element < 0 ? -1 : cell;
                           particle_cells[i] = cell;
                         }
                         key[i] = cell < 0 ? elements : element;
                         fraction[i] = cell < 0 ? 0.0 : measures[i] / view.cell_measure(cell);
                         measure[i] = cell < 0 ? 0.0 : measures[i];
                       });
    // Particles in cell order (stable: by index within a cell), and where each cell's run starts.
    memory::counting_sort_indices(key, elements + 1, indices.subview(0, n),
                                  offsets.subview(0, static_cast<std::size_t>(elements) + 1),
                                  scratch);
    thrust::for_each_n(
        policy, thrust::counting_iterator<std::int32_t>(0), 1, [=] AFEM_HOST_DEVICE(std::int32_t) {
          outside[0] = static_cast<std::int32_t>(n) - offsets[static_cast<std::size_t>(elements)];
        });
  }

private:
  const G* geometry_ = nullptr;
  memory::Pool* pool_ = nullptr;
  PicCapacity capacity_;
  std::int32_t particle_count_ = 0;
  std::int32_t element_count_ = 0;
  memory::Temporary<std::int32_t> offsets_;
  memory::Temporary<std::int32_t> indices_;
  memory::Temporary<double> fraction_;
  memory::Temporary<double> coords_;
  memory::Temporary<std::int32_t> cells_;
  memory::Temporary<double> measure_;
  memory::Temporary<std::int32_t> outside_;
  Cells<G> domain_;
};

}  // namespace afem::quadrature
