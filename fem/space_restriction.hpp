#pragma once

/// @file
/// SpaceRestriction: a space restricted to a domain, as assembly needs it: the nodes of every
/// element of the domain, numbered in the whole space or in a SpacePartition.

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/logical.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "arenafem/fem/space_partition.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/counting_sort.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"
#include "arenafem/quadrature/domain.hpp"

namespace afem::fem {

/// What kernels see of a restriction: element_nodes[e * Element::node_count + k] is the row (or
/// column) block of local node k of element e; the (element, local node) pairs of node n, as
/// positions e * Element::node_count + k in element order, are
/// node_pairs[node_pair_offsets[n] .. node_pair_offsets[n + 1]).
struct RestrictionView {
  memory::ArrayView<const std::int32_t> element_nodes;
  std::int32_t node_count = 0;
  memory::ArrayView<const std::int32_t> node_pairs;
  memory::ArrayView<const std::int32_t> node_pair_offsets;
};

namespace detail {
/// A number no other restriction build has had; assembly plans cached in a BsrMatrix use it to
/// tell whether the restriction changed since they were built.
inline std::uint64_t next_restriction_version() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}
}  // namespace detail

/// `Space` restricted to `Domain`. Owns "SpaceRestriction.element_nodes" and its inverse,
/// "SpaceRestriction.node_pairs" and "SpaceRestriction.node_pair_offsets" (what linear forms sum
/// per node), in the space's pool, sized by the domain's element_capacity() when it has one and
/// by the space's node count; rebuild() after the domain's partition (or the space partition)
/// changed swaps in fresh ones with replace_owned and takes a new version().
template <class Space, quadrature::Domain Domain>
class SpaceRestriction {
public:
  using SpaceType = Space;
  using DomainType = Domain;
  using Element = typename Space::Element;
  static constexpr int components = Space::components;

  /// Nodes numbered as in the whole space. Throws afem::Error when the domain is on another
  /// geometry than the space.
  SpaceRestriction(const Space& space, const Domain& domain, memory::Arena& scratch)
      : SpaceRestriction(space, domain, nullptr, scratch) {}
  /// Nodes numbered as in `partition` (every element's cell must be in it).
  SpaceRestriction(const Space& space, const Domain& domain, const SpacePartition<Space>& partition,
                   memory::Arena& scratch)
      : SpaceRestriction(space, domain, &partition, scratch) {}

  void rebuild(memory::Arena& scratch) {
    auto policy = memory::arena_policy(scratch, "SpaceRestriction.thrust");
    const auto space = space_->view();
    const auto domain = domain_->view();
    constexpr int npc = Element::node_count;
    const std::int32_t elements = domain.element_count();
    const std::int64_t slots = std::max<std::int64_t>(elements, domain_->element_capacity());
    auto fresh = memory::borrow_temporary<std::int32_t>(
        space_->pool(), static_cast<std::size_t>(slots) * npc, "SpaceRestriction.element_nodes");
    const memory::ArrayView<std::int32_t> out = fresh.view();
    const bool renumber = partition_ != nullptr;
    const SpacePartitionView part = renumber ? partition_->view() : SpacePartitionView{};
    thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), elements,
                       [=] AFEM_HOST_DEVICE(std::int32_t e) {
                         const std::int32_t cell = domain.element_cell(e);
                         for (int k = 0; k < npc; ++k) {
                           const std::int32_t node = space.cell_node(cell, k);
                           out[static_cast<std::size_t>(e) * npc + static_cast<std::size_t>(k)] =
                               renumber ? part.node_index[static_cast<std::size_t>(node)] : node;
                         }
                       });
    if (renumber && elements > 0) {
      const auto used = out.subview(0, static_cast<std::size_t>(elements) * npc);
      const bool outside = thrust::any_of(policy, used.begin(), used.end(),
                                          [] AFEM_HOST_DEVICE(std::int32_t n) { return n < 0; });
      AFEM_EXPECTS(!outside,
                   "SpaceRestriction: an element of the domain has a node outside the space "
                   "partition; build the partition from the domain's cells");
    }
    const std::int32_t nodes = renumber ? partition_->node_count() : space_->node_count();
    auto pairs = memory::borrow_temporary<std::int32_t>(
        space_->pool(), static_cast<std::size_t>(slots) * npc, "SpaceRestriction.node_pairs");
    auto pair_offsets = memory::borrow_temporary<std::int32_t>(
        space_->pool(), static_cast<std::size_t>(space_->node_count()) + 1,
        "SpaceRestriction.node_pair_offsets");
    const auto used_pairs = static_cast<std::size_t>(elements) * npc;
    memory::counting_sort_indices(
        memory::ArrayView<const std::int32_t>(out.subview(0, used_pairs)), nodes,
        pairs.view().subview(0, used_pairs),
        pair_offsets.view().subview(0, static_cast<std::size_t>(nodes) + 1), scratch);
    memory::replace_owned(element_nodes_, std::move(fresh));
    memory::replace_owned(node_pairs_, std::move(pairs));
    memory::replace_owned(node_pair_offsets_, std::move(pair_offsets));
    element_count_ = elements;
    node_count_ = nodes;
    version_ = detail::next_restriction_version();
  }

  [[nodiscard]] const Space& space() const { return *space_; }
  [[nodiscard]] const Domain& domain() const { return *domain_; }
  /// Rows (test) or columns (trial) of an assembled matrix, in blocks of `components`.
  [[nodiscard]] std::int32_t node_count() const { return node_count_; }
  [[nodiscard]] std::int32_t element_count() const { return element_count_; }
  [[nodiscard]] std::uint64_t version() const { return version_; }
  [[nodiscard]] RestrictionView view() const {
    const auto pairs = static_cast<std::size_t>(element_count_) * Element::node_count;
    return {element_nodes_.view().subview(0, pairs), node_count_,
            node_pairs_.view().subview(0, pairs),
            node_pair_offsets_.view().subview(0, static_cast<std::size_t>(node_count_) + 1)};
  }

private:
  SpaceRestriction(const Space& space, const Domain& domain, const SpacePartition<Space>* partition,
                   memory::Arena& scratch)
      : space_(&space), domain_(&domain), partition_(partition) {
    AFEM_EXPECTS(&domain.geometry() == &space.geometry(),
                 "SpaceRestriction: the domain is on another geometry than the space");
    AFEM_EXPECTS(partition == nullptr || &partition->space() == &space,
                 "SpaceRestriction: the space partition belongs to another space");
    rebuild(scratch);
  }

  const Space* space_;
  const Domain* domain_;
  const SpacePartition<Space>* partition_;
  memory::Temporary<std::int32_t> element_nodes_;  ///< element_count_ used, capacity allocated
  memory::Temporary<std::int32_t> node_pairs_;
  memory::Temporary<std::int32_t> node_pair_offsets_;
  std::int32_t element_count_ = 0;
  std::int32_t node_count_ = 0;
  std::uint64_t version_ = 0;
};

}  // namespace afem::fem
