#include "arenafem/fem/distributed_dofs.hpp"

#include <algorithm>

namespace afem::fem {

namespace {

constexpr int ghost_update_tag = 7101;
constexpr int accumulate_tag = 7102;

/// to[i] = from[nodes[i]] for every entry, `width` values per node.
void gather_nodes(memory::ArrayView<const double> from, memory::ArrayView<const std::int32_t> nodes,
                  memory::ArrayView<double> to, std::size_t width) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (std::size_t k = 0; k < width; ++k) {
      to[i * width + k] = from[static_cast<std::size_t>(nodes[i]) * width + k];
    }
  }
}

/// Swaps a copy of `values` into `slot`, a Temporary of `pool` under `label`.
template <class T>
void keep(memory::Temporary<T>& slot, const std::vector<T>& values, memory::Pool& pool,
          const char* label) {
  memory::replace_owned(slot, memory::borrow_temporary<T>(pool, values.size(), label));
  std::copy(values.begin(), values.end(), slot.view().begin());
}

/// Groups `globals` (sorted) by owner into neighbour ranges.
template <class Owner>
std::vector<DistributedDofs::Neighbour> group_by_owner(const std::vector<std::int64_t>& globals,
                                                       Owner owner) {
  std::vector<DistributedDofs::Neighbour> groups;
  for (std::size_t i = 0; i < globals.size(); ++i) {
    const int rank = owner(globals[i]);
    if (groups.empty() || groups.back().rank != rank) {
      groups.push_back({rank, static_cast<std::int32_t>(i), static_cast<std::int32_t>(i)});
    }
    groups.back().last = static_cast<std::int32_t>(i) + 1;
  }
  return groups;
}

/// The requests of `groups` (each neighbour's slice of `globals`) as per-rank vectors.
std::vector<std::vector<std::int64_t>> requests_of(
    const std::vector<DistributedDofs::Neighbour>& groups, const std::vector<std::int64_t>& globals,
    int ranks) {
  std::vector<std::vector<std::int64_t>> to(static_cast<std::size_t>(ranks));
  for (const auto& group : groups) {
    to[static_cast<std::size_t>(group.rank)].assign(globals.begin() + group.first,
                                                    globals.begin() + group.last);
  }
  return to;
}

}  // namespace

DistributedDofs::DistributedDofs(
    const memory::Communicator& comm, std::span<const std::int32_t> space_cell_nodes,
    std::span<const std::int64_t> global_cell_nodes, int nodes_per_cell, std::int32_t owned_cells,
    std::int32_t space_node_count, std::vector<std::int64_t> rank_offsets,
    std::vector<std::int64_t> serial_nodes, int components, memory::Pool& pool)
    : comm_(comm), components_(components), rank_offsets_(std::move(rank_offsets)) {
  const auto per_cell = static_cast<std::size_t>(nodes_per_cell);
  std::vector<std::int64_t> sums;  // global numbers of the nodes whose sums go to their owners
  std::vector<std::int64_t> ghost_globals;
  std::vector<std::int32_t> local_of_space;
  comm_.collective([&] {
    AFEM_EXPECTS(pool.device().is_cpu(), "DistributedDofs: the pool is on " + pool.device().name() +
                                             "; the distributed layer runs on the CPU backend");
    AFEM_EXPECTS(components >= 1 && components <= 3,
                 "DistributedDofs: " + std::to_string(components) + " components, expected 1-3");
    AFEM_EXPECTS(rank_offsets_.size() == static_cast<std::size_t>(comm_.size()) + 1,
                 "DistributedDofs: expected one rank offset per rank and one more");
    AFEM_EXPECTS(space_cell_nodes.size() == global_cell_nodes.size() &&
                     space_cell_nodes.size() % per_cell == 0 &&
                     static_cast<std::size_t>(owned_cells) * per_cell <= space_cell_nodes.size(),
                 "DistributedDofs: the cells' space and global nodes differ in count");
    const std::int64_t first = first_owned();
    const std::int64_t last = rank_offsets_[static_cast<std::size_t>(comm_.rank()) + 1];
    owned_nodes_ = static_cast<std::int32_t>(last - first);
    AFEM_EXPECTS(serial_nodes.size() == static_cast<std::size_t>(owned_nodes_),
                 "DistributedDofs: " + std::to_string(serial_nodes.size()) +
                     " serial numbers for " + std::to_string(owned_nodes_) + " owned nodes");
    const auto owned = [&](std::int64_t g) { return g >= first && g < last; };

    std::vector<std::int64_t> global_of_space(static_cast<std::size_t>(space_node_count), -1);
    for (std::size_t i = 0; i < space_cell_nodes.size(); ++i) {
      const auto s = static_cast<std::size_t>(space_cell_nodes[i]);
      AFEM_EXPECTS(s < global_of_space.size(),
                   "DistributedDofs: space node " + std::to_string(s) + " out of range");
      std::int64_t& g = global_of_space[s];
      AFEM_EXPECTS(g < 0 || g == global_cell_nodes[i],
                   "DistributedDofs: local node " + std::to_string(s) + " is global node " +
                       std::to_string(g) + " in one cell and " +
                       std::to_string(global_cell_nodes[i]) + " in another");
      g = global_cell_nodes[i];
    }
    // Numbered: the nodes of owned cells and of cells that hold an owned node.
    const std::size_t cells = space_cell_nodes.size() / per_cell;
    std::vector<std::uint8_t> numbered(global_of_space.size(), 0);
    std::vector<std::uint8_t> in_owned_cell(global_of_space.size(), 0);
    for (std::size_t c = 0; c < cells; ++c) {
      const auto nodes = space_cell_nodes.subspan(c * per_cell, per_cell);
      const bool is_owned = c < static_cast<std::size_t>(owned_cells);
      const bool relevant =
          is_owned || std::any_of(nodes.begin(), nodes.end(), [&](std::int32_t s) {
            return owned(global_of_space[static_cast<std::size_t>(s)]);
          });
      for (const std::int32_t s : nodes) {
        numbered[static_cast<std::size_t>(s)] |= relevant ? 1 : 0;
        in_owned_cell[static_cast<std::size_t>(s)] |= is_owned ? 1 : 0;
      }
    }
    local_of_space.assign(global_of_space.size(), -1);
    std::vector<std::int32_t> owned_space(static_cast<std::size_t>(owned_nodes_), -1);
    for (std::size_t s = 0; s < global_of_space.size(); ++s) {
      const std::int64_t g = global_of_space[s];
      if (numbered[s] == 0) {
        continue;
      }
      if (owned(g)) {
        owned_space[static_cast<std::size_t>(g - first)] = static_cast<std::int32_t>(s);
        local_of_space[s] = static_cast<std::int32_t>(g - first);
      } else {
        ghost_globals.push_back(g);
        if (in_owned_cell[s] != 0) {
          sums.push_back(g);
        }
      }
    }
    for (std::size_t i = 0; i < owned_space.size(); ++i) {
      AFEM_EXPECTS(owned_space[i] >= 0, "DistributedDofs: owned node " + std::to_string(i) +
                                            " is in none of this rank's cells");
    }
    std::sort(ghost_globals.begin(), ghost_globals.end());
    std::sort(sums.begin(), sums.end());
    keep(ghost_globals_, ghost_globals, pool, "DistributedDofs.ghost_globals");
    for (std::size_t s = 0; s < global_of_space.size(); ++s) {
      if (numbered[s] != 0 && !owned(global_of_space[s])) {
        local_of_space[s] = owned_nodes_ + local_node_among_ghosts(global_of_space[s]);
      }
    }
    keep(local_of_space_, local_of_space, pool, "DistributedDofs.local_of_space");
    keep(serial_nodes_, serial_nodes, pool, "DistributedDofs.serial_nodes");
    keep(owned_space_, owned_space, pool, "DistributedDofs.owned");
  });

  const auto owner_of = [this](std::int64_t g) { return owner(g); };
  ghost_sources_ = group_by_owner(ghost_globals, owner_of);
  const auto wanted = comm_.exchange(requests_of(ghost_sources_, ghost_globals, comm_.size()));
  sum_targets_ = group_by_owner(sums, owner_of);
  const auto summed = comm_.exchange(requests_of(sum_targets_, sums, comm_.size()));

  comm_.collective([&] {
    const std::int64_t first = first_owned();
    const auto to_owned = [&](std::int64_t g, const char* what) {
      AFEM_EXPECTS(g >= first && g < first + owned_nodes_,
                   std::string("DistributedDofs: asked for ") + what + " of node " +
                       std::to_string(g) + ", which rank " + std::to_string(comm_.rank()) +
                       " does not own");
      return static_cast<std::int32_t>(g - first);
    };
    std::vector<std::int32_t> send;
    std::vector<std::int32_t> receive;
    for (std::size_t r = 0; r < wanted.size(); ++r) {
      if (!wanted[r].empty()) {
        const auto begin = static_cast<std::int32_t>(send.size());
        for (const std::int64_t g : wanted[r]) {
          send.push_back(to_owned(g, "the value"));
        }
        ghost_targets_.push_back(
            {static_cast<int>(r), begin, static_cast<std::int32_t>(send.size())});
      }
      if (!summed[r].empty()) {
        const auto begin = static_cast<std::int32_t>(receive.size());
        for (const std::int64_t g : summed[r]) {
          receive.push_back(to_owned(g, "the sum"));
        }
        sum_sources_.push_back(
            {static_cast<int>(r), begin, static_cast<std::int32_t>(receive.size())});
      }
    }
    const auto c = static_cast<std::size_t>(components_);
    keep(send_nodes_, send, pool, "DistributedDofs.send_nodes");
    memory::replace_owned(send_buffer_, memory::borrow_temporary<double>(
                                            pool, send.size() * c, "DistributedDofs.send_buffer"));
    keep(sum_receive_nodes_, receive, pool, "DistributedDofs.sum_receive_nodes");
    memory::replace_owned(sum_receive_buffer_,
                          memory::borrow_temporary<double>(pool, receive.size() * c,
                                                           "DistributedDofs.sum_receive_buffer"));
    std::vector<std::int32_t> sum_send;
    // The space node of each summed node, in the order sent (sums is sorted by global number).
    std::vector<std::pair<std::int64_t, std::int32_t>> by_global;
    for (std::size_t s = 0; s < local_of_space.size(); ++s) {
      const std::int32_t l = local_of_space[s];
      if (l >= owned_nodes_) {
        by_global.emplace_back(ghost_globals[static_cast<std::size_t>(l - owned_nodes_)],
                               static_cast<std::int32_t>(s));
      }
    }
    std::sort(by_global.begin(), by_global.end());
    for (const std::int64_t g : sums) {
      const auto found = std::lower_bound(by_global.begin(), by_global.end(),
                                          std::pair<std::int64_t, std::int32_t>(g, -1));
      sum_send.push_back(found->second);
    }
    keep(sum_send_nodes_, sum_send, pool, "DistributedDofs.sum_send_nodes");
    memory::replace_owned(sum_send_buffer_,
                          memory::borrow_temporary<double>(pool, sum_send.size() * c,
                                                           "DistributedDofs.sum_send_buffer"));
    requests_.reserve(std::max(ghost_sources_.size() + ghost_targets_.size(),
                               sum_sources_.size() + sum_targets_.size()));
  });
}

std::int32_t DistributedDofs::local_node_among_ghosts(std::int64_t global) const {
  const memory::ArrayView<const std::int64_t> ghosts = ghost_globals_.view();
  const auto* found = std::lower_bound(ghosts.begin(), ghosts.end(), global);
  if (found == ghosts.end() || *found != global) {
    return -1;
  }
  return static_cast<std::int32_t>(found - ghosts.begin());
}

int DistributedDofs::owner(std::int64_t global) const {
  AFEM_EXPECTS(global >= 0 && global < global_nodes(), "DistributedDofs::owner: node " +
                                                           std::to_string(global) + " of " +
                                                           std::to_string(global_nodes()));
  const auto found = std::upper_bound(rank_offsets_.begin(), rank_offsets_.end(), global);
  return static_cast<int>(found - rank_offsets_.begin()) - 1;
}

std::int32_t DistributedDofs::local_node(std::int64_t global) const {
  const std::int64_t first = first_owned();
  if (global >= first && global < first + owned_nodes_) {
    return static_cast<std::int32_t>(global - first);
  }
  const std::int32_t ghost = local_node_among_ghosts(global);
  return ghost < 0 ? -1 : owned_nodes_ + ghost;
}

std::int64_t DistributedDofs::ghost_update_bytes_sent() const {
  return static_cast<std::int64_t>(send_buffer_.size() * sizeof(double));
}

void DistributedDofs::check_size(std::size_t size, std::int64_t expected, const char* what) const {
  AFEM_EXPECTS(size == static_cast<std::size_t>(expected),
               std::string("DistributedDofs: ") + what + " has " + std::to_string(size) +
                   " values, expected " + std::to_string(expected));
}

void DistributedDofs::begin_ghost_update(memory::ArrayView<const double> owned,
                                         memory::ArrayView<double> ghosts) const {
  check_size(owned.size(), owned_count(), "the owned vector");
  check_size(ghosts.size(), ghost_count(), "the ghost vector");
  AFEM_EXPECTS(requests_.empty(), "DistributedDofs: an exchange is already in flight");
  const auto c = static_cast<std::size_t>(components_);
  const memory::ArrayView<double> buffer = send_buffer_.view();
  gather_nodes(owned, send_nodes_.view(), buffer, c);
  comm_.post_receives(ghost_sources_, ghosts.data(), c, ghost_update_tag, requests_);
  comm_.post_sends(ghost_targets_, buffer.data(), c, ghost_update_tag, requests_);
}

void DistributedDofs::finish_ghost_update() const {
  memory::Communicator::wait_all(requests_);
}

void DistributedDofs::accumulate(memory::ArrayView<const double> space,
                                 memory::ArrayView<double> owned) const {
  check_size(space.size(), static_cast<std::int64_t>(local_of_space_.size()) * components_,
             "the space vector");
  check_size(owned.size(), owned_count(), "the owned vector");
  AFEM_EXPECTS(requests_.empty(), "DistributedDofs: an exchange is already in flight");
  const auto c = static_cast<std::size_t>(components_);
  gather_owned(space, owned);
  const memory::ArrayView<double> incoming = sum_receive_buffer_.view();
  comm_.post_receives(sum_sources_, incoming.data(), c, accumulate_tag, requests_);
  const memory::ArrayView<double> outgoing = sum_send_buffer_.view();
  gather_nodes(space, sum_send_nodes_.view(), outgoing, c);
  comm_.post_sends(sum_targets_, outgoing.data(), c, accumulate_tag, requests_);
  finish_ghost_update();
  const memory::ArrayView<const std::int32_t> receive_nodes = sum_receive_nodes_.view();
  for (const Neighbour& source : sum_sources_) {
    for (auto i = static_cast<std::size_t>(source.first); i < static_cast<std::size_t>(source.last);
         ++i) {
      for (std::size_t k = 0; k < c; ++k) {
        owned[static_cast<std::size_t>(receive_nodes[i]) * c + k] += incoming[i * c + k];
      }
    }
  }
}

void DistributedDofs::gather_owned(memory::ArrayView<const double> space,
                                   memory::ArrayView<double> owned) const {
  check_size(space.size(), static_cast<std::int64_t>(local_of_space_.size()) * components_,
             "the space vector");
  check_size(owned.size(), owned_count(), "the owned vector");
  gather_nodes(space, owned_space_.view(), owned, static_cast<std::size_t>(components_));
}

void DistributedDofs::to_space(memory::ArrayView<const double> owned,
                               memory::ArrayView<const double> ghosts,
                               memory::ArrayView<double> space) const {
  check_size(owned.size(), owned_count(), "the owned vector");
  check_size(ghosts.size(), ghost_count(), "the ghost vector");
  check_size(space.size(), static_cast<std::int64_t>(local_of_space_.size()) * components_,
             "the space vector");
  const auto c = static_cast<std::size_t>(components_);
  const auto n_owned = static_cast<std::size_t>(owned_nodes_);
  const memory::ArrayView<const std::int32_t> local_of_space = local_of_space_.view();
  for (std::size_t s = 0; s < local_of_space.size(); ++s) {
    const std::int32_t l = local_of_space[s];
    for (std::size_t k = 0; k < c; ++k) {
      double value = 0.0;
      if (l >= 0) {
        const auto local = static_cast<std::size_t>(l);
        value = local < n_owned ? owned[local * c + k] : ghosts[(local - n_owned) * c + k];
      }
      space[s * c + k] = value;
    }
  }
}

}  // namespace afem::fem
