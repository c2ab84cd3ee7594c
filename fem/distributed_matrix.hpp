#pragma once

/// @file
/// DistributedMatrix<B>: a square BSR matrix whose block rows are distributed over MPI ranks
/// (ARENAFEM_MPI), assembled from each rank's matrix over its owned cells: the rows a rank holds
/// for nodes owned elsewhere are sent to their owners, through a plan built once with the pattern.
/// Its product overlaps the ghost update with the product of the owned columns, so that CG and
/// BiCGStab (whose dot products it reduces over the ranks) solve distributed systems unchanged.

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/distributed_dofs.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/communicator.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"

namespace afem::fem {

/// The owned block rows of a distributed square matrix over a DistributedDofs numbering (B =
/// its components): `owned_columns()` holds the columns of owned nodes, `ghost_columns()` those
/// of ghost nodes. Owns both matrices, the plan that moves a local assembly's values into them
/// ("DistributedMatrix.*") and the message and ghost buffers, all in the pool; after construction
/// assemble() and apply() take nothing from the pool. A LinearOperator with a diagonal (for
/// Jacobi) and global_sum() (for the dot products of the Krylov solvers). Refers to its
/// DistributedDofs, which must outlive it.
template <int B>
class DistributedMatrix {
public:
  /// Builds the pattern and the plan from `local` (the matrix of the local space, assembled over
  /// this rank's owned cells: its rows are the nodes of owned cells) and assembles its values.
  /// Collective. Throws afem::Error on every rank when `local` does not fit `dofs` (its size, a
  /// row of a node it should not hold).
  DistributedMatrix(const DistributedDofs& dofs, const BsrMatrix<B>& local, memory::Arena& scratch)
      : dofs_(&dofs), owned_(local.pool()), ghost_(local.pool()) {
    AFEM_EXPECTS(dofs.components() == B, "DistributedMatrix: blocks of " + std::to_string(B) +
                                             " for dofs with " + std::to_string(dofs.components()) +
                                             " components");
    build(local);
    assemble(local, scratch);
  }

  DistributedMatrix(const DistributedMatrix&) = delete;
  DistributedMatrix& operator=(const DistributedMatrix&) = delete;
  DistributedMatrix(DistributedMatrix&&) = delete;
  DistributedMatrix& operator=(DistributedMatrix&&) = delete;
  ~DistributedMatrix() = default;

  /// New values from `local`, which must have the pattern it had at construction (the same
  /// pattern_id: a repeated integrate() into the same matrix). Collective. The sum at each block:
  /// this rank's value, then the other ranks' in rank order, so the result does not depend on
  /// message timing.
  void assemble(const BsrMatrix<B>& local, memory::Arena& scratch) {
    (void)scratch;
    const memory::Communicator& comm = dofs_->communicator();
    comm.collective([&] {
      AFEM_EXPECTS(local.pattern_id() == pattern_id_,
                   "DistributedMatrix::assemble: the local matrix has a new pattern; build a new "
                   "DistributedMatrix for it");
    });
    const ConstBsrView<B> a = local.view();
    const BsrView<B> owned = owned_.view();
    const BsrView<B> ghost = ghost_.view();
    std::fill(owned.values.begin(), owned.values.end(), 0.0);
    std::fill(ghost.values.begin(), ghost.values.end(), 0.0);
    const auto target = [&](std::int64_t slot) {
      return slot < owned_blocks_
                 ? &owned.values[static_cast<std::size_t>(slot) * block]
                 : &ghost.values[static_cast<std::size_t>(slot - owned_blocks_) * block];
    };
    const memory::ArrayView<const std::int32_t> kept = kept_blocks_.view();
    const memory::ArrayView<const std::int64_t> kept_slot = kept_slots_.view();
    for (std::size_t i = 0; i < kept.size(); ++i) {
      std::copy_n(&a.values[static_cast<std::size_t>(kept[i]) * block], block,
                  target(kept_slot[i]));
    }
    const memory::ArrayView<double> incoming = receive_buffer_.view();
    comm.post_receives(sources_, incoming.data(), block, assemble_tag, requests_);
    const memory::ArrayView<const std::int32_t> sent = sent_blocks_.view();
    const memory::ArrayView<double> outgoing = send_buffer_.view();
    for (std::size_t i = 0; i < sent.size(); ++i) {
      std::copy_n(&a.values[static_cast<std::size_t>(sent[i]) * block], block,
                  &outgoing[i * block]);
    }
    comm.post_sends(destinations_, outgoing.data(), block, assemble_tag, requests_);
    memory::Communicator::wait_all(requests_);
    const memory::ArrayView<const std::int64_t> received_slot = received_slots_.view();
    for (const Range& source : sources_) {
      for (auto i = static_cast<std::size_t>(source.first);
           i < static_cast<std::size_t>(source.last); ++i) {
        double* into = target(received_slot[i]);
        for (std::size_t k = 0; k < block; ++k) {
          into[k] += incoming[i * block + k];
        }
      }
    }
  }

  /// Scalar rows this rank owns (and columns: the operator is square over the owned dofs).
  [[nodiscard]] std::int64_t rows() const { return owned_.rows(); }
  [[nodiscard]] std::int64_t columns() const { return owned_.rows(); }
  [[nodiscard]] const DistributedDofs& dofs() const { return *dofs_; }
  [[nodiscard]] const BsrMatrix<B>& owned_columns() const { return owned_; }
  [[nodiscard]] const BsrMatrix<B>& ghost_columns() const { return ghost_; }
  /// Blocks of the whole matrix (all ranks).
  [[nodiscard]] std::int64_t global_block_count() const {
    return dofs_->communicator().sum(owned_.block_count() + ghost_.block_count());
  }

  /// y = A x over the owned dofs: the ghost values of x are fetched while the owned columns are
  /// multiplied, then the ghost columns are added. Collective.
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y,
             memory::Arena& scratch) const {
    const memory::ArrayView<double> ghosts = ghost_values_.view();
    dofs_->begin_ghost_update(x, ghosts);
    spmv(owned_, x, y, scratch);
    dofs_->finish_ghost_update();
    if (ghost_.block_count() > 0) {
      spmv(ghost_, memory::ArrayView<const double>(ghosts), y, scratch, 1.0, 1.0);
    }
  }

  /// The diagonal entries of the owned rows (one per scalar row).
  void diagonal(memory::ArrayView<double> d, memory::Arena& scratch) const {
    auto blocks = memory::borrow_temporary<double>(
        scratch, static_cast<std::size_t>(owned_.block_rows()) * block,
        "DistributedMatrix.diagonal");
    block_diagonal(owned_, blocks.view(), scratch);
    const memory::ArrayView<const double> all = blocks.view();
    for (std::size_t r = 0; r < static_cast<std::size_t>(owned_.block_rows()); ++r) {
      for (std::size_t i = 0; i < B; ++i) {
        d[r * B + i] = all[r * block + i * B + i];
      }
    }
  }

  /// Runs `work` on every rank through Communicator::collective: a failure on one rank throws
  /// on all. The solvers run their set-up (scratch borrows, checks) through it.
  template <class F>
  void collective(F&& work) const {
    dofs_->communicator().collective(std::forward<F>(work));
  }

  /// The sum over ranks (rank order): what makes a solver's dot products global.
  [[nodiscard]] double global_sum(double value) const { return dofs_->communicator().sum(value); }

  /// As project_dirichlet() on the whole matrix: b -= A g (g = `values` where `mask` is set, 0
  /// elsewhere), then the masked rows and columns zeroed with 1 on their diagonal and g in b.
  /// `rhs`, `mask` and `values` are owned vectors. Collective.
  void project_dirichlet(memory::ArrayView<double> rhs, memory::ArrayView<const std::uint8_t> mask,
                         memory::ArrayView<const double> values, memory::Arena& scratch) {
    const auto n = static_cast<std::size_t>(rows());
    collective([&] {
      AFEM_EXPECTS(rhs.size() == n && mask.size() == n && values.size() == n,
                   "DistributedMatrix::project_dirichlet: expected " + std::to_string(n) +
                       " owned values in rhs, mask and values");
    });
    memory::Temporary<double> lift;
    memory::Temporary<double> fixed;
    memory::Temporary<double> product;
    collective([&] {
      memory::replace_owned(
          lift, memory::borrow_temporary<double>(scratch, n, "DistributedMatrix.dirichlet_lift"));
      memory::replace_owned(
          fixed, memory::borrow_temporary<double>(scratch, n, "DistributedMatrix.dirichlet_mask"));
      memory::replace_owned(
          product, memory::borrow_temporary<double>(scratch, n, "DistributedMatrix.dirichlet_Ag"));
    });
    const memory::ArrayView<double> g = lift.view();
    for (std::size_t i = 0; i < n; ++i) {
      g[i] = mask[i] != 0 ? values[i] : 0.0;
      fixed.view()[i] = mask[i] != 0 ? 1.0 : 0.0;
    }
    apply(g, product.view(), scratch);
    const memory::ArrayView<double> ghost_fixed = ghost_values_.view();
    dofs_->update_ghosts(fixed.view(), ghost_fixed);
    const memory::ArrayView<const double> owned_fixed = fixed.view();
    zero_fixed(owned_.view(), owned_fixed, owned_fixed, true);
    zero_fixed(ghost_.view(), owned_fixed, ghost_fixed, false);
    for (std::size_t i = 0; i < n; ++i) {
      rhs[i] = mask[i] != 0 ? values[i] : rhs[i] - product.view()[i];
    }
  }

private:
  static constexpr std::size_t block = static_cast<std::size_t>(B) * B;
  static constexpr int assemble_tag = 7103;

  using Range = memory::MessageRange;

  static void zero_fixed(const BsrView<B>& m, memory::ArrayView<const double> row_fixed,
                         memory::ArrayView<const double> column_fixed, bool diagonal) {
    for (std::size_t row = 0; row < static_cast<std::size_t>(m.block_rows); ++row) {
      for (auto k = m.offsets[row]; k < m.offsets[row + 1]; ++k) {
        const auto col = static_cast<std::size_t>(m.columns[static_cast<std::size_t>(k)]);
        double* values = &m.values[static_cast<std::size_t>(k) * block];
        for (std::size_t i = 0; i < B; ++i) {
          for (std::size_t j = 0; j < B; ++j) {
            if (row_fixed[row * B + i] != 0.0 || column_fixed[col * B + j] != 0.0) {
              values[i * B + j] = diagonal && row == col && i == j ? 1.0 : 0.0;
            }
          }
        }
      }
    }
  }

  /// The pattern of the owned rows (this rank's entries and those other ranks send), split by
  /// column into owned_ and ghost_, and where each contribution goes.
  void build(const BsrMatrix<B>& local) {
    const DistributedDofs& dofs = *dofs_;
    const memory::Communicator& comm = dofs.communicator();
    const std::span<const std::int32_t> local_of = dofs.local_of_space_node();
    const std::int32_t n_owned = dofs.owned_nodes();
    std::vector<std::int32_t> offsets(static_cast<std::size_t>(local.block_rows()) + 1);
    std::vector<std::int32_t> columns(static_cast<std::size_t>(local.block_count()));
    memory::copy_to_host(std::span<std::int32_t>(offsets), local.view().offsets,
                         local.pool().stream());
    memory::copy_to_host(std::span<std::int32_t>(columns), local.view().columns,
                         local.pool().stream());
    local.pool().stream().synchronize();

    // The entries of each owned row, as (local column, source): source >= 0 is a block of
    // `local`, -1 - i the i-th block received. Rows are filled by counting, then each is sorted by
    // column (a few dozen entries), this rank's entries before the received ones.
    std::vector<std::int32_t> row_starts(static_cast<std::size_t>(n_owned) + 1, 0);
    std::vector<std::vector<std::int64_t>> to(static_cast<std::size_t>(comm.size()));
    std::vector<std::vector<std::int32_t>> sent_by_rank(to.size());
    const auto column_of = [&](std::int32_t k) {
      return local_of[static_cast<std::size_t>(columns[static_cast<std::size_t>(k)])];
    };
    comm.collective([&] {
      AFEM_EXPECTS(local.block_rows() == local.block_columns() &&
                       static_cast<std::size_t>(local.block_rows()) == local_of.size(),
                   "DistributedMatrix: the local matrix is " + std::to_string(local.block_rows()) +
                       " x " + std::to_string(local.block_columns()) + " blocks; the space has " +
                       std::to_string(local_of.size()) + " nodes");
      for (std::size_t r = 0; r < local_of.size(); ++r) {
        const std::int32_t row = local_of[r];
        for (auto k = offsets[r]; k < offsets[r + 1]; ++k) {
          const std::int32_t column = column_of(k);
          AFEM_EXPECTS(row >= 0 && column >= 0,
                       "DistributedMatrix: the local matrix has an entry at space node " +
                           std::to_string(r) + ", which no owned cell holds");
          if (row < n_owned) {
            ++row_starts[static_cast<std::size_t>(row) + 1];
            continue;
          }
          const auto owner = static_cast<std::size_t>(dofs.owner(dofs.global_node(row)));
          to[owner].push_back(dofs.global_node(row));
          to[owner].push_back(dofs.global_node(column));
          sent_by_rank[owner].push_back(k);
        }
      }
    });
    const std::vector<std::vector<std::int64_t>> from = comm.exchange(to);
    std::vector<std::int32_t> sent;
    for (std::size_t r = 0; r < to.size(); ++r) {
      if (!sent_by_rank[r].empty()) {
        const auto first = static_cast<std::int32_t>(sent.size());
        sent.insert(sent.end(), sent_by_rank[r].begin(), sent_by_rank[r].end());
        destinations_.push_back(
            {static_cast<int>(r), first, static_cast<std::int32_t>(sent.size())});
      }
    }
    // Received entries as (owned row, local column), in arrival order.
    std::vector<std::pair<std::int32_t, std::int32_t>> incoming;
    comm.collective([&] {
      for (std::size_t r = 0; r < from.size(); ++r) {
        if (from[r].empty()) {
          continue;
        }
        const auto first = static_cast<std::int32_t>(incoming.size());
        for (std::size_t i = 0; i + 1 < from[r].size(); i += 2) {
          const std::int32_t row = dofs.local_node(from[r][i]);
          const std::int32_t column = dofs.local_node(from[r][i + 1]);
          AFEM_EXPECTS(row >= 0 && row < n_owned && column >= 0,
                       "DistributedMatrix: rank " + std::to_string(r) + " sent entry (" +
                           std::to_string(from[r][i]) + ", " + std::to_string(from[r][i + 1]) +
                           "), outside this rank's owned rows and ghost layer");
          incoming.emplace_back(row, column);
          ++row_starts[static_cast<std::size_t>(row) + 1];
        }
        sources_.push_back(
            {static_cast<int>(r), first, static_cast<std::int32_t>(incoming.size())});
      }
    });
    for (std::size_t r = 1; r < row_starts.size(); ++r) {
      row_starts[r] += row_starts[r - 1];
    }
    std::vector<std::int32_t> entry_column(static_cast<std::size_t>(row_starts.back()));
    std::vector<std::int32_t> entry_source(entry_column.size());
    std::vector<std::int32_t> fill(row_starts.begin(), row_starts.end() - 1);
    for (std::size_t r = 0; r < local_of.size(); ++r) {
      const std::int32_t row = local_of[r];
      if (row < 0 || row >= n_owned) {
        continue;
      }
      for (auto k = offsets[r]; k < offsets[r + 1]; ++k) {
        const auto at = static_cast<std::size_t>(fill[static_cast<std::size_t>(row)]++);
        entry_column[at] = column_of(k);
        entry_source[at] = k;
      }
    }
    for (std::size_t i = 0; i < incoming.size(); ++i) {
      const auto at = static_cast<std::size_t>(fill[static_cast<std::size_t>(incoming[i].first)]++);
      entry_column[at] = incoming[i].second;
      entry_source[at] = -1 - static_cast<std::int32_t>(i);
    }

    // Blocks: unique (row, column), owned columns into owned_, ghost columns into ghost_.
    std::vector<std::int32_t> owned_offsets(static_cast<std::size_t>(n_owned) + 1, 0);
    std::vector<std::int32_t> ghost_offsets(static_cast<std::size_t>(n_owned) + 1, 0);
    std::vector<std::int32_t> owned_columns;
    std::vector<std::int32_t> ghost_columns;
    std::vector<std::int32_t> kept;
    std::vector<std::int64_t> kept_slots;
    std::vector<std::int64_t> received_slots(incoming.size());
    for (std::size_t row = 0; row + 1 < row_starts.size(); ++row) {
      const auto begin = static_cast<std::size_t>(row_starts[row]);
      const auto end = static_cast<std::size_t>(row_starts[row + 1]);
      // Insertion sort by column: stable, so equal columns keep this rank's entry first.
      for (std::size_t i = begin + 1; i < end; ++i) {
        for (std::size_t j = i; j > begin && entry_column[j - 1] > entry_column[j]; --j) {
          std::swap(entry_column[j - 1], entry_column[j]);
          std::swap(entry_source[j - 1], entry_source[j]);
        }
      }
      for (std::size_t i = begin; i < end; ++i) {
        const std::int32_t column = entry_column[i];
        const bool repeat = i > begin && entry_column[i - 1] == column;
        const bool ghost = column >= n_owned;
        if (!repeat) {
          (ghost ? ghost_columns : owned_columns).push_back(ghost ? column - n_owned : column);
          ++(ghost ? ghost_offsets : owned_offsets)[row + 1];
        }
        // Owned slots are final; ghost slots are -1 - index until owned_blocks_ is known.
        const std::int64_t slot = ghost ? -static_cast<std::int64_t>(ghost_columns.size())
                                        : static_cast<std::int64_t>(owned_columns.size()) - 1;
        if (entry_source[i] >= 0) {
          kept.push_back(entry_source[i]);
          kept_slots.push_back(slot);
        } else {
          received_slots[static_cast<std::size_t>(-1 - entry_source[i])] = slot;
        }
      }
    }
    owned_blocks_ = static_cast<std::int64_t>(owned_columns.size());
    for (std::int64_t& slot : kept_slots) {
      slot = slot < 0 ? owned_blocks_ - slot - 1 : slot;
    }
    for (std::int64_t& slot : received_slots) {
      slot = slot < 0 ? owned_blocks_ - slot - 1 : slot;
    }
    for (std::size_t r = 1; r < owned_offsets.size(); ++r) {
      owned_offsets[r] += owned_offsets[r - 1];
      ghost_offsets[r] += ghost_offsets[r - 1];
    }
    memory::Pool& pool = local.pool();
    comm.collective([&] {
      allocate(pool, owned_offsets, owned_columns, ghost_offsets, ghost_columns, kept, kept_slots,
               sent, received_slots);
    });
    requests_.reserve(sources_.size() + destinations_.size());
    pattern_id_ = local.pattern_id();
  }

  /// Swaps in the matrices (zero values) and the plan's arrays and buffers.
  void allocate(memory::Pool& pool, const std::vector<std::int32_t>& owned_offsets,
                const std::vector<std::int32_t>& owned_columns,
                const std::vector<std::int32_t>& ghost_offsets,
                const std::vector<std::int32_t>& ghost_columns,
                const std::vector<std::int32_t>& kept, const std::vector<std::int64_t>& kept_slots,
                const std::vector<std::int32_t>& sent,
                const std::vector<std::int64_t>& received_slots) {
    const std::int32_t n_owned = dofs_->owned_nodes();
    owned_.replace_with(
        BsrMatrix<B>::from_host(pool, n_owned, n_owned, owned_offsets, owned_columns,
                                std::vector<double>(owned_columns.size() * block, 0.0)));
    ghost_.replace_with(
        BsrMatrix<B>::from_host(pool, n_owned, dofs_->ghost_nodes(), ghost_offsets, ghost_columns,
                                std::vector<double>(ghost_columns.size() * block, 0.0)));
    const auto keep = [&pool](memory::Temporary<std::int32_t>& slot,
                              const std::vector<std::int32_t>& values, const char* label) {
      memory::replace_owned(slot,
                            memory::borrow_temporary<std::int32_t>(pool, values.size(), label));
      std::copy(values.begin(), values.end(), slot.view().begin());
    };
    const auto keep64 = [&pool](memory::Temporary<std::int64_t>& slot,
                                const std::vector<std::int64_t>& values, const char* label) {
      memory::replace_owned(slot,
                            memory::borrow_temporary<std::int64_t>(pool, values.size(), label));
      std::copy(values.begin(), values.end(), slot.view().begin());
    };
    keep(kept_blocks_, kept, "DistributedMatrix.kept_blocks");
    keep64(kept_slots_, kept_slots, "DistributedMatrix.kept_slots");
    keep(sent_blocks_, sent, "DistributedMatrix.sent_blocks");
    keep64(received_slots_, received_slots, "DistributedMatrix.received_slots");
    memory::replace_owned(send_buffer_, memory::borrow_temporary<double>(pool, sent.size() * block,
                                                                         "DistributedMatrix.send"));
    memory::replace_owned(receive_buffer_,
                          memory::borrow_temporary<double>(pool, received_slots.size() * block,
                                                           "DistributedMatrix.receive"));
    memory::replace_owned(ghost_values_, memory::borrow_temporary<double>(
                                             pool, static_cast<std::size_t>(dofs_->ghost_count()),
                                             "DistributedMatrix.ghost_values"));
  }

  const DistributedDofs* dofs_;
  BsrMatrix<B> owned_;
  BsrMatrix<B> ghost_;
  std::uint64_t pattern_id_ = 0;
  std::int64_t owned_blocks_ = 0;
  std::vector<Range> sources_;       ///< ranks whose blocks this one receives, in rank order
  std::vector<Range> destinations_;  ///< ranks this one sends blocks to
  memory::Temporary<std::int32_t> kept_blocks_;     ///< local blocks of owned rows
  memory::Temporary<std::int64_t> kept_slots_;      ///< and where they go
  memory::Temporary<std::int32_t> sent_blocks_;     ///< local blocks sent, by destination
  memory::Temporary<std::int64_t> received_slots_;  ///< where each received block goes
  memory::Temporary<double> send_buffer_;
  memory::Temporary<double> receive_buffer_;
  mutable memory::Temporary<double> ghost_values_;
  mutable std::vector<MPI_Request> requests_;
};

}  // namespace afem::fem
