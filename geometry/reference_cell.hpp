#pragma once

/// @file
/// ReferenceCell<Type>: the reference element of each cell type: vertices, sides (oriented so that
/// their right-hand normal points out of the cell), the geometric map's shape functions and the
/// parametrisation of sides.

#include <Eigen/Core>

#include <cstdint>

#include "arenafem/geometry/mesh_data.hpp"
#include "arenafem/memory/config.hpp"

namespace afem::geometry {

template <CellType Type>
struct ReferenceCell;

/// Triangle (0,0), (1,0), (0,1); edges 0-1, 1-2, 2-0; an edge point is (1-t) a + t b.
template <>
struct ReferenceCell<CellType::triangle> {
  static constexpr int dimension = 2;
  static constexpr int vertex_count = 3;
  static constexpr int side_count = 3;
  static constexpr int side_vertex_count = 2;
  static constexpr bool simplex = true;
  AFEM_HOST_DEVICE static constexpr int side_vertex(int side, int k) {
    constexpr int table[3][2] = {{0, 1}, {1, 2}, {2, 0}};
    return table[side][k];
  }
  AFEM_HOST_DEVICE static constexpr double vertex_coordinate(int vertex, int axis) {
    constexpr double table[3][2] = {{0, 0}, {1, 0}, {0, 1}};
    return table[vertex][axis];
  }
};

/// Quadrilateral (0,0), (1,0), (1,1), (0,1); edges 0-1, 1-2, 2-3, 3-0.
template <>
struct ReferenceCell<CellType::quadrilateral> {
  static constexpr int dimension = 2;
  static constexpr int vertex_count = 4;
  static constexpr int side_count = 4;
  static constexpr int side_vertex_count = 2;
  static constexpr bool simplex = false;
  AFEM_HOST_DEVICE static constexpr int side_vertex(int side, int k) {
    constexpr int table[4][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}};
    return table[side][k];
  }
  AFEM_HOST_DEVICE static constexpr double vertex_coordinate(int vertex, int axis) {
    constexpr double table[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
    return table[vertex][axis];
  }
};

/// Tetrahedron (0,0,0), (1,0,0), (0,1,0), (0,0,1); faces listed so that (b-a) x (c-a) points out;
/// a face point is (1-u-v) a + u b + v c.
template <>
struct ReferenceCell<CellType::tetrahedron> {
  static constexpr int dimension = 3;
  static constexpr int vertex_count = 4;
  static constexpr int side_count = 4;
  static constexpr int side_vertex_count = 3;
  static constexpr bool simplex = true;
  AFEM_HOST_DEVICE static constexpr int side_vertex(int side, int k) {
    constexpr int table[4][3] = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};
    return table[side][k];
  }
  AFEM_HOST_DEVICE static constexpr double vertex_coordinate(int vertex, int axis) {
    constexpr double table[4][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    return table[vertex][axis];
  }
};

/// Hexahedron: the unit cube, bottom face 0-1-2-3 counterclockwise, top face 4-5-6-7 above it;
/// faces listed counterclockwise seen from outside; a face point is the bilinear blend
/// (1-u)(1-v) a + u(1-v) b + uv c + (1-u)v d.
template <>
struct ReferenceCell<CellType::hexahedron> {
  static constexpr int dimension = 3;
  static constexpr int vertex_count = 8;
  static constexpr int side_count = 6;
  static constexpr int side_vertex_count = 4;
  static constexpr bool simplex = false;
  AFEM_HOST_DEVICE static constexpr int side_vertex(int side, int k) {
    constexpr int table[6][4] = {{0, 3, 2, 1}, {4, 5, 6, 7}, {0, 1, 5, 4},
                                 {3, 7, 6, 2}, {0, 4, 7, 3}, {1, 2, 6, 5}};
    return table[side][k];
  }
  AFEM_HOST_DEVICE static constexpr double vertex_coordinate(int vertex, int axis) {
    constexpr double table[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0},
                                    {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}};
    return table[vertex][axis];
  }
};

/// Weights of the geometric map's shape functions (one per vertex) at reference coordinates `xi`
/// (any type with xi[d]; constant-evaluated for constant coordinates): barycentric on simplices,
/// multilinear on quadrilaterals and hexahedra.
template <CellType Type, class Coords>
AFEM_HOST_DEVICE constexpr void shape_values(const Coords& xi, double* values) {
  using Cell = ReferenceCell<Type>;
  if constexpr (Cell::simplex) {
    double rest = 1.0;
    for (int d = 0; d < Cell::dimension; ++d) {
      values[d + 1] = xi[d];
      rest -= xi[d];
    }
    values[0] = rest;
  } else {
    for (int v = 0; v < Cell::vertex_count; ++v) {
      double value = 1.0;
      for (int d = 0; d < Cell::dimension; ++d) {
        value *= Cell::vertex_coordinate(v, d) > 0.5 ? xi[d] : 1.0 - xi[d];
      }
      values[v] = value;
    }
  }
}

/// Gradients of the shape functions at reference coordinates: `gradients[v * dim + d]`.
template <CellType Type>
AFEM_HOST_DEVICE inline void shape_gradients(
    const Eigen::Matrix<double, ReferenceCell<Type>::dimension, 1>& xi, double* gradients) {
  using Cell = ReferenceCell<Type>;
  constexpr int dim = Cell::dimension;
  if constexpr (Cell::simplex) {
    for (int d = 0; d < dim; ++d) {
      gradients[d] = -1.0;
      for (int v = 1; v <= dim; ++v) {
        gradients[v * dim + d] = v - 1 == d ? 1.0 : 0.0;
      }
    }
  } else {
    for (int v = 0; v < Cell::vertex_count; ++v) {
      for (int d = 0; d < dim; ++d) {
        double value = 1.0;
        for (int e = 0; e < dim; ++e) {
          const bool upper = Cell::vertex_coordinate(v, e) > 0.5;
          if (e == d) {
            value *= upper ? 1.0 : -1.0;
          } else {
            value *= upper ? xi[e] : 1.0 - xi[e];
          }
        }
        gradients[v * dim + d] = value;
      }
    }
  }
}

/// Weights of a side's vertices at side coordinates (t in 2D; (u, v) on a face).
template <CellType Type>
AFEM_HOST_DEVICE inline void side_weights(
    const Eigen::Matrix<double, ReferenceCell<Type>::dimension - 1, 1>& s, double* weights) {
  using Cell = ReferenceCell<Type>;
  if constexpr (Cell::side_vertex_count == 2) {
    weights[0] = 1.0 - s[0];
    weights[1] = s[0];
  } else if constexpr (Cell::side_vertex_count == 3) {
    weights[0] = 1.0 - s[0] - s[1];
    weights[1] = s[0];
    weights[2] = s[1];
  } else {
    weights[0] = (1.0 - s[0]) * (1.0 - s[1]);
    weights[1] = s[0] * (1.0 - s[1]);
    weights[2] = s[0] * s[1];
    weights[3] = (1.0 - s[0]) * s[1];
  }
}

}  // namespace afem::geometry
