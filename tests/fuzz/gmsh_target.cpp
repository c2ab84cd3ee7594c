// Fuzz target body: the Gmsh reader.
#include <cstdlib>
#include <sstream>
#include <string>

#include "arenafem/geometry/gmsh.hpp"
#include "arenafem/memory/error.hpp"
#include "targets.hpp"

namespace afem::test {

namespace {
void require(bool condition) {
  if (!condition) {
    std::abort();  // an accepted mesh that breaks an invariant: a finding
  }
}
}  // namespace

bool fuzz_gmsh_input(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  geometry::MeshData mesh;
  try {
    mesh = geometry::read_gmsh(in, "fuzz input");
  } catch (const Error&) {
    return false;
  }
  const auto dimension = static_cast<std::size_t>(geometry::dimension(mesh.cell_type));
  const auto corners = static_cast<std::size_t>(geometry::vertex_count(mesh.cell_type));
  require(mesh.positions.size() % dimension == 0);
  require(mesh.cells.size() % corners == 0);
  const std::size_t vertices = mesh.positions.size() / dimension;
  for (const std::int32_t v : mesh.cells) {
    require(v >= 0 && static_cast<std::size_t>(v) < vertices);
  }
  require(mesh.cell_tags.empty() || mesh.cell_tags.size() == mesh.cells.size() / corners);
  const auto side_corners = static_cast<std::size_t>(geometry::side_vertex_count(mesh.cell_type));
  require(mesh.side_vertices.size() % side_corners == 0);
  require(mesh.side_tags.size() == mesh.side_vertices.size() / side_corners);
  for (const std::int32_t v : mesh.side_vertices) {
    require(v >= 0 && static_cast<std::size_t>(v) < vertices);
  }
  for (const std::int32_t tag : mesh.side_tags) {
    require(tag > 0);
  }
  return true;
}

}  // namespace afem::test
