#pragma once

/// @file
/// MeshView<Type>: what kernels see of a Mesh: positions, connectivity and topology as views, and
/// the geometric map of cells and sides.

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <Eigen/LU>

#include <cmath>
#include <cstdint>

#include "arenafem/geometry/reference_cell.hpp"
#include "arenafem/memory/array_view.hpp"

namespace afem::geometry {

/// A non-owning, trivially copyable view of a Mesh for kernels; valid while the Mesh lives and
/// until its buffers are replaced (set_positions, rebuild_topology).
template <CellType Type>
struct MeshView {
  using Cell = ReferenceCell<Type>;
  static constexpr CellType cell_type = Type;
  static constexpr int dimension = Cell::dimension;
  using Point = Eigen::Matrix<double, dimension, 1>;
  using Coords = Eigen::Matrix<double, dimension, 1>;          ///< reference coordinates in a cell
  using SideCoords = Eigen::Matrix<double, dimension - 1, 1>;  ///< coordinates on a side
  using Jacobian = Eigen::Matrix<double, dimension, dimension>;

  memory::ArrayView<const double> positions;         ///< dimension per vertex
  memory::ArrayView<const std::int32_t> cells;       ///< Cell::vertex_count per cell
  memory::ArrayView<const std::int32_t> side_cells;  ///< inner, outer (-1 on the boundary)
  memory::ArrayView<const std::uint8_t>
      side_local;  ///< local side index in inner, outer (0xFF: none)
  memory::ArrayView<const std::uint8_t>
      side_outer_vertex;  ///< outer cell's local vertex per side vertex (0xFF: none)
  memory::ArrayView<const std::int32_t> boundary_sides;
  memory::ArrayView<const std::int32_t> side_tags;  ///< one per side, 0 when untagged

  AFEM_HOST_DEVICE std::int32_t cell_count() const {
    return static_cast<std::int32_t>(cells.size() / Cell::vertex_count);
  }
  AFEM_HOST_DEVICE std::int32_t side_count() const {
    return static_cast<std::int32_t>(side_cells.size() / 2);
  }
  AFEM_HOST_DEVICE std::int32_t boundary_side_count() const {
    return static_cast<std::int32_t>(boundary_sides.size());
  }

  AFEM_HOST_DEVICE Point vertex(std::int32_t index) const {
    Point point;
    for (int d = 0; d < dimension; ++d) {
      point[d] = positions[static_cast<std::size_t>(index) * dimension + d];
    }
    return point;
  }
  AFEM_HOST_DEVICE Point cell_vertex(std::int32_t cell, int local) const {
    return vertex(cells[static_cast<std::size_t>(cell) * Cell::vertex_count + local]);
  }

  /// Position of the point at reference coordinates `xi` in `cell`.
  AFEM_HOST_DEVICE Point cell_position(std::int32_t cell, const Coords& xi) const {
    double weights[Cell::vertex_count];
    shape_values<Type>(xi, weights);
    Point point = Point::Zero();
    for (int v = 0; v < Cell::vertex_count; ++v) {
      point += weights[v] * cell_vertex(cell, v);
    }
    return point;
  }

  /// d(position)/d(xi) at `xi` in `cell` (the deformation gradient of the reference map).
  AFEM_HOST_DEVICE Jacobian cell_jacobian(std::int32_t cell, const Coords& xi) const {
    double gradients[Cell::vertex_count * dimension];
    shape_gradients<Type>(xi, gradients);
    Jacobian jacobian = Jacobian::Zero();
    for (int v = 0; v < Cell::vertex_count; ++v) {
      const Point x = cell_vertex(cell, v);
      for (int d = 0; d < dimension; ++d) {
        jacobian.col(d) += gradients[v * dimension + d] * x;
      }
    }
    return jacobian;
  }

  /// Area or volume of `cell` (exact for the affine and multilinear maps).
  AFEM_HOST_DEVICE double cell_measure(std::int32_t cell) const {
    if constexpr (Cell::simplex) {
      const double factorial = dimension == 2 ? 2.0 : 6.0;
      return std::abs(cell_jacobian(cell, Coords::Zero()).determinant()) / factorial;
    } else {
      constexpr double lo = 0.21132486540518711775;  // (1 - 1/sqrt(3)) / 2: 2-point Gauss
      constexpr int points = 1 << dimension;
      double sum = 0.0;
      for (int q = 0; q < points; ++q) {
        Coords xi;
        for (int d = 0; d < dimension; ++d) {
          xi[d] = ((q >> d) & 1) != 0 ? 1.0 - lo : lo;
        }
        sum += cell_jacobian(cell, xi).determinant();
      }
      return sum / points;
    }
  }

  AFEM_HOST_DEVICE std::int32_t side_inner_cell(std::int32_t side) const {
    return side_cells[2 * static_cast<std::size_t>(side)];
  }
  /// The cell across `side`, or -1 on the boundary.
  AFEM_HOST_DEVICE std::int32_t side_outer_cell(std::int32_t side) const {
    return side_cells[2 * static_cast<std::size_t>(side) + 1];
  }
  AFEM_HOST_DEVICE std::int32_t boundary_side(std::int32_t index) const {
    return boundary_sides[static_cast<std::size_t>(index)];
  }
  /// The tag of `side` (a Gmsh physical group of the mesh file), 0 when it has none.
  AFEM_HOST_DEVICE std::int32_t side_tag(std::int32_t side) const {
    return side_tags[static_cast<std::size_t>(side)];
  }

  /// Reference coordinates in the inner cell of the side point at side coordinates `s`.
  AFEM_HOST_DEVICE Coords side_inner_coords(std::int32_t side, const SideCoords& s) const {
    const int local = static_cast<int>(side_local[2 * static_cast<std::size_t>(side)]);
    double weights[Cell::side_vertex_count];
    side_weights<Type>(s, weights);
    Coords xi = Coords::Zero();
    for (int k = 0; k < Cell::side_vertex_count; ++k) {
      const int vertex = Cell::side_vertex(local, k);
      for (int d = 0; d < dimension; ++d) {
        xi[d] += weights[k] * Cell::vertex_coordinate(vertex, d);
      }
    }
    return xi;
  }

  /// Reference coordinates in the outer cell of the same side point (the side must be interior).
  AFEM_HOST_DEVICE Coords side_outer_coords(std::int32_t side, const SideCoords& s) const {
    double weights[Cell::side_vertex_count];
    side_weights<Type>(s, weights);
    Coords xi = Coords::Zero();
    for (int k = 0; k < Cell::side_vertex_count; ++k) {
      const int vertex = static_cast<int>(
          side_outer_vertex[static_cast<std::size_t>(side) * Cell::side_vertex_count + k]);
      for (int d = 0; d < dimension; ++d) {
        xi[d] += weights[k] * Cell::vertex_coordinate(vertex, d);
      }
    }
    return xi;
  }

  /// Position of the side point at side coordinates `s`.
  AFEM_HOST_DEVICE Point side_position(std::int32_t side, const SideCoords& s) const {
    return cell_position(side_inner_cell(side), side_inner_coords(side, s));
  }

  /// Unit normal at the side's centre, pointing out of the inner cell.
  AFEM_HOST_DEVICE Point side_normal(std::int32_t side) const {
    const Point n = side_area_vector(side, center());
    return n / n.norm();
  }

  /// Length (2D) or area (3D) of `side`.
  AFEM_HOST_DEVICE double side_measure(std::int32_t side) const {
    if constexpr (Cell::side_vertex_count == 4) {
      constexpr double lo = 0.21132486540518711775;
      double sum = 0.0;
      for (int q = 0; q < 4; ++q) {
        SideCoords s;
        s[0] = (q & 1) != 0 ? 1.0 - lo : lo;
        s[1] = (q & 2) != 0 ? 1.0 - lo : lo;
        sum += side_area_vector(side, s).norm();
      }
      return sum / 4.0;
    } else {
      return side_area_vector(side, center()).norm() / (Cell::side_vertex_count == 3 ? 2.0 : 1.0);
    }
  }

private:
  AFEM_HOST_DEVICE static SideCoords center() {
    SideCoords s;
    for (int d = 0; d < dimension - 1; ++d) {
      s[d] = Cell::side_vertex_count == 3 ? 1.0 / 3.0 : 0.5;
    }
    return s;
  }

  /// d(position)/du x d(position)/dv on a face, the rotated tangent on an edge: its direction is
  /// the outward normal, its length the side's measure density.
  AFEM_HOST_DEVICE Point side_area_vector(std::int32_t side, const SideCoords& s) const {
    const std::int32_t cell = side_inner_cell(side);
    const int local = static_cast<int>(side_local[2 * static_cast<std::size_t>(side)]);
    Point x[Cell::side_vertex_count];
    for (int k = 0; k < Cell::side_vertex_count; ++k) {
      x[k] = cell_vertex(cell, Cell::side_vertex(local, k));
    }
    Point result;
    if constexpr (dimension == 2) {
      const Point t = x[1] - x[0];
      result[0] = t[1];
      result[1] = -t[0];
    } else if constexpr (Cell::side_vertex_count == 3) {
      result = (x[1] - x[0]).cross(x[2] - x[0]);
    } else {
      const Point du = (1.0 - s[1]) * (x[1] - x[0]) + s[1] * (x[2] - x[3]);
      const Point dv = (1.0 - s[0]) * (x[3] - x[0]) + s[0] * (x[2] - x[1]);
      result = du.cross(dv);
    }
    return result;
  }
};

}  // namespace afem::geometry
