#pragma once

/// @file
/// Mesh<Type>: an unstructured mesh of one cell type on the backend, owning its positions,
/// connectivity, topology (sides, side-to-cell adjacency, boundary sides) and point-lookup bins.

#include <cstdint>
#include <span>
#include <string_view>

#include "arenafem/geometry/mesh_data.hpp"
#include "arenafem/geometry/mesh_view.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/temporary.hpp"

namespace afem::geometry {

/// Result buffers of Mesh::lookup: one cell index (-1 outside) and one reference point per query.
struct LookupResult {
  memory::ArrayView<std::int32_t> cells;
  memory::ArrayView<double> coords;  ///< dimension per query point
};

/// Throws afem::Error, prefixed with `who`, unless `points` holds whole points of `dimension`
/// values and `result` has one cell slot and one reference point per point.
void check_lookup_buffers(memory::ArrayView<const double> points, const LookupResult& result,
                          int dimension, std::string_view who);

/// An unstructured mesh of triangles, quadrilaterals, tetrahedra or hexahedra in the memory of a
/// Pool's device. Every buffer it keeps is a Temporary from that Pool, labelled "Mesh.<what>",
/// and is swapped only through replace_owned, so a rebuild leaves one live copy of each. Topology
/// and lookup bins are built on the backend with scratch from the Arena passed in. Invalid input
/// throws afem::Error naming the cell and the reason, and leaves the mesh as it was.
template <CellType Type>
class Mesh {
public:
  using Cell = ReferenceCell<Type>;
  using View = MeshView<Type>;
  static constexpr int dimension = Cell::dimension;

  /// Validates `data` (cell type, vertex indices, orientation of every cell, tagged sides that are
  /// sides of cells and listed once), copies it into `pool`'s memory and builds the topology, the
  /// side tags and the lookup bins with scratch from `scratch`.
  Mesh(const MeshData& data, memory::Pool& pool, memory::Arena& scratch);

  [[nodiscard]] std::int32_t cell_count() const { return cell_count_; }
  [[nodiscard]] std::int32_t vertex_count() const { return vertex_count_; }
  [[nodiscard]] std::int32_t side_count() const {
    return static_cast<std::int32_t>(side_cells_.size() / 2);
  }
  [[nodiscard]] std::int32_t boundary_side_count() const {
    return static_cast<std::int32_t>(boundary_sides_.size());
  }

  /// The view kernels take; invalidated by set_positions and rebuild_topology.
  [[nodiscard]] View view() const;

  /// Tags of the cells (Gmsh physical groups; 0 when none), in the pool's memory.
  [[nodiscard]] memory::ArrayView<const std::int32_t> cell_tags() const {
    return cell_tags_.view();
  }

  /// The tag of every side (Gmsh physical groups one dimension below the cells, matched to the
  /// mesh's sides by their vertices; 0 for an untagged side), in the pool's memory.
  [[nodiscard]] memory::ArrayView<const std::int32_t> side_tags() const {
    return side_tags_.view();
  }

  /// Moves the vertices (same count, `dimension` values each, host memory). Validates every cell's
  /// orientation first; on error nothing changes. Topology is kept; lookup bins are rebuilt.
  void set_positions(std::span<const double> positions, memory::Arena& scratch);

  /// Builds sides, adjacency, boundary sides and side tags again (into fresh buffers, then
  /// swapped in).
  void rebuild_topology(memory::Arena& scratch);

  /// For each point (`dimension` values per point, in the pool's memory) finds a cell containing it
  /// and the point's reference coordinates there; -1 for points outside the mesh.
  void lookup(memory::ArrayView<const double> points, const LookupResult& result,
              memory::Arena& scratch) const;

  /// The positions, connectivity, cell tags and tagged sides back on the host (for output; tag
  /// names are not kept).
  [[nodiscard]] MeshData to_mesh_data() const;

private:
  struct Bins {
    double origin[dimension] = {};
    double size[dimension] = {};
    std::int32_t counts[dimension] = {};
  };

  /// Builds lookup bins for the cells of `from` (whose positions are `positions`, on the host)
  /// and swaps them in.
  void rebuild_bins(std::span<const double> positions, const View& from, memory::Arena& scratch);

  memory::Pool* pool_;
  std::int32_t cell_count_ = 0;
  std::int32_t vertex_count_ = 0;
  memory::Temporary<double> positions_;
  memory::Temporary<std::int32_t> cells_;
  memory::Temporary<std::int32_t> cell_tags_;
  memory::Temporary<std::int32_t> side_cells_;
  memory::Temporary<std::uint8_t> side_local_;
  memory::Temporary<std::uint8_t> side_outer_vertex_;
  memory::Temporary<std::int32_t> boundary_sides_;
  memory::Temporary<std::int32_t> tagged_side_vertices_;
  memory::Temporary<std::int32_t> tagged_side_tags_;
  memory::Temporary<std::int32_t> side_tags_;
  memory::Temporary<std::int32_t> bin_offsets_;
  memory::Temporary<std::int32_t> bin_cells_;
  Bins bins_;
};

using Trimesh = Mesh<CellType::triangle>;
using Quadmesh = Mesh<CellType::quadrilateral>;
using Tetmesh = Mesh<CellType::tetrahedron>;
using Hexmesh = Mesh<CellType::hexahedron>;

}  // namespace afem::geometry
