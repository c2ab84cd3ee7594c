#include "arenafem/geometry/box_mesh.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "arenafem/geometry/reference_cell.hpp"
#include "arenafem/memory/error.hpp"

namespace afem::geometry {
namespace {

constexpr std::array<char, 3> k_axis_names = {'x', 'y', 'z'};

/// The shortest text that reads back as `value`.
std::string format_double(double value) {
  std::array<char, 32> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return {buffer.data(), result.ptr};
}

void check_box(CellType type, const std::array<std::int32_t, 3>& resolution,
               const std::array<double, 3>& lower, const std::array<double, 3>& upper) {
  const int dim = dimension(type);
  for (std::size_t axis = 0; axis < static_cast<std::size_t>(dim); ++axis) {
    const std::string axis_name(1, k_axis_names[axis]);
    if (resolution[axis] <= 0) {
      throw Error("box_mesh(" + std::string(name(type)) + "): resolution along " + axis_name +
                  " must be positive, got " + std::to_string(resolution[axis]));
    }
    if (!std::isfinite(lower[axis]) || !std::isfinite(upper[axis]) ||
        !(upper[axis] > lower[axis])) {
      throw Error("box_mesh(" + std::string(name(type)) + "): upper bound along " + axis_name +
                  " (" + format_double(upper[axis]) + ") must be finite and exceed the lower " +
                  "bound (" + format_double(lower[axis]) + ")");
    }
  }
}

/// Coordinate of grid line `i` of `n` between `lower` and `upper`, exact at both ends.
double grid_coordinate(double lower, double upper, std::int32_t i, std::int32_t n) {
  if (i == n) {
    return upper;
  }
  return lower + (upper - lower) * (static_cast<double>(i) / static_cast<double>(n));
}

/// A cell or side as corner numbers of its grid cell (see k_corner_offsets).
using Corners = std::vector<int>;

/// The corners of a grid cell in hexahedron order: bottom face (z = 0) counterclockwise, then
/// the top face above it; 2D grid cells use the first four. Offsets along x, y, z.
constexpr std::array<std::array<int, 3>, 8> k_corner_offsets = {
    {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}}};

/// The cells of one grid cell, as box_mesh documents them, in corner numbers.
std::vector<Corners> grid_cell_cells(CellType type) {
  switch (type) {
    case CellType::quadrilateral:
      return {{0, 1, 2, 3}};
    case CellType::triangle:
      return {{0, 1, 2}, {0, 2, 3}};
    case CellType::hexahedron:
      return {{0, 1, 2, 3, 4, 5, 6, 7}};
    case CellType::tetrahedron: {
      // The corners around the diagonal 0-6, in the order that makes each (0, ring[t],
      // ring[t+1], 6) positively oriented.
      constexpr std::array<int, 6> ring = {1, 2, 3, 7, 4, 5};
      std::vector<Corners> cells;
      for (std::size_t t = 0; t < ring.size(); ++t) {
        cells.push_back({0, ring[t], ring[(t + 1) % ring.size()], 6});
      }
      return cells;
    }
  }
  return {};
}

/// The local sides of a cell type's cells as ReferenceCell lists them (normal pointing out of the
/// cell), as local vertex numbers.
template <CellType Type>
std::vector<Corners> local_sides() {
  using Cell = ReferenceCell<Type>;
  std::vector<Corners> sides(Cell::side_count);
  for (int side = 0; side < Cell::side_count; ++side) {
    for (int k = 0; k < Cell::side_vertex_count; ++k) {
      sides[static_cast<std::size_t>(side)].push_back(Cell::side_vertex(side, k));
    }
  }
  return sides;
}

std::vector<Corners> local_sides(CellType type) {
  switch (type) {
    case CellType::triangle:
      return local_sides<CellType::triangle>();
    case CellType::quadrilateral:
      return local_sides<CellType::quadrilateral>();
    case CellType::tetrahedron:
      return local_sides<CellType::tetrahedron>();
    case CellType::hexahedron:
      return local_sides<CellType::hexahedron>();
  }
  return {};
}

/// The sides of a grid cell's cells that lie in its face across `axis` (the low face, or the
/// `high` one), in corner numbers: each local side whose corners all lie in that face, cell by
/// cell (grid_cell_cells order), each in its cell's own vertex order, so that its normal points
/// out of the cell. One side per grid face, but two triangles for tetrahedra: they split a low
/// face along its diagonal through corner 0 (v000), a high face along its diagonal through
/// corner 6 (v111), each triangle coming from another tetrahedron.
std::vector<Corners> grid_face_sides(CellType type, int axis, bool high) {
  const int across = high ? 1 : 0;
  const std::vector<Corners> sides = local_sides(type);
  std::vector<Corners> on_face;
  for (const Corners& cell : grid_cell_cells(type)) {
    for (const Corners& side : sides) {
      Corners corners;
      for (const int local : side) {
        corners.push_back(cell[static_cast<std::size_t>(local)]);
      }
      const bool in_face = std::all_of(corners.begin(), corners.end(), [&](int corner) {
        return k_corner_offsets[static_cast<std::size_t>(corner)][static_cast<std::size_t>(axis)] ==
               across;
      });
      if (in_face) {
        on_face.push_back(std::move(corners));
      }
    }
  }
  return on_face;
}

}  // namespace

std::vector<std::pair<std::int32_t, std::string>> box_side_tag_names(int dimension) {
  AFEM_EXPECTS(
      dimension >= 1 && dimension <= 3,
      "box_side_tag_names: dimension " + std::to_string(dimension) + ", expected 1, 2 or 3");
  std::vector<std::pair<std::int32_t, std::string>> names;
  for (int axis = 0; axis < dimension; ++axis) {
    const char axis_name = k_axis_names[static_cast<std::size_t>(axis)];
    names.emplace_back(box_side_tag(axis, false), std::string(1, axis_name) + "min");
    names.emplace_back(box_side_tag(axis, true), std::string(1, axis_name) + "max");
  }
  return names;
}

MeshData box_mesh(CellType type, std::array<std::int32_t, 3> resolution,
                  std::array<double, 3> lower, std::array<double, 3> upper) {
  check_box(type, resolution, lower, upper);
  const int dim = dimension(type);
  const std::int64_t nx = resolution[0];
  const std::int64_t ny = resolution[1];
  const std::int64_t nz = dim == 3 ? resolution[2] : 0;
  const std::int64_t grid_cells = nx * ny * (dim == 3 ? nz : 1);
  const std::vector<Corners> cell_corners = grid_cell_cells(type);
  const auto cells_per_grid_cell = static_cast<std::int64_t>(cell_corners.size());
  const std::int64_t vertex_total = (nx + 1) * (ny + 1) * (nz + 1);
  const std::int64_t cell_total = grid_cells * cells_per_grid_cell;
  const std::int64_t grid_faces = dim == 3 ? 2 * (nx * ny + ny * nz + nx * nz) : 2 * (nx + ny);
  const std::int64_t side_total = grid_faces * (type == CellType::tetrahedron ? 2 : 1);
  const std::int64_t index_limit = std::numeric_limits<std::int32_t>::max();
  if (vertex_total > index_limit || cell_total > index_limit || side_total > index_limit) {
    throw Error("box_mesh(" + std::string(name(type)) + "): resolution " + std::to_string(nx) +
                " x " + std::to_string(ny) + (dim == 3 ? " x " + std::to_string(nz) : "") +
                " gives " + std::to_string(vertex_total) + " vertices, " +
                std::to_string(cell_total) + " cells and " + std::to_string(side_total) +
                " boundary sides; at most " + std::to_string(index_limit) +
                " of each fit std::int32_t indices");
  }

  MeshData mesh;
  mesh.cell_type = type;
  mesh.positions.reserve(static_cast<std::size_t>(vertex_total * dim));
  const auto ix = static_cast<std::int32_t>(nx);
  const auto iy = static_cast<std::int32_t>(ny);
  const auto iz = static_cast<std::int32_t>(nz);
  for (std::int32_t k = 0; k <= iz; ++k) {
    for (std::int32_t j = 0; j <= iy; ++j) {
      for (std::int32_t i = 0; i <= ix; ++i) {
        mesh.positions.push_back(grid_coordinate(lower[0], upper[0], i, ix));
        mesh.positions.push_back(grid_coordinate(lower[1], upper[1], j, iy));
        if (dim == 3) {
          mesh.positions.push_back(grid_coordinate(lower[2], upper[2], k, iz));
        }
      }
    }
  }

  const std::int32_t row = ix + 1;
  const std::int32_t layer = row * (iy + 1);
  // The vertices at the corners of grid cell (i, j, k), in corner order (the first four in 2D).
  const std::size_t corner_count = dim == 3 ? 8 : 4;
  const auto grid_cell_vertices = [&](std::int32_t i, std::int32_t j, std::int32_t k) {
    std::array<std::int32_t, 8> v{};
    for (std::size_t corner = 0; corner < corner_count; ++corner) {
      const std::array<int, 3>& offset = k_corner_offsets[corner];
      v[corner] = (i + offset[0]) + row * (j + offset[1]) + layer * (k + offset[2]);
    }
    return v;
  };

  mesh.cells.reserve(static_cast<std::size_t>(cell_total * vertex_count(type)));
  const std::int32_t layers = dim == 3 ? iz : 1;
  for (std::int32_t k = 0; k < layers; ++k) {
    for (std::int32_t j = 0; j < iy; ++j) {
      for (std::int32_t i = 0; i < ix; ++i) {
        const std::array<std::int32_t, 8> v = grid_cell_vertices(i, j, k);
        for (const Corners& cell : cell_corners) {
          for (const int corner : cell) {
            mesh.cells.push_back(v[static_cast<std::size_t>(corner)]);
          }
        }
      }
    }
  }

  // Boundary sides: axis by axis, the low face before the high one; a face's grid cells with the
  // remaining axes in increasing order, the lower one fastest (2D grids: a third axis of one
  // layer).
  mesh.side_vertices.reserve(static_cast<std::size_t>(side_total * side_vertex_count(type)));
  mesh.side_tags.reserve(static_cast<std::size_t>(side_total));
  const std::array<std::int32_t, 3> n = {ix, iy, layers};
  for (int axis = 0; axis < dim; ++axis) {
    const std::size_t fast = axis == 0 ? 1 : 0;
    const std::size_t slow = axis == 2 ? 1 : 2;
    for (const bool high : {false, true}) {
      const std::vector<Corners> face_sides = grid_face_sides(type, axis, high);
      const std::int32_t tag = box_side_tag(axis, high);
      std::array<std::int32_t, 3> index{};
      index[static_cast<std::size_t>(axis)] = high ? n[static_cast<std::size_t>(axis)] - 1 : 0;
      for (index[slow] = 0; index[slow] < n[slow]; ++index[slow]) {
        for (index[fast] = 0; index[fast] < n[fast]; ++index[fast]) {
          const std::array<std::int32_t, 8> v = grid_cell_vertices(index[0], index[1], index[2]);
          for (const Corners& side : face_sides) {
            for (const int corner : side) {
              mesh.side_vertices.push_back(v[static_cast<std::size_t>(corner)]);
            }
            mesh.side_tags.push_back(tag);
          }
        }
      }
    }
  }
  mesh.side_tag_names = box_side_tag_names(dim);
  return mesh;
}

}  // namespace afem::geometry
