#pragma once

/// @file
/// GridNodes<D>: where the nodes of an MPM grid space sit, so that the walls can find the nodes
/// they hold: Q1 nodes at the grid's vertices, quadratic B-spline nodes at the cell centres and
/// one ghost layer around the grid.

#include <cstdint>

#include "arenafem/fem/bspline_space.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/memory/config.hpp"

namespace afem::apps::mpm {

/// A lattice of layers[d] nodes along axis d, numbered with the first axis fastest; node k along
/// axis d sits k + offset cells from the grid's origin, and its basis function reaches `reach`
/// cells to either side.
template <int D>
struct GridNodes {
  std::int32_t resolution[D] = {};  ///< the grid's cells along each axis
  std::int32_t layers[D] = {};
  double offset = 0.0;
  double reach = 1.0;

  /// The position of `node` along each axis, in cells from the origin.
  AFEM_HOST_DEVICE void position(std::int32_t node, double (&at)[D]) const {
    for (int d = 0; d < D; ++d) {
      at[d] = (node % layers[d]) + offset;
      node /= layers[d];
    }
  }
  /// Whether the wall `wall_layers` cells inside the low (-1) or high (+1) end of an axis of
  /// `cells` cells holds the node `at` cells from the origin: whether the node's function reaches
  /// past the wall (so that no particle is left to balance its force there); 0 otherwise.
  AFEM_HOST_DEVICE int wall_side(double at, std::int32_t cells, int wall_layers) const {
    return at - reach < wall_layers ? -1 : (at + reach > cells - wall_layers ? 1 : 0);
  }
};

template <int D, int C>
GridNodes<D> grid_nodes(const fem::LagrangeSpace<geometry::Grid<D>, 1, C>& space) {
  GridNodes<D> nodes;
  for (int d = 0; d < D; ++d) {
    nodes.resolution[d] = space.geometry().view().resolution[d];
    nodes.layers[d] = nodes.resolution[d] + 1;
  }
  return nodes;
}

template <int D, int C>
GridNodes<D> grid_nodes(const fem::BSplineSpace<geometry::Grid<D>, C>& space) {
  GridNodes<D> nodes;
  for (int d = 0; d < D; ++d) {
    nodes.resolution[d] = space.geometry().view().resolution[d];
    nodes.layers[d] = space.node_layers(d);
  }
  nodes.offset = -0.5;
  nodes.reach = 1.5;
  return nodes;
}

}  // namespace afem::apps::mpm
