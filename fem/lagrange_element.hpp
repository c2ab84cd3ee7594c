#pragma once

/// @file
/// LagrangeElement<Type, Degree>: the nodal Lagrange basis on a reference cell (P1/P2 on
/// triangles and tetrahedra, Q1/Q2 on quadrilaterals and hexahedra). Nodes are listed by the
/// entity they sit on: vertices, then edge midpoints, face centres and the cell centre (degree 2),
/// so that neighbouring cells share a node exactly when they share its entity.

#include <Eigen/Core>

#include <utility>

#include "arenafem/geometry/reference_cell.hpp"
#include "arenafem/memory/config.hpp"

namespace afem::fem {

/// The entity a node sits on.
enum class NodeEntity : int { vertex = 0, edge = 1, face = 2, interior = 3 };

template <geometry::CellType Type, int Degree>
struct LagrangeElement {
  static_assert(Degree == 1 || Degree == 2, "Lagrange elements are of degree 1 or 2");
  using Cell = geometry::ReferenceCell<Type>;
  static constexpr geometry::CellType cell_type = Type;
  static constexpr int dimension = Cell::dimension;
  static constexpr int degree = Degree;
  static constexpr bool simplex = Cell::simplex;
  using Coords = Eigen::Matrix<double, dimension, 1>;

  static constexpr int edge_count = Type == geometry::CellType::triangle        ? 3
                                    : Type == geometry::CellType::quadrilateral ? 4
                                    : Type == geometry::CellType::tetrahedron   ? 6
                                                                                : 12;
  static constexpr int edge_nodes = Degree == 2 ? edge_count : 0;
  static constexpr int face_nodes = Degree == 2 && Type == geometry::CellType::hexahedron ? 6 : 0;
  static constexpr int interior_nodes = Degree == 2 && !simplex ? 1 : 0;
  static constexpr int node_count = Cell::vertex_count + edge_nodes + face_nodes + interior_nodes;

  AFEM_HOST_DEVICE static constexpr int edge_vertex(int edge, int k) {
    constexpr int triangle[3][2] = {{0, 1}, {1, 2}, {2, 0}};
    constexpr int quadrilateral[4][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}};
    constexpr int tetrahedron[6][2] = {{0, 1}, {1, 2}, {2, 0}, {0, 3}, {1, 3}, {2, 3}};
    constexpr int hexahedron[12][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {4, 5}, {5, 6},
                                       {6, 7}, {7, 4}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
    switch (Type) {
      case geometry::CellType::triangle:
        return triangle[edge][k];
      case geometry::CellType::quadrilateral:
        return quadrilateral[edge][k];
      case geometry::CellType::tetrahedron:
        return tetrahedron[edge][k];
      default:
        return hexahedron[edge][k];
    }
  }

  AFEM_HOST_DEVICE static constexpr NodeEntity node_entity(int node) {
    if (node < Cell::vertex_count) {
      return NodeEntity::vertex;
    }
    node -= Cell::vertex_count;
    if (node < edge_nodes) {
      return NodeEntity::edge;
    }
    return node - edge_nodes < face_nodes ? NodeEntity::face : NodeEntity::interior;
  }
  /// Index of the node's entity among the cell's entities of its kind.
  AFEM_HOST_DEVICE static constexpr int node_entity_index(int node) {
    switch (node_entity(node)) {
      case NodeEntity::vertex:
        return node;
      case NodeEntity::edge:
        return node - Cell::vertex_count;
      case NodeEntity::face:
        return node - Cell::vertex_count - edge_nodes;
      default:
        return 0;
    }
  }
  /// Number of cell vertices spanning the node's entity, and the k-th of them.
  AFEM_HOST_DEVICE static constexpr int node_vertex_count(int node) {
    switch (node_entity(node)) {
      case NodeEntity::vertex:
        return 1;
      case NodeEntity::edge:
        return 2;
      case NodeEntity::face:
        return Cell::side_vertex_count;
      default:
        return Cell::vertex_count;
    }
  }
  AFEM_HOST_DEVICE static constexpr int node_vertex(int node, int k) {
    const int index = node_entity_index(node);
    switch (node_entity(node)) {
      case NodeEntity::vertex:
        return index;
      case NodeEntity::edge:
        return edge_vertex(index, k);
      case NodeEntity::face:
        return Cell::side_vertex(index, k);
      default:
        return k;
    }
  }
  /// Reference coordinate of a node: the mean of its entity's vertices.
  AFEM_HOST_DEVICE static constexpr double node_coordinate(int node, int axis) {
    double sum = 0.0;
    for (int k = 0; k < node_vertex_count(node); ++k) {
      sum += Cell::vertex_coordinate(node_vertex(node, k), axis);
    }
    return sum / node_vertex_count(node);
  }
  /// True when the node lies on local side `side` (its entity's vertices are all on the side).
  AFEM_HOST_DEVICE static constexpr bool node_on_side(int node, int side) {
    for (int k = 0; k < node_vertex_count(node); ++k) {
      bool found = false;
      for (int j = 0; j < Cell::side_vertex_count; ++j) {
        found = found || Cell::side_vertex(side, j) == node_vertex(node, k);
      }
      if (!found) {
        return false;
      }
    }
    return true;
  }

  /// Basis values at `xi`: `values[node]`.
  AFEM_HOST_DEVICE static void values(const Coords& xi, double* values) {
    if constexpr (simplex) {
      double lambda[dimension + 1];
      barycentric(xi, lambda);
      for (int node = 0; node < node_count; ++node) {
        const int a = node_vertex(node, 0);
        if constexpr (Degree == 1) {
          values[node] = lambda[a];
        } else if (node_entity(node) == NodeEntity::vertex) {
          values[node] = lambda[a] * (2.0 * lambda[a] - 1.0);
        } else {
          values[node] = 4.0 * lambda[a] * lambda[node_vertex(node, 1)];
        }
      }
    } else {
      double line[dimension][3];
      line_values(xi, line);
      tensor_values(line, values, std::make_integer_sequence<int, node_count>{});
    }
  }

  /// Basis gradients with respect to reference coordinates at `xi`: `gradients[node * dim + d]`.
  AFEM_HOST_DEVICE static AFEM_INLINE void gradients(const Coords& xi, double* gradients) {
    if constexpr (simplex) {
      double lambda[dimension + 1];
      barycentric(xi, lambda);
      for (int node = 0; node < node_count; ++node) {
        const int a = node_vertex(node, 0);
        for (int d = 0; d < dimension; ++d) {
          double g = 0.0;
          if constexpr (Degree == 1) {
            g = barycentric_gradient(a, d);
          } else if (node_entity(node) == NodeEntity::vertex) {
            g = (4.0 * lambda[a] - 1.0) * barycentric_gradient(a, d);
          } else {
            const int b = node_vertex(node, 1);
            g = 4.0 *
                (barycentric_gradient(a, d) * lambda[b] + lambda[a] * barycentric_gradient(b, d));
          }
          gradients[node * dimension + d] = g;
        }
      }
    } else {
      double line[dimension][3];
      double slope[dimension][3];
      line_values(xi, line);
      for (int d = 0; d < dimension; ++d) {
        for (int level = 0; level <= 2; level += 2 / Degree) {
          slope[d][level] = line_derivative(level, xi[d]);
        }
      }
      tensor_gradients(line, slope, gradients, std::make_integer_sequence<int, node_count>{});
    }
  }

private:
  /// A node's level along every axis (see node_level).
  struct Levels {
    int at[dimension];
  };
  AFEM_HOST_DEVICE static constexpr Levels node_levels(int node) {
    Levels levels{};
    for (int d = 0; d < dimension; ++d) {
      levels.at[d] = node_level(node, d);
    }
    return levels;
  }
  /// Tensor-product values and gradients node by node, unrolled at compile time so that each
  /// node's levels are constants.
  template <int... Node>
  AFEM_HOST_DEVICE static AFEM_INLINE void tensor_values(
      const double (&line)[dimension][3], double* values,
      std::integer_sequence<int, Node...> /*n*/) {
    ((values[Node] = tensor_value<Node>(line)), ...);
  }
  template <int Node>
  AFEM_HOST_DEVICE static AFEM_INLINE double tensor_value(const double (&line)[dimension][3]) {
    constexpr Levels level = node_levels(Node);
    double value = 1.0;
    for (int d = 0; d < dimension; ++d) {
      value *= line[d][level.at[d]];
    }
    return value;
  }
  template <int... Node>
  AFEM_HOST_DEVICE static AFEM_INLINE void tensor_gradients(
      const double (&line)[dimension][3], const double (&slope)[dimension][3], double* gradients,
      std::integer_sequence<int, Node...> /*n*/) {
    (tensor_gradient<Node>(line, slope, gradients), ...);
  }
  template <int Node>
  AFEM_HOST_DEVICE static AFEM_INLINE void tensor_gradient(const double (&line)[dimension][3],
                                                           const double (&slope)[dimension][3],
                                                           double* gradients) {
    constexpr Levels level = node_levels(Node);
    for (int d = 0; d < dimension; ++d) {
      double g = 1.0;
      for (int e = 0; e < dimension; ++e) {
        g *= e == d ? slope[e][level.at[e]] : line[e][level.at[e]];
      }
      gradients[Node * dimension + d] = g;
    }
  }
  AFEM_HOST_DEVICE static void barycentric(const Coords& xi, double* lambda) {
    lambda[0] = 1.0;
    for (int d = 0; d < dimension; ++d) {
      lambda[d + 1] = xi[d];
      lambda[0] -= xi[d];
    }
  }
  AFEM_HOST_DEVICE static constexpr double barycentric_gradient(int vertex, int axis) {
    return vertex == 0 ? -1.0 : (vertex - 1 == axis ? 1.0 : 0.0);
  }
  /// Twice the node's reference coordinate along `axis`: 0, 1 (midpoint, degree 2) or 2.
  AFEM_HOST_DEVICE static constexpr int node_level(int node, int axis) {
    int twice = 0;
    for (int k = 0; k < node_vertex_count(node); ++k) {
      twice += Cell::vertex_coordinate(node_vertex(node, k), axis) > 0.5 ? 2 : 0;
    }
    return twice / node_vertex_count(node);
  }
  /// The 1D basis along every axis at `xi`, once per level (0, 2; or 0, 1, 2 for degree 2), so
  /// that a node's value is a product of table entries.
  AFEM_HOST_DEVICE static void line_values(const Coords& xi, double (&line)[dimension][3]) {
    for (int d = 0; d < dimension; ++d) {
      for (int level = 0; level <= 2; level += 2 / Degree) {
        line[d][level] = line_value(level, xi[d]);
      }
    }
  }
  /// The 1D Lagrange basis of the element's degree on {0, 1} or {0, 1/2, 1}.
  AFEM_HOST_DEVICE static double line_value(int level, double x) {
    if constexpr (Degree == 1) {
      return level == 0 ? 1.0 - x : x;
    } else {
      return level == 0   ? (1.0 - x) * (1.0 - 2.0 * x)
             : level == 1 ? 4.0 * x * (1.0 - x)
                          : x * (2.0 * x - 1.0);
    }
  }
  AFEM_HOST_DEVICE static double line_derivative(int level, double x) {
    if constexpr (Degree == 1) {
      return level == 0 ? -1.0 : 1.0;
    } else {
      return level == 0 ? 4.0 * x - 3.0 : level == 1 ? 4.0 - 8.0 * x : 4.0 * x - 1.0;
    }
  }
};

}  // namespace afem::fem
