#include "arenafem/geometry/mesh_data.hpp"

#include <cmath>
#include <string>

#include "arenafem/memory/error.hpp"

namespace afem::geometry {

std::string_view name(CellType type) {
  switch (type) {
    case CellType::triangle:
      return "triangle";
    case CellType::quadrilateral:
      return "quadrilateral";
    case CellType::tetrahedron:
      return "tetrahedron";
    case CellType::hexahedron:
      return "hexahedron";
  }
  return "unknown";
}

void check_consistent(const MeshData& mesh, std::string_view who) {
  const auto dim = static_cast<std::size_t>(dimension(mesh.cell_type));
  const auto corners = static_cast<std::size_t>(vertex_count(mesh.cell_type));
  const std::string what = std::string(who) + ": " + std::string(name(mesh.cell_type)) + " mesh: ";
  AFEM_EXPECTS(mesh.positions.size() % dim == 0,
               what + "positions hold " + std::to_string(mesh.positions.size()) +
                   " values, not a multiple of the dimension " + std::to_string(dim));
  AFEM_EXPECTS(mesh.cells.size() % corners == 0,
               what + "cells hold " + std::to_string(mesh.cells.size()) +
                   " indices, not a multiple of " + std::to_string(corners) + " per cell");
  AFEM_EXPECTS(mesh.cell_tags.empty() || mesh.cell_tags.size() == mesh.cells.size() / corners,
               what + "cell_tags hold " + std::to_string(mesh.cell_tags.size()) +
                   " tags, expected none or one per cell (" +
                   std::to_string(mesh.cells.size() / corners) + ")");
  const std::int32_t vertices = mesh.vertex_total();
  for (std::size_t i = 0; i < mesh.cells.size(); ++i) {
    AFEM_EXPECTS(mesh.cells[i] >= 0 && mesh.cells[i] < vertices,
                 what + "cell " + std::to_string(i / corners) + " refers to vertex " +
                     std::to_string(mesh.cells[i]) + ", expected an index below " +
                     std::to_string(vertices));
  }
  const auto side_corners = static_cast<std::size_t>(side_vertex_count(mesh.cell_type));
  AFEM_EXPECTS(mesh.side_vertices.size() % side_corners == 0,
               what + "side_vertices hold " + std::to_string(mesh.side_vertices.size()) +
                   " indices, not a multiple of " + std::to_string(side_corners) + " per side");
  AFEM_EXPECTS(mesh.side_tags.size() == mesh.side_vertices.size() / side_corners,
               what + "side_tags hold " + std::to_string(mesh.side_tags.size()) +
                   " tags, expected one per tagged side (" +
                   std::to_string(mesh.side_vertices.size() / side_corners) + ")");
  for (std::size_t i = 0; i < mesh.side_tags.size(); ++i) {
    AFEM_EXPECTS(mesh.side_tags[i] > 0, what + "tagged side " + std::to_string(i) + " has tag " +
                                            std::to_string(mesh.side_tags[i]) +
                                            ", expected a positive tag");
  }
  for (std::size_t i = 0; i < mesh.side_vertices.size(); ++i) {
    AFEM_EXPECTS(mesh.side_vertices[i] >= 0 && mesh.side_vertices[i] < vertices,
                 what + "tagged side " + std::to_string(i / side_corners) + " refers to vertex " +
                     std::to_string(mesh.side_vertices[i]) + ", expected an index below " +
                     std::to_string(vertices));
  }
  for (std::size_t i = 0; i < mesh.positions.size(); ++i) {
    AFEM_EXPECTS(std::isfinite(mesh.positions[i]), what + "vertex " + std::to_string(i / dim) +
                                                       " has a coordinate that is not "
                                                       "finite");
  }
}

}  // namespace afem::geometry
