#pragma once

/// @file
/// BSplineSpace<G, Components>: quadratic B-splines on a Grid, the standard kernel of MPM
/// transfers (C^1 across cell faces: a particle crossing a face sees no jump in the gradient).
/// A node sits at the centre of every cell and of one layer of ghost cells around the grid; the
/// nodes are numbered on that (n + 2)^D lattice with the first axis fastest. Integrands read the
/// basis through integrate() and interpolate() exactly as on a LagrangeSpace. The dofs are
/// B-spline coefficients: interpolating a field into the space sets each coefficient to the
/// field at its node's centre, which is exact for linear fields only.

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "arenafem/fem/bspline_element.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::fem {

/// Quadratic B-splines on the grid `G` (geometry::Grid<2> or <3>), scalar or with 2 or 3
/// components. Owns "BSplineSpace.cell_nodes" and "BSplineSpace.node_cell_local" in the pool
/// until destroyed; rebuild() computes them again (the grid never changes, so only a failed
/// build needs it) and swaps them in with replace_owned.
template <class G, int Components = 1>
class BSplineSpace {
  static_assert(Components == 1 || Components == 2 || Components == 3,
                "a BSplineSpace has 1, 2 or 3 components");
  static_assert(std::is_same_v<G, geometry::Grid<G::dimension>>,
                "a BSplineSpace lives on a geometry::Grid");

public:
  using Geometry = G;
  using Element = BSplineElement<G::dimension>;
  using View = SpaceView<typename G::View, Element, Components>;
  static constexpr int degree = 2;
  static constexpr int components = Components;
  static constexpr int dimension = G::dimension;

  /// Builds the cell-to-node map; scratch comes from `scratch` and is given back before returning.
  BSplineSpace(const G& grid, memory::Pool& pool, memory::Arena& scratch)
      : grid_(&grid), pool_(&pool) {
    std::int64_t nodes = 1;
    for (int d = 0; d < dimension; ++d) {
      nodes *= node_layers(d);
    }
    AFEM_EXPECTS(nodes * Element::node_count < (std::int64_t{1} << 31),
                 "BSplineSpace: " + std::to_string(nodes) + " nodes overflow 32-bit indices");
    node_count_ = static_cast<std::int32_t>(nodes);
    rebuild(scratch);
  }

  /// Computes the node numbering again; on an error nothing changes.
  void rebuild(memory::Arena& scratch) {
    const auto cells = static_cast<std::size_t>(grid_->cell_count());
    auto cell_nodes = memory::borrow_temporary<std::int32_t>(*pool_, cells * Element::node_count,
                                                             "BSplineSpace.cell_nodes");
    auto node_cell_local = memory::borrow_temporary<std::int32_t>(
        *pool_, static_cast<std::size_t>(node_count_), "BSplineSpace.node_cell_local");
    detail_build(cell_nodes.view(), node_cell_local.view(), scratch);
    memory::replace_owned(cell_nodes_, std::move(cell_nodes));
    memory::replace_owned(node_cell_local_, std::move(node_cell_local));
    ++version_;
  }

  /// Counts the numberings: 1 after construction, one more after each rebuild() (a
  /// DiscreteField made before a rebuild refuses to be used after it).
  [[nodiscard]] std::uint64_t version() const { return version_; }

  [[nodiscard]] const G& geometry() const { return *grid_; }
  [[nodiscard]] memory::Pool& pool() const { return *pool_; }
  [[nodiscard]] std::int32_t node_count() const { return node_count_; }
  [[nodiscard]] std::int64_t dof_count() const {
    return static_cast<std::int64_t>(node_count_) * Components;
  }
  /// Nodes along `axis`: the grid's cells and a ghost layer on each side.
  [[nodiscard]] std::int32_t node_layers(int axis) const {
    return grid_->view().resolution[axis] + 2;
  }
  [[nodiscard]] View view() const { return {grid_->view(), cell_nodes_.view(), node_count_}; }
  /// For each node, cell * Element::node_count + local of one cell whose element holds it.
  [[nodiscard]] memory::ArrayView<const std::int32_t> node_cell_local() const {
    return node_cell_local_.view();
  }

  /// The numbering kernels (public for nvcc's device lambdas; call rebuild()).
  void detail_build(memory::ArrayView<std::int32_t> cell_nodes,
                    memory::ArrayView<std::int32_t> node_cell_local, memory::Arena& scratch) const {
    constexpr int dim = dimension;
    constexpr int npc = Element::node_count;
    const typename G::View grid = grid_->view();
    auto policy = memory::arena_policy(scratch, "BSplineSpace.thrust");
    // Node (a_0, a_1, ...) of cell (i_0, i_1, ...) is lattice node (i_0 + a_0, i_1 + a_1, ...).
    thrust::for_each_n(
        policy, thrust::counting_iterator<std::int32_t>(0), grid.cell_count(),
        [=] AFEM_HOST_DEVICE(std::int32_t cell) {
          std::int32_t index[dim];
          grid.cell_grid_index(cell, index);
          for (int k = 0; k < npc; ++k) {
            std::int32_t node = 0;
            for (int d = dim - 1; d >= 0; --d) {
              node = node * (grid.resolution[d] + 2) + index[d] + Element::node_offset(k, d);
            }
            cell_nodes[static_cast<std::size_t>(cell) * npc + static_cast<std::size_t>(k)] = node;
          }
        });
    // The cell of a node: the one it is centred in, or the nearest one for ghost nodes.
    thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), node_count_,
                       [=] AFEM_HOST_DEVICE(std::int32_t node) {
                         std::int32_t rest = node;
                         std::int32_t index[dim];
                         int local = 0;
                         int place = 1;
                         for (int d = 0; d < dim; ++d) {
                           const std::int32_t lattice = rest % (grid.resolution[d] + 2);
                           rest /= grid.resolution[d] + 2;
                           const std::int32_t last = grid.resolution[d] - 1;
                           const std::int32_t below = lattice - 1;
                           index[d] = below < 0 ? 0 : (below > last ? last : below);
                           local += (lattice - index[d]) * place;
                           place *= 3;
                         }
                         node_cell_local[static_cast<std::size_t>(node)] =
                             grid.cell_index(index) * npc + local;
                       });
  }

private:
  const G* grid_;
  memory::Pool* pool_;
  std::int32_t node_count_ = 0;
  std::uint64_t version_ = 0;
  memory::Temporary<std::int32_t> cell_nodes_;
  memory::Temporary<std::int32_t> node_cell_local_;
};

}  // namespace afem::fem
