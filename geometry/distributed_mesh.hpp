#pragma once

/// @file
/// Meshes over MPI ranks (ARENAFEM_MPI): METIS partitions the cells of a mesh that rank 0 holds,
/// and each rank receives its cells and one layer of ghost cells around them, with the global
/// numbers of its cells and vertices and the owner of every cell.

#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arenafem/geometry/mesh_data.hpp"
#include "arenafem/geometry/partition.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/communicator.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/temporary.hpp"

namespace afem::geometry {

/// The tag a rank's mesh gives the sides of the whole mesh's boundary that had none, so that every
/// boundary side of the whole mesh is a tagged side of the rank's mesh (its own boundary also has
/// untagged sides: the cut to cells it does not hold).
inline constexpr std::int32_t untagged_boundary_tag = 2147483647;

/// The part (0 to parts - 1) of every cell of `mesh`: METIS's k-way partition of the graph whose
/// edges join cells that share a side, balanced in cell count. The same mesh and part count give
/// the same parts in every run. Throws afem::Error for parts < 1, more parts than cells, or a
/// part left empty.
[[nodiscard]] std::vector<std::int32_t> partition_cells(const MeshData& mesh, int parts);

/// One rank's part of a distributed mesh, on the host.
struct LocalMeshData {
  /// The rank's cells, its owned cells first (owned_cells of them) and then the ghost layer (every
  /// cell that shares a vertex with an owned cell), each group in increasing global number. The
  /// vertices are those of these cells, in increasing global number. The tagged sides are the
  /// sides of the whole mesh's boundary that belong to an owned cell, with their tag, or
  /// untagged_boundary_tag where they had none; the side names are the whole mesh's.
  MeshData mesh;
  std::vector<std::int64_t> global_cells;     ///< the whole mesh's number of each cell
  std::vector<std::int64_t> global_vertices;  ///< the whole mesh's number of each vertex
  std::vector<std::int32_t> cell_owners;      ///< the rank that owns each cell
  std::int32_t owned_cells = 0;
  std::int64_t global_cell_count = 0;
  std::int64_t global_vertex_count = 0;
};

/// Distributes `global` (read on rank `root` only; other ranks pass anything, e.g. an empty
/// MeshData) over the ranks of `comm`: partition_cells on the root, then each rank's cells, ghost
/// layer and tagged sides sent to it. Collective. An error on the root (an inconsistent mesh, a
/// failed partition) is thrown on every rank (Communicator::collective).
[[nodiscard]] LocalMeshData distribute_mesh(const memory::Communicator& comm,
                                            const MeshData& global, int root = 0);

/// Rank `root`'s `names` (tag, name) on every rank. Collective.
void broadcast_tag_names(const memory::Communicator& comm,
                         std::vector<std::pair<std::int32_t, std::string>>& names, int root = 0);

/// The part of each rank for `global` (on the root) as distribute_mesh computes it, and the
/// ghost layer, without sending anything: the rank's LocalMeshData for `rank` of `parts`. For
/// tests and for programs that build every part in one process.
[[nodiscard]] LocalMeshData local_mesh(const MeshData& global,
                                       const std::vector<std::int32_t>& partition, int rank);

/// Selects in `partition` (of a rank's mesh built from LocalMeshData::mesh) the rank's owned
/// cells, its first `owned_cells`: the cells a rank integrates over.
template <class Geometry>
void select_owned_cells(CellBasedGeometryPartition<Geometry>& partition, std::int32_t owned_cells,
                        memory::Pool& pool, memory::Arena& scratch) {
  std::vector<std::int32_t> list(static_cast<std::size_t>(owned_cells));
  std::iota(list.begin(), list.end(), 0);
  auto cells = memory::borrow_temporary<std::int32_t>(scratch, list.size(), "owned_cells");
  memory::copy_to_device(cells.view(), std::span<const std::int32_t>(list), pool.stream());
  pool.stream().synchronize();
  partition.select_cells(cells.view(), scratch);
}

}  // namespace afem::geometry
