#pragma once

/// @file
/// Global vertex index of a cell's local vertex, for meshes (stored connectivity) and grids
/// (closed form, vertices numbered x fastest on the (n + 1)^D vertex lattice).

#include <cstdint>

#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh_view.hpp"
#include "arenafem/memory/config.hpp"

namespace afem::fem::detail {

template <geometry::CellType Type>
AFEM_HOST_DEVICE inline std::int32_t cell_vertex_index(const geometry::MeshView<Type>& mesh,
                                                       std::int32_t cell, int local) {
  return mesh.cells[static_cast<std::size_t>(cell) * geometry::ReferenceCell<Type>::vertex_count +
                    static_cast<std::size_t>(local)];
}

template <int D>
AFEM_HOST_DEVICE inline std::int32_t cell_vertex_index(const geometry::GridView<D>& grid,
                                                       std::int32_t cell, int local) {
  std::int32_t index[D];
  grid.cell_grid_index(cell, index);
  std::int32_t vertex = 0;
  for (int d = D - 1; d >= 0; --d) {
    const auto upper = static_cast<std::int32_t>(
        geometry::GridView<D>::Cell::vertex_coordinate(local, d) > 0.5 ? 1 : 0);
    vertex = vertex * (grid.resolution[d] + 1) + index[d] + upper;
  }
  return vertex;
}

}  // namespace afem::fem::detail
