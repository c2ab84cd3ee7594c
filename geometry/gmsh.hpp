#pragma once

/// @file
/// Gmsh MSH 4.1 ASCII input and output of MeshData.

#include <filesystem>
#include <iosfwd>
#include <string_view>

#include "arenafem/geometry/mesh_data.hpp"

namespace afem::geometry {

/// Reads a Gmsh MSH 4.1 ASCII mesh from `in`; `source_name` names the input in error messages.
///
/// Keeps as cells, in file order, the elements of the highest dimension present, `top`
/// (3-node triangles, 4-node quadrangles, 4-node tetrahedra or 8-node hexahedra: Gmsh types 2, 3,
/// 4, 5, whose vertex order is already arenafem's, so no permutation is applied). Keeps as tagged
/// sides, in file order, the elements of dimension top - 1 whose entity has a physical tag:
/// 2-node lines (type 1) of a triangle or quadrilateral mesh, 3-node triangles (type 2) of a
/// tetrahedron mesh, 4-node quadrangles (type 3) of a hexahedron mesh; each side's tag is the
/// first physical tag of its entity. Skipped: elements of dimension top - 1 whose entity has no
/// physical tag (all of them when the file has no $Entities), and elements of lower dimension
/// (points, the lines of a 3D mesh, of any type). Positions keep only the vertices the cells use,
/// in file order, mapped from Gmsh's (possibly sparse) node tags to 0-based indices, which cells
/// and sides both refer to; a 2D mesh drops z. Cells and sides keep the file's vertex order as
/// is: neither the cells' orientation nor whether a tagged side is a side of a cell is checked.
/// Each cell's tag is the first physical tag of its element's entity (0 when the entity has none,
/// or when the file has no $Entities); tag_names are the $PhysicalNames of dimension top,
/// side_tag_names those of dimension top - 1, in file order. Nodes may carry parametric
/// coordinates (they are skipped). Unknown sections ($NodeData, $Periodic, $PartitionedEntities,
/// ...) are skipped.
///
/// Throws afem::Error for malformed input, with "source_name:line: " and what was expected:
/// a version other than 4.1, a binary file, a missing or unterminated section, a truncated file,
/// a non-numeric or negative token, an unknown node or entity tag, an element with the wrong
/// number of nodes, an element block whose type does not have its entity's dimension, an
/// unsupported element type or two cell types in the kept dimension, a file without triangles,
/// quadrangles, tetrahedra or hexahedra; and for tagged sides (elements of dimension top - 1 on
/// an entity with a physical tag): a block of another element type than the cells' sides (such
/// as quadrangles on a tetrahedron mesh), a negative physical tag, or a side element that uses a
/// node no cell uses.
[[nodiscard]] MeshData read_gmsh(std::istream& in, std::string_view source_name);

/// Reads the Gmsh MSH 4.1 ASCII file `file` (see the istream overload); also throws afem::Error
/// naming the path when the file cannot be opened.
[[nodiscard]] MeshData read_gmsh(const std::filesystem::path& file);

/// Writes `mesh` to `out` as Gmsh MSH 4.1 ASCII, so that read_gmsh returns the same positions
/// (exactly: shortest round-trip decimal form), cells (same order), tags and tag names, and the
/// same tagged sides (same order and vertex order), side tags and side tag names.
///
/// One entity of the mesh's dimension per distinct cell tag (its physical tag; none for tag 0)
/// and one of the dimension below per distinct side tag (its physical tag), all nodes in one
/// block on the first cell entity, node tags 1..n; the cells' element blocks, then the sides'
/// (2-node lines, 3-node triangles or 4-node quadrangles), one block per run of equal tags, with
/// element tags 1..m for the cells and on from m + 1 for the sides; tag_names and side_tag_names
/// become $PhysicalNames of the mesh's dimension and of the one below. 2D positions are written
/// with z = 0. Throws afem::Error, before writing anything, when the mesh is inconsistent (array
/// sizes, vertex indices out of range, side tags not positive) or a tag name or side tag name
/// contains '"' or a line break; and when writing fails.
void write_gmsh(const MeshData& mesh, std::ostream& out);

/// Writes `mesh` to the file `file` (see the ostream overload); also throws afem::Error naming
/// the path when the file cannot be opened or written.
void write_gmsh(const MeshData& mesh, const std::filesystem::path& file);

}  // namespace afem::geometry
