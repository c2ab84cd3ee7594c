#pragma once

/// @file
/// Gmsh MSH 4.1 ASCII input and output of MeshData.

#include <filesystem>
#include <iosfwd>
#include <string_view>

#include "geometry/mesh_data.hpp"

namespace afem::geometry {

/// Reads a Gmsh MSH 4.1 ASCII mesh from `in`; `source_name` names the input in error messages.
///
/// Keeps the elements of the highest dimension present (3-node triangles, 4-node quadrangles,
/// 4-node tetrahedra or 8-node hexahedra: Gmsh types 2, 3, 4, 5, whose vertex order is already
/// arenafem's, so no permutation is applied) in file order; elements of lower dimension (points,
/// lines, boundary faces, of any type) are skipped. Positions keep only the vertices those cells
/// use, in file order, mapped from Gmsh's (possibly sparse) node tags to 0-based indices; a 2D
/// mesh drops z. Cells keep the file's vertex order as is: their orientation is not checked or
/// changed. Each cell's tag is the first physical tag of its element's entity (0 when the entity
/// has none, or when the file has no $Entities); tag_names are the $PhysicalNames of the kept
/// dimension, in file order. Nodes may carry parametric coordinates (they are skipped). Unknown
/// sections ($NodeData, $Periodic, $PartitionedEntities, ...) are skipped.
///
/// Throws afem::Error for malformed input, with "source_name:line: " and what was expected:
/// a version other than 4.1, a binary file, a missing or unterminated section, a truncated file,
/// a non-numeric or negative token, an unknown node or entity tag, an element with the wrong
/// number of nodes, an unsupported element type or two cell types in the kept dimension, or a
/// file without triangles, quadrangles, tetrahedra or hexahedra.
[[nodiscard]] MeshData read_gmsh(std::istream& in, std::string_view source_name);

/// Reads the Gmsh MSH 4.1 ASCII file `file` (see the istream overload); also throws afem::Error
/// naming the path when the file cannot be opened.
[[nodiscard]] MeshData read_gmsh(const std::filesystem::path& file);

/// Writes `mesh` to `out` as Gmsh MSH 4.1 ASCII, so that read_gmsh returns the same positions
/// (exactly: shortest round-trip decimal form), cells (same order), tags and tag names.
///
/// One entity of the mesh's dimension per distinct cell tag (its physical tag; none for tag 0),
/// all nodes in one block on the first entity, node tags 1..n, element tags 1..m, one element
/// block per run of equal tags; tag_names become $PhysicalNames of the mesh's dimension.
/// 2D positions are written with z = 0. Throws afem::Error, before writing anything, when the
/// mesh is inconsistent (array sizes, vertex indices out of range) or a tag name contains '"'
/// or a line break; and when writing fails.
void write_gmsh(const MeshData& mesh, std::ostream& out);

/// Writes `mesh` to the file `file` (see the ostream overload); also throws afem::Error naming
/// the path when the file cannot be opened or written.
void write_gmsh(const MeshData& mesh, const std::filesystem::path& file);

}  // namespace afem::geometry
