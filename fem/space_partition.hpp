#pragma once

/// @file
/// SpacePartition: the nodes of a space that touch the cells of a geometry partition, numbered
/// compactly (for instance the velocity nodes of the active cells of an MPM step).

#include <thrust/count.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/scan.h>

#include <cstdint>

#include "arenafem/geometry/partition.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::fem {

/// What kernels see of a SpacePartition: the partition's nodes (global numbers, increasing) and
/// each global node's partition number (-1 outside).
struct SpacePartitionView {
  memory::ArrayView<const std::int32_t> nodes;
  memory::ArrayView<const std::int32_t> node_index;
};

/// The nodes of `Space` touching the cells of a CellBasedGeometryPartition. Owns
/// "SpacePartition.nodes" and "SpacePartition.node_index" in the space's pool; rebuild() after the
/// partition changed builds fresh buffers and swaps them in with replace_owned.
template <class Space>
class SpacePartition {
public:
  using GeometryPartition = geometry::CellBasedGeometryPartition<typename Space::Geometry>;

  SpacePartition(const Space& space, const GeometryPartition& partition, memory::Arena& scratch)
      : space_(&space), partition_(&partition) {
    AFEM_EXPECTS(&partition.geometry() == &space.geometry(),
                 "SpacePartition: the partition is of another geometry than the space");
    rebuild(scratch);
  }

  /// Renumbers from the partition's current cells.
  void rebuild(memory::Arena& scratch) {
    auto policy = memory::arena_policy(scratch, "SpacePartition.thrust");
    const auto space = space_->view();
    const geometry::PartitionView cells = partition_->view();
    constexpr int npc = Space::Element::node_count;
    const auto node_total = static_cast<std::size_t>(space.node_count);
    auto index = memory::borrow_temporary<std::int32_t>(space_->pool(), node_total,
                                                        "SpacePartition.node_index");
    const memory::ArrayView<std::int32_t> mark = index.view();
    thrust::fill(policy, mark.begin(), mark.end(), 0);
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), cells.cells.size(),
                       [=] AFEM_HOST_DEVICE(std::size_t i) {
                         const std::int32_t cell = cells.cells[i];
                         for (int k = 0; k < npc; ++k) {
                           mark[static_cast<std::size_t>(space.cell_node(cell, k))] = 1;
                         }
                       });
    const auto count = static_cast<std::size_t>(thrust::count(policy, mark.begin(), mark.end(), 1));
    auto nodes =
        memory::borrow_temporary<std::int32_t>(space_->pool(), count, "SpacePartition.nodes");
    const memory::ArrayView<std::int32_t> list = nodes.view();
    // Inclusive scan of the marks: a marked node's partition number is its scan value minus one.
    thrust::inclusive_scan(policy, mark.begin(), mark.end(), mark.begin());
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), node_total,
                       [=] AFEM_HOST_DEVICE(std::size_t n) {
                         const std::int32_t below = n == 0 ? 0 : mark[n - 1];
                         if (mark[n] != below) {
                           list[static_cast<std::size_t>(below)] = static_cast<std::int32_t>(n);
                         }
                       });
    thrust::fill(policy, mark.begin(), mark.end(), -1);
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), count,
                       [=] AFEM_HOST_DEVICE(std::size_t i) {
                         mark[static_cast<std::size_t>(list[i])] = static_cast<std::int32_t>(i);
                       });
    memory::replace_owned(nodes_, std::move(nodes));
    memory::replace_owned(node_index_, std::move(index));
  }

  [[nodiscard]] const Space& space() const { return *space_; }
  [[nodiscard]] const GeometryPartition& partition() const { return *partition_; }
  [[nodiscard]] std::int32_t node_count() const { return static_cast<std::int32_t>(nodes_.size()); }
  [[nodiscard]] SpacePartitionView view() const { return {nodes_.view(), node_index_.view()}; }

private:
  const Space* space_;
  const GeometryPartition* partition_;
  memory::Temporary<std::int32_t> nodes_;
  memory::Temporary<std::int32_t> node_index_;
};

}  // namespace afem::fem
