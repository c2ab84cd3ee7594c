#pragma once

/// @file
/// BSplineElement<D>: the quadratic B-spline basis as a cell's element on a grid. The basis
/// function of a node is N((x - c) / h) along every axis, with N(t) = 3/4 - t^2 for |t| <= 1/2,
/// (3/2 - |t|)^2 / 2 for 1/2 <= |t| <= 3/2 and 0 beyond, centred at c, the centre of a cell (or of
/// a ghost cell one layer outside the grid). A point of cell i is in the support of the 3^D nodes
/// centred in cells i - 1, i and i + 1 of every axis: the element's nodes, numbered with the first
/// axis fastest, node (a_0, a_1, ...) centred at reference coordinates a_d - 1/2. The basis is
/// C^1, sums to one and reproduces linear fields (sum_i N_i(x) c_i = x); it does not interpolate.

#include <Eigen/Core>

#include <utility>

#include "arenafem/geometry/reference_cell.hpp"
#include "arenafem/memory/config.hpp"

namespace afem::fem {

template <int D>
struct BSplineElement {
  static_assert(D == 2 || D == 3, "B-spline elements are on 2D and 3D grids");
  static constexpr geometry::CellType cell_type =
      D == 2 ? geometry::CellType::quadrilateral : geometry::CellType::hexahedron;
  static constexpr int dimension = D;
  static constexpr int degree = 2;
  static constexpr bool simplex = false;
  static constexpr int node_count = D == 2 ? 9 : 27;
  using Coords = Eigen::Matrix<double, D, 1>;

  /// The node's offset (0, 1 or 2) along `axis`: its support is centred in the cell that far
  /// from the cell before this one.
  AFEM_HOST_DEVICE static constexpr int node_offset(int node, int axis) {
    for (int d = 0; d < axis; ++d) {
      node /= 3;
    }
    return node % 3;
  }
  /// Reference coordinate of the node's centre: -1/2, 1/2 or 3/2.
  AFEM_HOST_DEVICE static constexpr double node_coordinate(int node, int axis) {
    return node_offset(node, axis) - 0.5;
  }

  /// Basis values at `xi` (in [0, 1]^D): `values[node]`.
  AFEM_HOST_DEVICE static AFEM_INLINE void values(const Coords& xi, double* values) {
    double line[D][3];
    line_values(xi, line);
    tensor_values(line, values, std::make_integer_sequence<int, node_count>{});
  }

  /// Basis gradients with respect to reference coordinates: `gradients[node * D + d]`.
  AFEM_HOST_DEVICE static void gradients(const Coords& xi, double* gradients) {
    double line[D][3];
    double slope[D][3];
    line_values(xi, line);
    for (int d = 0; d < D; ++d) {
      slope[d][0] = xi[d] - 1.0;
      slope[d][1] = 1.0 - 2.0 * xi[d];
      slope[d][2] = xi[d];
    }
    tensor_gradients(line, slope, gradients, std::make_integer_sequence<int, node_count>{});
  }

  /// Nodes along each axis: node (a_0, a_1, ...) is node a_0 + 3 a_1 + 9 a_2, and its basis
  /// function is the product of line[d][a_d] over the axes.
  static constexpr int line_node_count = 3;

  /// The three 1D functions along every axis at `xi`: `line[d][a]` of the node at offset a.
  AFEM_HOST_DEVICE static void line_values(const Coords& xi, double (&line)[D][3]) {
    for (int d = 0; d < D; ++d) {
      const double x = xi[d];
      line[d][0] = 0.5 * (1.0 - x) * (1.0 - x);
      line[d][1] = 0.75 - (x - 0.5) * (x - 0.5);
      line[d][2] = 0.5 * x * x;
    }
  }

private:
  template <int... Node>
  AFEM_HOST_DEVICE static AFEM_INLINE void tensor_values(
      const double (&line)[D][3], double* values, std::integer_sequence<int, Node...> /*n*/) {
    ((values[Node] = tensor_value<Node>(line)), ...);
  }
  template <int Node>
  AFEM_HOST_DEVICE static AFEM_INLINE double tensor_value(const double (&line)[D][3]) {
    double value = 1.0;
    for (int d = 0; d < D; ++d) {
      value *= line[d][node_offset(Node, d)];
    }
    return value;
  }
  template <int... Node>
  AFEM_HOST_DEVICE static AFEM_INLINE void tensor_gradients(
      const double (&line)[D][3], const double (&slope)[D][3], double* gradients,
      std::integer_sequence<int, Node...> /*n*/) {
    (tensor_gradient<Node>(line, slope, gradients), ...);
  }
  template <int Node>
  AFEM_HOST_DEVICE static AFEM_INLINE void tensor_gradient(const double (&line)[D][3],
                                                           const double (&slope)[D][3],
                                                           double* gradients) {
    for (int d = 0; d < D; ++d) {
      double g = 1.0;
      for (int e = 0; e < D; ++e) {
        g *= e == d ? slope[e][node_offset(Node, e)] : line[e][node_offset(Node, e)];
      }
      gradients[Node * D + d] = g;
    }
  }
};

}  // namespace afem::fem
