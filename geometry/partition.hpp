#pragma once

/// @file
/// Geometry partitions: the cells, sides and boundary sides of a whole mesh or of a selection of
/// its cells (for instance the cells that hold particles in this step).

#include <cstdint>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/temporary.hpp"

namespace afem::geometry {

/// Indices of a partition's cells, sides and boundary sides, as kernels see them. A side belongs
/// to the partition when one of its cells does; it is a boundary side of the partition when only
/// one of its cells belongs (sides on the mesh boundary included).
struct PartitionView {
  memory::ArrayView<const std::int32_t> cells;
  memory::ArrayView<const std::int32_t> sides;
  memory::ArrayView<const std::int32_t> boundary_sides;
};

/// The whole geometry: every cell and side, and the mesh's boundary sides. Owns nothing.
template <class Geometry>
class WholeGeometryPartition {
public:
  explicit WholeGeometryPartition(const Geometry& geometry) : geometry_(&geometry) {}
  [[nodiscard]] std::int32_t cell_count() const { return geometry_->cell_count(); }
  [[nodiscard]] std::int32_t side_count() const { return geometry_->side_count(); }
  [[nodiscard]] std::int32_t boundary_side_count() const {
    return geometry_->boundary_side_count();
  }
  [[nodiscard]] const Geometry& geometry() const { return *geometry_; }

private:
  const Geometry* geometry_;
};

/// What a CellBasedGeometryPartition's buffers hold. With max_cells > 0 they hold max_cells cells
/// and the sides those can touch whatever the selection, so that selections of varying size reuse
/// the same blocks; 0 sizes the buffers by each selection. With sides false the partition selects
/// cells only (no side buffers, side counts 0): a selection then reads the mask once per cell
/// instead of also twice per side of the geometry, for users of cell domains only (the active
/// cells of an MPM step); Sides and BoundarySides domains refuse such a partition.
struct PartitionCapacity {
  std::int32_t max_cells = 0;
  bool sides = true;
};

/// A selection of cells of a geometry, with the sides they touch and the boundary of the
/// selection (unless its capacity says cells only), each as a sorted index buffer it owns
/// ("Partition.cells", "Partition.sides", "Partition.boundary_sides" in the pool's ledger).
/// select_* rebuilds them into fresh buffers and swaps them in with replace_owned (a cells-only
/// partition keeps empty side buffers); on an error (a bad index, a selection above the capacity)
/// nothing changes.
template <class Geometry>
class CellBasedGeometryPartition {
public:
  /// Throws afem::Error when max_cells is negative; a capacity above the geometry's cell count
  /// is lowered to it.
  CellBasedGeometryPartition(const Geometry& geometry, memory::Pool& pool,
                             PartitionCapacity capacity = {});

  /// Selects the cells listed in `cells` (in the pool's memory; any order, repeats allowed).
  /// Throws afem::Error naming the first index out of range.
  void select_cells(memory::ArrayView<const std::int32_t> cells, memory::Arena& scratch);

  /// Selects the cells whose `mask` entry is nonzero (one entry per cell, in the pool's memory).
  void select_mask(memory::ArrayView<const std::uint8_t> mask, memory::Arena& scratch);

  [[nodiscard]] std::int32_t cell_count() const { return counts_[0]; }
  [[nodiscard]] std::int32_t side_count() const { return counts_[1]; }
  [[nodiscard]] std::int32_t boundary_side_count() const { return counts_[2]; }
  [[nodiscard]] PartitionView view() const {
    const auto count = [this](int k) { return static_cast<std::size_t>(counts_[k]); };
    return {cells_.view().subview(0, count(0)), sides_.view().subview(0, count(1)),
            boundary_sides_.view().subview(0, count(2))};
  }
  [[nodiscard]] const Geometry& geometry() const { return *geometry_; }
  [[nodiscard]] PartitionCapacity capacity() const { return capacity_; }

private:
  const Geometry* geometry_;
  memory::Pool* pool_;
  PartitionCapacity capacity_;
  std::int32_t counts_[3] = {0, 0, 0};  ///< cells, sides, boundary sides
  memory::Temporary<std::int32_t> cells_;
  memory::Temporary<std::int32_t> sides_;
  memory::Temporary<std::int32_t> boundary_sides_;
};

}  // namespace afem::geometry
