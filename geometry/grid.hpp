#pragma once

/// @file
/// Grid<D> (Grid2D, Grid3D): a regular grid of squares or cubes given by origin, cell size and
/// resolution. Positions, sides and lookup are closed forms: a grid owns no buffers.

#include <Eigen/Core>

#include <array>
#include <cmath>
#include <cstdint>

#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/geometry/mesh_data.hpp"
#include "arenafem/geometry/reference_cell.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"

namespace afem::geometry {

/// What kernels see of a Grid<D>: the same interface as MeshView (cells, sides, boundary sides,
/// geometric map), computed from the grid's parameters. Cells are numbered x fastest. Sides come
/// in D families by normal axis a, each ordered with the index along a fastest (n_a + 1 of them),
/// then the other axes in increasing order; interior sides have the cell below as inner cell
/// (normal +e_a), boundary sides the only cell (normal pointing out). Side coordinates are the
/// reference coordinates along the other axes, in increasing order. Boundary sides carry the tags
/// of the box's faces (box_side_tag).
template <int D>
struct GridView {
  static constexpr CellType cell_type = D == 2 ? CellType::quadrilateral : CellType::hexahedron;
  using Cell = ReferenceCell<cell_type>;
  static constexpr int dimension = D;
  using Point = Eigen::Matrix<double, D, 1>;
  using Coords = Eigen::Matrix<double, D, 1>;
  using SideCoords = Eigen::Matrix<double, D - 1, 1>;
  using Jacobian = Eigen::Matrix<double, D, D>;

  double origin[D];
  double cell_size[D];
  double inverse_cell_size[D];  ///< 1 / cell_size, for the inverse Jacobian
  std::int32_t resolution[D];

  AFEM_HOST_DEVICE std::int32_t cell_count() const {
    std::int32_t n = 1;
    for (int d = 0; d < D; ++d) {
      n *= resolution[d];
    }
    return n;
  }
  /// Sides whose normal is along `axis`.
  AFEM_HOST_DEVICE std::int32_t family_count(int axis) const {
    return cell_count() / resolution[axis] * (resolution[axis] + 1);
  }
  AFEM_HOST_DEVICE std::int32_t side_count() const {
    std::int32_t n = 0;
    for (int a = 0; a < D; ++a) {
      n += family_count(a);
    }
    return n;
  }
  AFEM_HOST_DEVICE std::int32_t boundary_side_count() const {
    std::int32_t n = 0;
    for (int a = 0; a < D; ++a) {
      n += 2 * (cell_count() / resolution[a]);
    }
    return n;
  }

  AFEM_HOST_DEVICE std::int32_t cell_index(const std::int32_t (&index)[D]) const {
    std::int32_t c = 0;
    for (int d = D - 1; d >= 0; --d) {
      c = c * resolution[d] + index[d];
    }
    return c;
  }
  /// The grid index of cell `cell` (0 <= cell < cell_count()): D - 1 integer divisions, the
  /// last axis's index is what the others leave.
  AFEM_HOST_DEVICE void cell_grid_index(std::int32_t cell, std::int32_t (&index)[D]) const {
    for (int d = 0; d < D - 1; ++d) {
      const std::int32_t rest = cell / resolution[d];
      index[d] = cell - rest * resolution[d];
      cell = rest;
    }
    index[D - 1] = cell;
  }

  AFEM_HOST_DEVICE Point cell_position(std::int32_t cell, const Coords& xi) const {
    std::int32_t index[D];
    cell_grid_index(cell, index);
    return grid_position(index, xi);
  }
  /// The position at reference coordinates `xi` of the cell with grid index `index` (what
  /// cell_position computes once it has the index).
  AFEM_HOST_DEVICE Point grid_position(const std::int32_t (&index)[D], const Coords& xi) const {
    return grid_position(
        Point(Eigen::Map<const Eigen::Matrix<std::int32_t, D, 1>>(index).template cast<double>()),
        xi);
  }
  /// The same from the grid index as doubles.
  AFEM_HOST_DEVICE Point grid_position(const Point& index, const Coords& xi) const {
    // Whole-vector arithmetic: a point built from scalar stores and read back as a vector stalls
    // the loads that follow.
    return Eigen::Map<const Point>(origin) +
           (index + xi).cwiseProduct(Eigen::Map<const Point>(cell_size));
  }
  AFEM_HOST_DEVICE Point cell_vertex(std::int32_t cell, int local) const {
    Coords xi;
    for (int d = 0; d < D; ++d) {
      xi[d] = Cell::vertex_coordinate(local, d);
    }
    return cell_position(cell, xi);
  }
  /// Position of vertex `vertex` of the (n + 1)^D vertex lattice, numbered x fastest.
  AFEM_HOST_DEVICE Point vertex_position(std::int32_t vertex) const {
    Point x;
    for (int d = 0; d < D; ++d) {
      x[d] = origin[d] + (vertex % (resolution[d] + 1)) * cell_size[d];
      vertex /= resolution[d] + 1;
    }
    return x;
  }
  AFEM_HOST_DEVICE Jacobian cell_jacobian(std::int32_t /*cell*/, const Coords& /*xi*/) const {
    Jacobian jacobian = Jacobian::Zero();
    for (int d = 0; d < D; ++d) {
      jacobian(d, d) = cell_size[d];
    }
    return jacobian;
  }
  /// The inverse of cell_jacobian in closed form (the map is a scaling).
  AFEM_HOST_DEVICE Jacobian cell_inverse_jacobian(std::int32_t /*cell*/,
                                                  const Coords& /*xi*/) const {
    Jacobian inverse;
    for (int j = 0; j < D; ++j) {
      for (int i = 0; i < D; ++i) {
        inverse(i, j) = i == j ? inverse_cell_size[i] : 0.0;
      }
    }
    return inverse;
  }
  AFEM_HOST_DEVICE double cell_measure(std::int32_t /*cell*/) const {
    double measure = 1.0;
    for (int d = 0; d < D; ++d) {
      measure *= cell_size[d];
    }
    return measure;
  }

  /// Normal axis of `side` and the grid index of its position (index along the axis in
  /// [0, n_axis], the others cell indices).
  AFEM_HOST_DEVICE int side_grid_index(std::int32_t side, std::int32_t (&index)[D]) const {
    int axis = 0;
    while (side >= family_count(axis)) {
      side -= family_count(axis);
      ++axis;
    }
    index[axis] = side % (resolution[axis] + 1);
    side /= resolution[axis] + 1;
    for (int d = 0; d < D; ++d) {
      if (d != axis) {
        index[d] = side % resolution[d];
        side /= resolution[d];
      }
    }
    return axis;
  }
  AFEM_HOST_DEVICE std::int32_t side_inner_cell(std::int32_t side) const {
    std::int32_t index[D];
    const int axis = side_grid_index(side, index);
    if (index[axis] > 0) {
      --index[axis];
    }
    return cell_index(index);
  }
  AFEM_HOST_DEVICE std::int32_t side_outer_cell(std::int32_t side) const {
    std::int32_t index[D];
    const int axis = side_grid_index(side, index);
    if (index[axis] == 0 || index[axis] == resolution[axis]) {
      return -1;
    }
    return cell_index(index);
  }
  AFEM_HOST_DEVICE Coords side_inner_coords(std::int32_t side, const SideCoords& s) const {
    std::int32_t index[D];
    const int axis = side_grid_index(side, index);
    return side_coords(axis, index[axis] == 0 ? 0.0 : 1.0, s);
  }
  AFEM_HOST_DEVICE Coords side_outer_coords(std::int32_t side, const SideCoords& s) const {
    std::int32_t index[D];
    return side_coords(side_grid_index(side, index), 0.0, s);
  }
  AFEM_HOST_DEVICE Point side_position(std::int32_t side, const SideCoords& s) const {
    return cell_position(side_inner_cell(side), side_inner_coords(side, s));
  }
  AFEM_HOST_DEVICE Point side_normal(std::int32_t side) const {
    std::int32_t index[D];
    const int axis = side_grid_index(side, index);
    Point n = Point::Zero();
    n[axis] = index[axis] == 0 ? -1.0 : 1.0;
    return n;
  }
  AFEM_HOST_DEVICE double side_measure(std::int32_t side) const {
    std::int32_t index[D];
    const int axis = side_grid_index(side, index);
    return cell_measure(0) / cell_size[axis];
  }

  /// The `index`-th boundary side: for each axis, the low face's sides, then the high face's.
  AFEM_HOST_DEVICE std::int32_t boundary_side(std::int32_t index) const {
    std::int32_t first_of_family = 0;
    for (int a = 0; a < D; ++a) {
      const std::int32_t per_face = cell_count() / resolution[a];
      if (index < 2 * per_face) {
        const bool high = index >= per_face;
        const std::int32_t rest = high ? index - per_face : index;
        return first_of_family + rest * (resolution[a] + 1) + (high ? resolution[a] : 0);
      }
      index -= 2 * per_face;
      first_of_family += family_count(a);
    }
    return -1;
  }

  /// The tag of `side`: box_side_tag(axis, high) on the low or high face across `axis`, 0 for an
  /// interior side (so "xmin" ... "zmax" select the faces, as on a box_mesh).
  AFEM_HOST_DEVICE std::int32_t side_tag(std::int32_t side) const {
    std::int32_t index[D];
    const int axis = side_grid_index(side, index);
    if (index[axis] == 0 || index[axis] == resolution[axis]) {
      return box_side_tag(axis, index[axis] != 0);
    }
    return 0;
  }

  /// The cell containing `x` and the reference coordinates there; false outside the grid.
  AFEM_HOST_DEVICE bool locate(const Point& x, std::int32_t& cell, Coords& xi) const {
    std::int32_t index[D];
    for (int d = 0; d < D; ++d) {
      const double t = (x[d] - origin[d]) * inverse_cell_size[d];
      if (!(t >= -1e-10 && t <= resolution[d] + 1e-10)) {
        return false;
      }
      // t >= -1e-10 here: truncation is the floor but on [-1e-10, 0), where both clamp to 0.
      const auto truncated = static_cast<std::int32_t>(t);
      index[d] = truncated < resolution[d] ? truncated : resolution[d] - 1;
      xi[d] = t - index[d];
    }
    cell = cell_index(index);
    return true;
  }

private:
  AFEM_HOST_DEVICE static Coords side_coords(int axis, double across, const SideCoords& s) {
    Coords xi;
    int k = 0;
    for (int d = 0; d < D; ++d) {
      xi[d] = d == axis ? across : s[k++];
    }
    return xi;
  }
};

/// A regular grid of `resolution` cells of `cell_size` from `origin`: a value, owning no memory.
/// Invalid parameters (a resolution or cell size that is not positive) throw afem::Error naming
/// the axis.
template <int D>
class Grid {
public:
  static_assert(D == 2 || D == 3, "Grid is two- or three-dimensional");
  using View = GridView<D>;
  static constexpr int dimension = D;

  Grid(std::array<double, D> origin, std::array<double, D> cell_size,
       std::array<std::int32_t, D> resolution);

  [[nodiscard]] std::int32_t cell_count() const { return view_.cell_count(); }
  [[nodiscard]] std::int32_t vertex_count() const;
  [[nodiscard]] std::int32_t side_count() const { return view_.side_count(); }
  [[nodiscard]] std::int32_t boundary_side_count() const { return view_.boundary_side_count(); }
  [[nodiscard]] const View& view() const { return view_; }
  /// Cells per axis (the multigrid and stencil operators on its vertices take them).
  [[nodiscard]] std::array<std::int32_t, D> resolution() const {
    std::array<std::int32_t, D> cells{};
    for (std::size_t d = 0; d < D; ++d) {
      cells[d] = view_.resolution[d];
    }
    return cells;
  }

  /// Finds the cell and reference coordinates of each point (closed form); -1 outside the grid.
  void lookup(memory::ArrayView<const double> points, const LookupResult& result,
              memory::Arena& scratch) const;

  /// The grid as a quadrilateral or hexahedron mesh on the host (for output).
  [[nodiscard]] MeshData to_mesh_data() const;

private:
  View view_;
};

using Grid2D = Grid<2>;
using Grid3D = Grid<3>;

}  // namespace afem::geometry
