#pragma once

/// @file
/// boundary_dofs(): which degrees of freedom of a space lie on the geometry's boundary, or on its
/// sides with given tags, for Dirichlet conditions.

#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <string>

#include "arenafem/fem/detail/check_size.hpp"
#include "arenafem/geometry/side_tag_set.hpp"
#include "arenafem/geometry/tagged_boundary.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::fem {

namespace detail {

/// Marks the dofs of the boundary sides whose tag is in `tags`, or of every boundary side when
/// `all`.
template <class Space>
void mark_boundary_dofs(const Space& space, memory::ArrayView<std::uint8_t> mask,
                        memory::Arena& scratch, const geometry::SideTagSet& tags, bool all) {
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
                       if (!all && !tags.contains(view.geometry.side_tag(side))) {
                         return;
                       }
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

}  // namespace detail

/// Sets mask[dof] = 1 for every dof of a node on a boundary side of the space's geometry and 0
/// elsewhere (`mask` has space.dof_count() entries).
template <class Space>
void boundary_dofs(const Space& space, memory::ArrayView<std::uint8_t> mask,
                   memory::Arena& scratch) {
  detail::mark_boundary_dofs(space, mask, scratch, {}, true);
}

/// Sets mask[dof] = 1 for every dof of a node on a boundary side whose tag is in `tags` (Gmsh
/// physical groups of sides; box_side_tag on grids and box meshes) and 0 elsewhere. A node shared
/// with an untagged side is marked too (a corner belongs to both of its sides). Throws afem::Error
/// when `tags` is empty or a tag has no boundary side (see geometry::check_boundary_tags), leaving
/// `mask` unchanged.
template <class Space>
void boundary_dofs(const Space& space, memory::ArrayView<std::uint8_t> mask,
                   const geometry::SideTagSet& tags, memory::Arena& scratch) {
  detail::check_size(mask.size(), space.dof_count(), "boundary_dofs");
  AFEM_EXPECTS(!tags.empty(), std::string("boundary_dofs: no side tags given; the overload "
                                          "without tags marks the whole boundary"));
  geometry::check_boundary_tags(space.geometry(), tags, scratch, "boundary_dofs");
  detail::mark_boundary_dofs(space, mask, scratch, tags, false);
}

}  // namespace afem::fem
