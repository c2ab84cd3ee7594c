#pragma once

/// @file
/// LagrangeSpace<G, Degree, Components>: a continuous Lagrange space on a geometry (Q1/Q2 on
/// grids, quadrilaterals and hexahedra; P1/P2 on triangles and tetrahedra), scalar or with 2 or 3
/// components. The space topology is the global node numbering: vertices first, then edges, faces
/// and cell interiors (degree 2), so that cells sharing an entity share its node. Degrees of
/// freedom are node-major: dof = node * Components + component.

#include <cstdint>

#include "arenafem/fem/lagrange_element.hpp"
#include "arenafem/geometry/geometry.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"

namespace afem::fem {

/// What kernels see of a space: the geometry, each cell's global nodes and the node count.
template <class GeometryViewType, class ElementType, int Components>
struct SpaceView {
  using GeometryView = GeometryViewType;
  using Element = ElementType;
  static constexpr int components = Components;
  static constexpr int dimension = GeometryView::dimension;

  GeometryView geometry;
  memory::ArrayView<const std::int32_t> cell_nodes;  ///< Element::node_count per cell
  std::int32_t node_count = 0;

  AFEM_HOST_DEVICE std::int32_t cell_node(std::int32_t cell, int local) const {
    return cell_nodes[static_cast<std::size_t>(cell) * Element::node_count +
                      static_cast<std::size_t>(local)];
  }
};

/// A space topology built on the backend: cell-to-node map and, for each node, one (cell, local
/// node) pair that holds it, as cell * node_count + local.
struct SpaceTopology {
  memory::Temporary<std::int32_t> cell_nodes;
  memory::Temporary<std::int32_t> node_cell_local;
  std::int32_t node_count = 0;
};

namespace detail {
/// Numbers the nodes of a degree-`Degree` Lagrange space on `geometry` (sorted entity keys, head
/// flags and a scan on the backend; scratch from `scratch`, results in `pool`).
template <geometry::Geometry G, int Degree>
SpaceTopology build_space_topology(const G& geometry, memory::Pool& pool, memory::Arena& scratch);
}  // namespace detail

/// A Lagrange space on `G`. Owns its topology ("LagrangeSpace.cell_nodes",
/// "LagrangeSpace.node_cell_local" in the pool) until destroyed; rebuild() renumbers after the
/// geometry's connectivity changed and swaps the buffers in with replace_owned.
template <geometry::Geometry G, int Degree, int Components = 1>
class LagrangeSpace {
  static_assert(Components == 1 || Components == 2 || Components == 3,
                "a LagrangeSpace has 1, 2 or 3 components");

public:
  using Geometry = G;
  using Element = LagrangeElement<G::View::cell_type, Degree>;
  using View = SpaceView<typename G::View, Element, Components>;
  static constexpr int degree = Degree;
  static constexpr int components = Components;
  static constexpr int dimension = G::dimension;

  /// Builds the node numbering; scratch comes from `scratch` and is given back before returning.
  LagrangeSpace(const G& geometry, memory::Pool& pool, memory::Arena& scratch)
      : geometry_(&geometry), pool_(&pool) {
    rebuild(scratch);
  }

  /// Renumbers the nodes from the geometry's current connectivity; on an error nothing changes.
  void rebuild(memory::Arena& scratch) {
    SpaceTopology fresh = detail::build_space_topology<G, Degree>(*geometry_, *pool_, scratch);
    memory::replace_owned(topology_.cell_nodes, std::move(fresh.cell_nodes));
    memory::replace_owned(topology_.node_cell_local, std::move(fresh.node_cell_local));
    topology_.node_count = fresh.node_count;
    ++version_;
  }

  /// Counts the numberings: 1 after construction, one more after each rebuild() (a
  /// DiscreteField made before a rebuild refuses to be used after it).
  [[nodiscard]] std::uint64_t version() const { return version_; }

  [[nodiscard]] const G& geometry() const { return *geometry_; }
  [[nodiscard]] memory::Pool& pool() const { return *pool_; }
  [[nodiscard]] std::int32_t node_count() const { return topology_.node_count; }
  [[nodiscard]] std::int64_t dof_count() const {
    return static_cast<std::int64_t>(topology_.node_count) * Components;
  }
  [[nodiscard]] View view() const {
    return {geometry_->view(), topology_.cell_nodes.view(), topology_.node_count};
  }
  /// For each node, cell * Element::node_count + local of one cell holding it.
  [[nodiscard]] memory::ArrayView<const std::int32_t> node_cell_local() const {
    return topology_.node_cell_local.view();
  }

private:
  const G* geometry_;
  memory::Pool* pool_;
  SpaceTopology topology_;
  std::uint64_t version_ = 0;
};

}  // namespace afem::fem
