#pragma once

/// @file
/// Geometry partitions: the cells, sides and boundary sides of a whole mesh or of a selection of
/// its cells (for instance the cells that hold particles in this step).

#include <cstdint>

#include "memory/arena.hpp"
#include "memory/array_view.hpp"
#include "memory/pool.hpp"
#include "memory/temporary.hpp"

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

/// A selection of cells of a geometry, with the sides they touch and the boundary of the
/// selection, each as a sorted index buffer it owns ("Partition.cells", "Partition.sides",
/// "Partition.boundary_sides" in the pool's ledger). select_* rebuilds all three into fresh
/// buffers and swaps them in with replace_owned; on an error nothing changes.
template <class Geometry>
class CellBasedGeometryPartition {
public:
  CellBasedGeometryPartition(const Geometry& geometry, memory::Pool& pool)
      : geometry_(&geometry), pool_(&pool) {}

  /// Selects the cells listed in `cells` (in the pool's memory; any order, repeats allowed).
  /// Throws afem::Error naming the first index out of range.
  void select_cells(memory::ArrayView<const std::int32_t> cells, memory::Arena& scratch);

  /// Selects the cells whose `mask` entry is nonzero (one entry per cell, in the pool's memory).
  void select_mask(memory::ArrayView<const std::uint8_t> mask, memory::Arena& scratch);

  [[nodiscard]] std::int32_t cell_count() const { return static_cast<std::int32_t>(cells_.size()); }
  [[nodiscard]] std::int32_t side_count() const { return static_cast<std::int32_t>(sides_.size()); }
  [[nodiscard]] std::int32_t boundary_side_count() const {
    return static_cast<std::int32_t>(boundary_sides_.size());
  }
  [[nodiscard]] PartitionView view() const {
    return {cells_.view(), sides_.view(), boundary_sides_.view()};
  }
  [[nodiscard]] const Geometry& geometry() const { return *geometry_; }

private:
  const Geometry* geometry_;
  memory::Pool* pool_;
  memory::Temporary<std::int32_t> cells_;
  memory::Temporary<std::int32_t> sides_;
  memory::Temporary<std::int32_t> boundary_sides_;
};

}  // namespace afem::geometry
