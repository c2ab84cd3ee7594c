#pragma once

/// @file
/// boundary_dofs(): which degrees of freedom of a space lie on the geometry's boundary, for
/// Dirichlet conditions.

#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>

#include "fem/detail/check_size.hpp"
#include "memory/arena.hpp"
#include "memory/array_view.hpp"
#include "memory/thrust_allocator.hpp"

namespace afem::fem {

/// Sets mask[dof] = 1 for every dof of a node on a boundary side of the space's geometry and 0
/// elsewhere (`mask` has space.dof_count() entries).
template <class Space>
void boundary_dofs(const Space& space, memory::ArrayView<std::uint8_t> mask,
                   memory::Arena& scratch) {
  using Element = typename Space::Element;
  using Cell = typename Element::Cell;
  using GView = typename Space::View::GeometryView;
  constexpr int dim = Space::dimension;
  constexpr int nc = Space::components;
  detail::check_size(mask.size(), space.dof_count(), "boundary_dofs");
  auto policy = memory::arena_policy(scratch, "boundary_dofs.thrust");
  thrust::fill(policy, mask.begin(), mask.end(), std::uint8_t{0});
  const auto view = space.view();
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0),
                     view.geometry.boundary_side_count(), [=] AFEM_HOST_DEVICE(std::int32_t b) {
                       const std::int32_t side = view.geometry.boundary_side(b);
                       const std::int32_t cell = view.geometry.side_inner_cell(side);
                       // The local side is the one whose centre is the side's centre in cell
                       // coordinates.
                       typename GView::SideCoords centre;
                       for (int d = 0; d < dim - 1; ++d) {
                         centre[d] = Cell::simplex ? 1.0 / dim : 0.5;
                       }
                       const typename GView::Coords xi =
                           view.geometry.side_inner_coords(side, centre);
                       int local_side = 0;
                       double best = 1e300;
                       for (int ls = 0; ls < Cell::side_count; ++ls) {
                         double distance = 0.0;
                         for (int d = 0; d < dim; ++d) {
                           double c = 0.0;
                           for (int k = 0; k < Cell::side_vertex_count; ++k) {
                             c += Cell::vertex_coordinate(Cell::side_vertex(ls, k), d);
                           }
                           c /= Cell::side_vertex_count;
                           distance += (c - xi[d]) * (c - xi[d]);
                         }
                         if (distance < best) {
                           best = distance;
                           local_side = ls;
                         }
                       }
                       for (int k = 0; k < Element::node_count; ++k) {
                         if (Element::node_on_side(k, local_side)) {
                           const auto node = static_cast<std::size_t>(view.cell_node(cell, k));
                           for (int c = 0; c < nc; ++c) {
                             mask[node * nc + static_cast<std::size_t>(c)] = 1;
                           }
                         }
                       }
                     });
}

}  // namespace afem::fem
