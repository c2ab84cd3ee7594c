#include "geometry/mesh_data.hpp"

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

}  // namespace afem::geometry
