#pragma once

/// @file
/// DistributedDofs: the numbering of a space's nodes over MPI ranks (ARENAFEM_MPI). Each node is
/// owned by one rank (the owner of the lowest-numbered cell that holds it); a rank numbers its
/// owned nodes first, in global order, then its ghost nodes (nodes of its cells that others own),
/// and keeps the plans that move values between them: the ghost update (owners to ghosts) and the
/// accumulation of contributions to nodes owned elsewhere (to their owners, once). Ghost nodes are
/// the nodes of owned cells, and of ghost cells that hold an owned node, that other ranks own.
/// distribute_dofs() builds it for a Lagrange space on a rank's part of a distributed mesh.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "arenafem/geometry/distributed_mesh.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/communicator.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"

namespace afem::fem {

/// A space's nodes numbered over the ranks of a communicator, and the plans of the two exchanges
/// between ranks. Its messages use tags 7101 and 7102 (DistributedMatrix 7103) on the
/// communicator given: a program with traffic of its own there passes a duplicate
/// (MPI_Comm_dup) instead. Vectors it takes have `components` values per node: owned vectors
/// owned_count() values, ghost vectors ghost_count(), space vectors the space's dof count.
/// Owns its node maps, index lists and message buffers ("DistributedDofs.*" in the pool; the
/// per-rank offsets and per-neighbour ranges, a few values per rank, on the host), which every
/// exchange reuses: after construction an exchange takes nothing from the pool. One exchange at a
/// time per object (begin_ghost_update ... finish_ghost_update may not overlap another).
/// CPU backend only (the pool's device must be the CPU): MPI reads and writes the buffers.
class DistributedDofs {
public:
  /// The numbering from what every rank knows of its cells: `space_cell_nodes` (the local space's
  /// node of each local cell and element node, nodes_per_cell per cell, owned cells first as in
  /// LocalMeshData), `global_cell_nodes` (the same entries in the global numbering),
  /// `rank_offsets` (size() + 1 values: rank r owns the global nodes [rank_offsets[r],
  /// rank_offsets[r + 1])) and `serial_nodes` (the number in the whole space rank 0 built of each
  /// owned node, in global order). Collective: the ranks agree on the plans. Throws afem::Error
  /// (on every rank) when a cell's entries disagree on a node.
  DistributedDofs(const memory::Communicator& comm, std::span<const std::int32_t> space_cell_nodes,
                  std::span<const std::int64_t> global_cell_nodes, int nodes_per_cell,
                  std::int32_t owned_cells, std::int32_t space_node_count,
                  std::vector<std::int64_t> rank_offsets, std::vector<std::int64_t> serial_nodes,
                  int components, memory::Pool& pool);

  [[nodiscard]] const memory::Communicator& communicator() const { return comm_; }
  [[nodiscard]] int components() const { return components_; }
  /// Nodes this rank owns and ghost nodes it reads; values are these times components().
  [[nodiscard]] std::int32_t owned_nodes() const { return owned_nodes_; }
  [[nodiscard]] std::int32_t ghost_nodes() const {
    return static_cast<std::int32_t>(ghost_globals_.size());
  }
  [[nodiscard]] std::int64_t owned_count() const {
    return static_cast<std::int64_t>(owned_nodes_) * components_;
  }
  [[nodiscard]] std::int64_t ghost_count() const {
    return static_cast<std::int64_t>(ghost_nodes()) * components_;
  }
  /// Nodes of the whole space, and the global number of this rank's first owned node.
  [[nodiscard]] std::int64_t global_nodes() const { return rank_offsets_.back(); }
  [[nodiscard]] std::int64_t first_owned() const {
    return rank_offsets_[static_cast<std::size_t>(comm_.rank())];
  }
  /// The rank that owns global node `global`.
  [[nodiscard]] int owner(std::int64_t global) const;
  /// The global number of local node `local` (owned first, then ghosts).
  [[nodiscard]] std::int64_t global_node(std::int32_t local) const {
    return local < owned_nodes_
               ? first_owned() + local
               : ghost_globals_.view()[static_cast<std::size_t>(local - owned_nodes_)];
  }
  /// The local number of global node `global`, or -1 when this rank neither owns nor reads it.
  [[nodiscard]] std::int32_t local_node(std::int64_t global) const;
  /// The local number (owned first, then ghosts) of each node of the local space; -1 for nodes
  /// that only ghost cells away from this rank's nodes hold.
  [[nodiscard]] std::span<const std::int32_t> local_of_space_node() const {
    return {local_of_space_.view().data(), local_of_space_.size()};
  }
  /// The node of the whole space rank 0 built, for each owned node.
  [[nodiscard]] std::span<const std::int64_t> serial_nodes() const {
    return {serial_nodes_.view().data(), serial_nodes_.size()};
  }

  /// ghosts = the owners' values of the ghost nodes (halo exchange). begin posts the messages and
  /// returns; finish waits for them. `owned` and `ghosts` must stay untouched in between. The
  /// exchanges check their vectors' sizes on the calling rank only (a wrong size is a program's
  /// error, the same on every rank).
  void begin_ghost_update(memory::ArrayView<const double> owned,
                          memory::ArrayView<double> ghosts) const;
  void finish_ghost_update() const;
  void update_ghosts(memory::ArrayView<const double> owned,
                     memory::ArrayView<double> ghosts) const {
    begin_ghost_update(owned, ghosts);
    finish_ghost_update();
  }

  /// owned = the sum over ranks of `space` (a vector of the local space, e.g. integrated over the
  /// owned cells) at each owned node: this rank's value first, then the others' in rank order.
  void accumulate(memory::ArrayView<const double> space, memory::ArrayView<double> owned) const;

  /// owned = `space` (a vector of the local space) at each owned node, no sums.
  void gather_owned(memory::ArrayView<const double> space, memory::ArrayView<double> owned) const;

  /// space = the owned and ghost values at the local space's nodes (0 at unnumbered nodes).
  void to_space(memory::ArrayView<const double> owned, memory::ArrayView<const double> ghosts,
                memory::ArrayView<double> space) const;

  /// The ranks that send ghost values to this one, with the ghost nodes [first, last) each fills,
  /// and the ranks this one sends to (for plans built on top, such as DistributedMatrix).
  /// Ranges into the ghost nodes (sources) or the send list (targets).
  using Neighbour = memory::MessageRange;
  [[nodiscard]] std::span<const Neighbour> ghost_sources() const { return ghost_sources_; }
  [[nodiscard]] std::span<const Neighbour> ghost_targets() const { return ghost_targets_; }
  /// Bytes the ghost update sends from this rank, and receives.
  [[nodiscard]] std::int64_t ghost_update_bytes_sent() const;
  [[nodiscard]] std::int64_t ghost_update_bytes_received() const {
    return ghost_count() * static_cast<std::int64_t>(sizeof(double));
  }

private:
  /// The index of `global` among the ghost nodes, or -1.
  [[nodiscard]] std::int32_t local_node_among_ghosts(std::int64_t global) const;
  void check_size(std::size_t size, std::int64_t expected, const char* what) const;

  memory::Communicator comm_;
  int components_;
  std::int32_t owned_nodes_ = 0;
  std::vector<std::int64_t> rank_offsets_;
  memory::Temporary<std::int64_t> serial_nodes_;
  memory::Temporary<std::int64_t> ghost_globals_;  ///< sorted, so grouped by owner
  memory::Temporary<std::int32_t> local_of_space_;
  std::vector<Neighbour> ghost_sources_;
  std::vector<Neighbour> ghost_targets_;
  memory::Temporary<std::int32_t> send_nodes_;     ///< owned nodes each target reads, by target
  mutable memory::Temporary<double> send_buffer_;  ///< their values
  memory::Temporary<std::int32_t> owned_space_;    ///< the local space's node of each owned node
  // accumulate(): the space nodes whose sums go to their owners (grouped by owner), and for each
  // rank that sends sums here, the owned nodes they add to.
  std::vector<Neighbour> sum_targets_;
  std::vector<Neighbour> sum_sources_;
  memory::Temporary<std::int32_t> sum_send_nodes_;
  memory::Temporary<std::int32_t> sum_receive_nodes_;
  mutable memory::Temporary<double> sum_send_buffer_;
  mutable memory::Temporary<double> sum_receive_buffer_;
  mutable std::vector<MPI_Request> requests_;
};

/// The nodes of `local_space` (a Lagrange space on `local`'s mesh, built from local.mesh)
/// numbered over the ranks of `comm`: rank `root` builds the same space on `global` (read there
/// only), numbers its nodes by owner and sends each rank the global numbers of its cells' nodes.
/// Collective; an error on any rank is thrown on every rank.
template <class Space>
DistributedDofs distribute_dofs(const memory::Communicator& comm,
                                const geometry::LocalMeshData& local, const Space& local_space,
                                const geometry::MeshData& global, memory::Pool& pool,
                                memory::Arena& scratch, int root = 0) {
  using Geometry = typename Space::Geometry;
  constexpr int per_cell = Space::Element::node_count;
  const auto cells = local.global_cells.size();
  std::vector<std::int32_t> space_cell_nodes(cells * per_cell);
  memory::copy_to_host(std::span<std::int32_t>(space_cell_nodes), local_space.view().cell_nodes,
                       pool.stream());
  pool.stream().synchronize();

  // Every rank tells the root its cells (owned count first); the root answers with the global
  // node of each of their element nodes, then the serial number of each node the rank owns.
  std::vector<std::vector<std::int64_t>> to_root(static_cast<std::size_t>(comm.size()));
  to_root[static_cast<std::size_t>(root)].push_back(local.owned_cells);
  to_root[static_cast<std::size_t>(root)].insert(to_root[static_cast<std::size_t>(root)].end(),
                                                 local.global_cells.begin(),
                                                 local.global_cells.end());
  const std::vector<std::vector<std::int64_t>> requests = comm.exchange(to_root);
  std::vector<std::vector<std::int64_t>> answers(static_cast<std::size_t>(comm.size()));
  std::vector<std::int64_t> rank_offsets(static_cast<std::size_t>(comm.size()) + 1, 0);
  comm.collective([&] {
    if (comm.rank() != root) {
      return;
    }
    const Geometry whole(global, pool, scratch);
    const Space whole_space(whole, pool, scratch);
    const auto total_cells = static_cast<std::size_t>(whole.cell_count());
    std::vector<std::int32_t> cell_nodes(total_cells * per_cell);
    memory::copy_to_host(std::span<std::int32_t>(cell_nodes), whole_space.view().cell_nodes,
                         pool.stream());
    pool.stream().synchronize();
    std::vector<std::int32_t> partition(total_cells, -1);
    for (std::size_t r = 0; r < requests.size(); ++r) {
      const auto owned = static_cast<std::size_t>(requests[r].at(0));
      for (std::size_t i = 0; i < owned; ++i) {
        partition.at(static_cast<std::size_t>(requests[r].at(i + 1))) =
            static_cast<std::int32_t>(r);
      }
    }
    for (std::size_t c = 0; c < total_cells; ++c) {
      AFEM_EXPECTS(partition[c] >= 0,
                   "distribute_dofs: cell " + std::to_string(c) + " is owned by no rank");
    }
    // The owner of a node is the owner of the lowest-numbered cell that holds it.
    const auto nodes = static_cast<std::size_t>(whole_space.node_count());
    std::vector<std::int32_t> owner(nodes, -1);
    for (std::size_t c = 0; c < total_cells; ++c) {
      for (std::size_t k = 0; k < per_cell; ++k) {
        const auto node = static_cast<std::size_t>(cell_nodes[c * per_cell + k]);
        if (owner[node] < 0) {
          owner[node] = partition[c];
        }
      }
    }
    for (std::size_t node = 0; node < nodes; ++node) {
      AFEM_EXPECTS(owner[node] >= 0, "distribute_dofs: node " + std::to_string(node) +
                                         " of the whole space lies in no cell (a vertex no cell "
                                         "uses?)");
      ++rank_offsets[static_cast<std::size_t>(owner[node]) + 1];
    }
    for (std::size_t r = 1; r < rank_offsets.size(); ++r) {
      rank_offsets[r] += rank_offsets[r - 1];
    }
    std::vector<std::int64_t> next(rank_offsets.begin(), rank_offsets.end() - 1);
    std::vector<std::int64_t> renumbered(nodes);
    std::vector<std::int64_t> serial(nodes);
    for (std::size_t n = 0; n < nodes; ++n) {
      renumbered[n] = next[static_cast<std::size_t>(owner[n])]++;
      serial[static_cast<std::size_t>(renumbered[n])] = static_cast<std::int64_t>(n);
    }
    for (std::size_t r = 0; r < requests.size(); ++r) {
      std::vector<std::int64_t>& answer = answers[r];
      for (std::size_t i = 1; i < requests[r].size(); ++i) {
        const auto c = static_cast<std::size_t>(requests[r][i]);
        for (std::size_t k = 0; k < per_cell; ++k) {
          answer.push_back(renumbered[static_cast<std::size_t>(cell_nodes[c * per_cell + k])]);
        }
      }
      answer.insert(answer.end(), serial.begin() + rank_offsets[r],
                    serial.begin() + rank_offsets[r + 1]);
    }
  });
  comm.broadcast(rank_offsets, root);
  std::vector<std::int64_t> answer = comm.scatter(answers, root);
  const std::size_t entries = cells * per_cell;
  std::vector<std::int64_t> serial(answer.begin() + static_cast<std::ptrdiff_t>(entries),
                                   answer.end());
  answer.resize(entries);
  return DistributedDofs(comm, space_cell_nodes, answer, per_cell, local.owned_cells,
                         local_space.node_count(), std::move(rank_offsets), std::move(serial),
                         Space::components, pool);
}

}  // namespace afem::fem
