#pragma once

/// @file
/// MeshData: a mesh as plain host arrays, the form in which meshes are generated, read from and
/// written to files before they are moved to the backend.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace afem::geometry {

/// The shape of every cell of a mesh. Vertex order follows VTK and Gmsh: counterclockwise for
/// triangles and quadrilaterals ((0,0), (1,0), (1,1), (0,1)); a hexahedron lists its bottom face
/// counterclockwise, then the top face above it; a tetrahedron's fourth vertex lies on the side of
/// the first three's counterclockwise normal.
enum class CellType : std::uint8_t { triangle, quadrilateral, tetrahedron, hexahedron };

/// Spatial dimension of a cell type (2 or 3).
[[nodiscard]] constexpr int dimension(CellType type) {
  return type == CellType::triangle || type == CellType::quadrilateral ? 2 : 3;
}

/// Vertices per cell of a cell type.
[[nodiscard]] constexpr int vertex_count(CellType type) {
  if (type == CellType::triangle) {
    return 3;
  }
  return type == CellType::hexahedron ? 8 : 4;
}

/// "triangle", "quadrilateral", "tetrahedron" or "hexahedron".
[[nodiscard]] std::string_view name(CellType type);

/// Vertices of a side (an edge of a 2D cell, a face of a 3D cell) of a cell type.
[[nodiscard]] constexpr int side_vertex_count(CellType type) {
  if (type == CellType::hexahedron) {
    return 4;
  }
  return type == CellType::tetrahedron ? 3 : 2;
}

/// A mesh on the host: vertex positions, cell-to-vertex connectivity, an integer tag per cell
/// (the physical group of a Gmsh file; 0 when there is none) and tagged sides (Gmsh's physical
/// groups one dimension lower, for boundary conditions by name). Plain values; owns its vectors.
struct MeshData {
  CellType cell_type = CellType::triangle;
  std::vector<double> positions;        ///< vertex_count * dimension(cell_type), xy(z) per vertex
  std::vector<std::int32_t> cells;      ///< cell_count * vertex_count(cell_type), 0-based
  std::vector<std::int32_t> cell_tags;  ///< one per cell, or empty (all 0)
  std::vector<std::pair<std::int32_t, std::string>> tag_names;  ///< physical names, when known
  /// side_vertex_count(cell_type) vertex indices per tagged side, in any order within a side;
  /// each must be the set of vertices of a side of some cell.
  std::vector<std::int32_t> side_vertices;
  std::vector<std::int32_t> side_tags;  ///< one per tagged side, each > 0
  std::vector<std::pair<std::int32_t, std::string>> side_tag_names;  ///< their physical names

  [[nodiscard]] std::int32_t vertex_total() const {
    return static_cast<std::int32_t>(positions.size() /
                                     static_cast<std::size_t>(dimension(cell_type)));
  }
  [[nodiscard]] std::int32_t cell_total() const {
    return static_cast<std::int32_t>(cells.size() /
                                     static_cast<std::size_t>(vertex_count(cell_type)));
  }
  [[nodiscard]] std::int32_t side_total() const {
    return static_cast<std::int32_t>(side_vertices.size() /
                                     static_cast<std::size_t>(side_vertex_count(cell_type)));
  }
};

/// Throws afem::Error, prefixed with `who`, unless the arrays of `mesh` are consistent: sizes
/// that are whole multiples, one tag per cell or none, one positive tag per tagged side, vertex
/// indices in range, finite positions. (Whether tagged sides are sides of cells is checked when a
/// Mesh is built.)
void check_consistent(const MeshData& mesh, std::string_view who);

}  // namespace afem::geometry
