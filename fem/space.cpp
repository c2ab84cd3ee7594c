// Space topology: node numbering on the backend. Compiled by nvcc in the CUDA build.
#include "arenafem/fem/space.hpp"

#include <thrust/count.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/scan.h>

#include <limits>
#include <string>

#include "arenafem/fem/detail/cell_vertices.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/memory/counting_sort.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/sort_rows.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::fem::detail {

namespace {

/// An entity's key: its global vertices in increasing order, padded with INT32_MAX.
constexpr int entity_key_width = 4;

/// Numbers the entities carrying local nodes [first, first + per_cell) of every cell: equal
/// vertex sets get one number. Writes node `offset + number` into `cell_nodes`; returns how many
/// distinct entities there are.
template <class Element, class View>
std::int32_t number_entities(const View& view, memory::ArrayView<std::int32_t> cell_nodes,
                             int first, int per_cell, std::int32_t offset, memory::Arena& scratch) {
  constexpr int npc = Element::node_count;
  const std::int32_t cells = view.cell_count();
  const std::int32_t n = cells * per_cell;
  if (n == 0) {
    return 0;
  }
  auto policy = memory::arena_policy(scratch, "LagrangeSpace.thrust");
  auto keys = memory::borrow_temporary<std::int32_t>(
      scratch, static_cast<std::size_t>(n) * entity_key_width, "LagrangeSpace.entity_keys");
  auto order = memory::borrow_temporary<std::int32_t>(scratch, static_cast<std::size_t>(n),
                                                      "LagrangeSpace.entity_order");
  auto heads = memory::borrow_temporary<std::int32_t>(scratch, static_cast<std::size_t>(n),
                                                      "LagrangeSpace.entity_heads");
  const memory::ArrayView<std::int32_t> key = keys.view();
  const memory::ArrayView<std::int32_t> index = order.view();
  const memory::ArrayView<std::int32_t> head = heads.view();
  const thrust::counting_iterator<std::int32_t> start(0);
  thrust::for_each_n(policy, start, n, [=] AFEM_HOST_DEVICE(std::int32_t i) {
    const std::int32_t cell = i / per_cell;
    const int local = first + i % per_cell;
    std::int32_t* k = key.data() + static_cast<std::size_t>(i) * entity_key_width;
    for (int v = 0; v < entity_key_width; ++v) {
      k[v] = std::numeric_limits<std::int32_t>::max();
    }
    const int count = Element::node_vertex_count(local);
    for (int v = 0; v < count; ++v) {
      std::int32_t value = cell_vertex_index(view, cell, Element::node_vertex(local, v));
      for (int j = 0; j < v; ++j) {  // insertion into the sorted prefix
        if (value < k[j]) {
          const std::int32_t t = k[j];
          k[j] = value;
          value = t;
        }
      }
      k[v] = value;
    }
  });
  memory::sort_rows(key, entity_key_width, index, scratch);
  thrust::for_each_n(policy, start, n, [=] AFEM_HOST_DEVICE(std::int32_t i) {
    const auto s = static_cast<std::size_t>(i);
    bool same = i > 0;
    for (int v = 0; same && v < entity_key_width; ++v) {
      same = key[static_cast<std::size_t>(index[s - 1]) * entity_key_width + v] ==
             key[static_cast<std::size_t>(index[s]) * entity_key_width + v];
    }
    head[s] = same ? 0 : 1;
  });
  const auto distinct =
      static_cast<std::int32_t>(thrust::count(policy, head.begin(), head.end(), std::int32_t{1}));
  thrust::inclusive_scan(policy, head.begin(), head.end(), head.begin());
  thrust::for_each_n(policy, start, n, [=] AFEM_HOST_DEVICE(std::int32_t i) {
    const std::int32_t pair = index[static_cast<std::size_t>(i)];
    const std::int32_t cell = pair / per_cell;
    const int local = first + pair % per_cell;
    cell_nodes[static_cast<std::size_t>(cell) * npc + static_cast<std::size_t>(local)] =
        offset + head[static_cast<std::size_t>(i)] - 1;
  });
  return distinct;
}

}  // namespace

template <geometry::Geometry G, int Degree>
SpaceTopology build_space_topology(const G& geometry, memory::Pool& pool, memory::Arena& scratch) {
  using View = typename G::View;
  using Element = LagrangeElement<View::cell_type, Degree>;
  constexpr int npc = Element::node_count;
  constexpr int nv = Element::Cell::vertex_count;
  const View view = geometry.view();
  const std::int32_t cells = view.cell_count();
  AFEM_EXPECTS(static_cast<std::int64_t>(cells) * npc < std::numeric_limits<std::int32_t>::max(),
               "LagrangeSpace: " + std::to_string(cells) + " cells of " + std::to_string(npc) +
                   " nodes overflow 32-bit node indices");
  auto policy = memory::arena_policy(scratch, "LagrangeSpace.thrust");
  const auto pairs = static_cast<std::size_t>(cells) * npc;

  SpaceTopology topology;
  auto cell_nodes_slot =
      memory::borrow_temporary<std::int32_t>(pool, pairs, "LagrangeSpace.cell_nodes");
  const memory::ArrayView<std::int32_t> cell_nodes = cell_nodes_slot.view();
  const thrust::counting_iterator<std::int32_t> start(0);
  thrust::for_each_n(policy, start, cells, [=] AFEM_HOST_DEVICE(std::int32_t c) {
    for (int v = 0; v < nv; ++v) {
      cell_nodes[static_cast<std::size_t>(c) * npc + static_cast<std::size_t>(v)] =
          cell_vertex_index(view, c, v);
    }
  });
  std::int32_t next = geometry.vertex_count();
  if constexpr (Element::edge_nodes > 0) {
    next += number_entities<Element>(view, cell_nodes, nv, Element::edge_nodes, next, scratch);
  }
  if constexpr (Element::face_nodes > 0) {
    next += number_entities<Element>(view, cell_nodes, nv + Element::edge_nodes,
                                     Element::face_nodes, next, scratch);
  }
  if constexpr (Element::interior_nodes > 0) {
    const std::int32_t first_interior = next;
    thrust::for_each_n(policy, start, cells, [=] AFEM_HOST_DEVICE(std::int32_t c) {
      cell_nodes[static_cast<std::size_t>(c) * npc + npc - 1] = first_interior + c;
    });
    next += cells;
  }

  // One (cell, local) pair per node: the first of the node's run in a stable counting sort of the
  // pairs by node (every node has one).
  auto node_cell_local = memory::borrow_temporary<std::int32_t>(
      pool, static_cast<std::size_t>(next), "LagrangeSpace.node_cell_local");
  if (pairs > 0) {
    auto order = memory::borrow_temporary<std::int32_t>(scratch, pairs, "LagrangeSpace.pair_order");
    auto runs = memory::borrow_temporary<std::int32_t>(scratch, static_cast<std::size_t>(next),
                                                       "LagrangeSpace.node_runs");
    memory::counting_sort_indices(memory::ArrayView<const std::int32_t>(cell_nodes), next,
                                  order.view(), runs.view(), scratch);
    const memory::ArrayView<const std::int32_t> index = order.view();
    const memory::ArrayView<const std::int32_t> run = runs.view();
    const memory::ArrayView<std::int32_t> representative = node_cell_local.view();
    thrust::for_each_n(policy, start, next, [=] AFEM_HOST_DEVICE(std::int32_t k) {
      const auto node = static_cast<std::size_t>(k);
      representative[node] = index[static_cast<std::size_t>(run[node])];
    });
  }
  memory::replace_owned(topology.cell_nodes, std::move(cell_nodes_slot));
  memory::replace_owned(topology.node_cell_local, std::move(node_cell_local));
  topology.node_count = next;
  return topology;
}

#define AFEM_INSTANTIATE_SPACE(G, DEGREE) \
  template SpaceTopology build_space_topology<G, DEGREE>(const G&, memory::Pool&, memory::Arena&);
AFEM_INSTANTIATE_SPACE(geometry::Grid2D, 1)
AFEM_INSTANTIATE_SPACE(geometry::Grid2D, 2)
AFEM_INSTANTIATE_SPACE(geometry::Grid3D, 1)
AFEM_INSTANTIATE_SPACE(geometry::Grid3D, 2)
AFEM_INSTANTIATE_SPACE(geometry::Trimesh, 1)
AFEM_INSTANTIATE_SPACE(geometry::Trimesh, 2)
AFEM_INSTANTIATE_SPACE(geometry::Quadmesh, 1)
AFEM_INSTANTIATE_SPACE(geometry::Quadmesh, 2)
AFEM_INSTANTIATE_SPACE(geometry::Tetmesh, 1)
AFEM_INSTANTIATE_SPACE(geometry::Tetmesh, 2)
AFEM_INSTANTIATE_SPACE(geometry::Hexmesh, 1)
AFEM_INSTANTIATE_SPACE(geometry::Hexmesh, 2)
#undef AFEM_INSTANTIATE_SPACE

}  // namespace afem::fem::detail
