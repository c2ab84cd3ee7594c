#include "geometry/box_mesh.hpp"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

#include "memory/error.hpp"

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

}  // namespace

MeshData box_mesh(CellType type, std::array<std::int32_t, 3> resolution,
                  std::array<double, 3> lower, std::array<double, 3> upper) {
  check_box(type, resolution, lower, upper);
  const int dim = dimension(type);
  const std::int64_t nx = resolution[0];
  const std::int64_t ny = resolution[1];
  const std::int64_t nz = dim == 3 ? resolution[2] : 0;
  const std::int64_t grid_cells = nx * ny * (dim == 3 ? nz : 1);
  const std::int64_t cells_per_grid_cell = type == CellType::triangle      ? 2
                                           : type == CellType::tetrahedron ? 6
                                                                           : 1;
  const std::int64_t vertex_total = (nx + 1) * (ny + 1) * (nz + 1);
  const std::int64_t cell_total = grid_cells * cells_per_grid_cell;
  const std::int64_t index_limit = std::numeric_limits<std::int32_t>::max();
  if (vertex_total > index_limit || cell_total > index_limit) {
    throw Error("box_mesh(" + std::string(name(type)) + "): resolution " + std::to_string(nx) +
                " x " + std::to_string(ny) + (dim == 3 ? " x " + std::to_string(nz) : "") +
                " gives " + std::to_string(vertex_total) + " vertices and " +
                std::to_string(cell_total) + " cells; at most " + std::to_string(index_limit) +
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

  mesh.cells.reserve(static_cast<std::size_t>(cell_total * vertex_count(type)));
  const std::int32_t row = ix + 1;
  const std::int32_t layer = row * (iy + 1);
  const std::int32_t layers = dim == 3 ? iz : 1;
  for (std::int32_t k = 0; k < layers; ++k) {
    for (std::int32_t j = 0; j < iy; ++j) {
      for (std::int32_t i = 0; i < ix; ++i) {
        // Corners of the grid cell in hexahedron order: bottom face counterclockwise, then top.
        const std::int32_t v000 = i + row * j + layer * k;
        const std::array<std::int32_t, 8> v = {
            v000,         v000 + 1,         v000 + 1 + row,         v000 + row,
            v000 + layer, v000 + 1 + layer, v000 + 1 + row + layer, v000 + row + layer};
        switch (type) {
          case CellType::quadrilateral:
            mesh.cells.insert(mesh.cells.end(), {v[0], v[1], v[2], v[3]});
            break;
          case CellType::triangle:
            mesh.cells.insert(mesh.cells.end(), {v[0], v[1], v[2], v[0], v[2], v[3]});
            break;
          case CellType::hexahedron:
            mesh.cells.insert(mesh.cells.end(), v.begin(), v.end());
            break;
          case CellType::tetrahedron: {
            // The corners around the diagonal v[0]-v[6], in the order that makes each
            // (v[0], ring[t], ring[t+1], v[6]) positively oriented.
            constexpr std::array<std::size_t, 6> ring = {1, 2, 3, 7, 4, 5};
            for (std::size_t t = 0; t < ring.size(); ++t) {
              mesh.cells.insert(mesh.cells.end(),
                                {v[0], v[ring[t]], v[ring[(t + 1) % ring.size()]], v[6]});
            }
            break;
          }
        }
      }
    }
  }
  return mesh;
}

}  // namespace afem::geometry
