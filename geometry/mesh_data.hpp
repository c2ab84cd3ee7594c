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

/// A mesh on the host: vertex positions, cell-to-vertex connectivity and an integer tag per cell
/// (the physical group of a Gmsh file; 0 when there is none). Plain values; owns its vectors.
struct MeshData {
  CellType cell_type = CellType::triangle;
  std::vector<double> positions;        ///< vertex_count * dimension(cell_type), xy(z) per vertex
  std::vector<std::int32_t> cells;      ///< cell_count * vertex_count(cell_type), 0-based
  std::vector<std::int32_t> cell_tags;  ///< one per cell, or empty (all 0)
  std::vector<std::pair<std::int32_t, std::string>> tag_names;  ///< physical names, when known

  [[nodiscard]] std::int32_t vertex_total() const {
    return static_cast<std::int32_t>(positions.size() /
                                     static_cast<std::size_t>(dimension(cell_type)));
  }
  [[nodiscard]] std::int32_t cell_total() const {
    return static_cast<std::int32_t>(cells.size() /
                                     static_cast<std::size_t>(vertex_count(cell_type)));
  }
};

/// Throws afem::Error, prefixed with `who`, unless the arrays of `mesh` are consistent: sizes
/// that are whole multiples, one tag per cell or none, vertex indices in range, finite positions.
void check_consistent(const MeshData& mesh, std::string_view who);

}  // namespace afem::geometry
