#pragma once

/// @file
/// build_plan: the block pattern of test x trial over a domain's elements and the triplet plan
/// that sums element matrices into it (for block b, the element triplets
/// order[starts[b] .. starts[b + 1]) in element order). A triplet is t = (e * nt + i) * nu + j:
/// element e, test node i, trial node j.
///
/// CPU: row by row from the test restriction's node pairs (the (element, node) pairs of each row,
/// already in element order): a row's columns are marked in a per-thread table over the trial
/// nodes, sorted, and its triplets placed by a counting sort over its few blocks; no sort of all
/// triplets. CUDA, and a domain with fewer triplets than the trial space has nodes (where the
/// table would outweigh the plan): the triplets' (row, column) keys are sorted with a stable radix
/// sort, which gives the same plan.

#include <thrust/count.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/scan.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/radix_sort.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

#if !AFEM_HAS_CUDA
#include <algorithm>

#include "arenafem/memory/parallel_for.hpp"
#endif

namespace afem::fem::detail {

/// A matrix pattern and its triplet plan, built apart from the matrix and installed into it with
/// install() once nothing more can fail. Owns its arrays (in the matrix's pool) until installed.
template <int R, int C>
struct AssemblyPlan {
  std::int32_t rows = 0;
  std::int32_t columns = 0;
  AssemblyKey key;
  memory::Temporary<std::int32_t> offsets;
  memory::Temporary<std::int32_t> block_columns;
  memory::Temporary<double> values;
  memory::Temporary<std::int32_t> order;
  memory::Temporary<std::int32_t> starts;

  /// Swaps the pattern (values uninitialized) and the plan into `matrix`.
  void install(BsrMatrix<R, C>& matrix) && {
    matrix.set_pattern(rows, columns, std::move(offsets), std::move(block_columns),
                       std::move(values));
    matrix.set_plan(key, std::move(order), std::move(starts));
  }
};

/// The plan from a stable sort of every triplet's (row, column) key.
template <int R, int C, class TestElement, class TrialElement>
AssemblyPlan<R, C> build_plan_by_sort(memory::Pool& pool, const RestrictionView& test,
                                      const RestrictionView& trial, const AssemblyKey& key,
                                      memory::Arena& scratch) {
  constexpr int nt = TestElement::node_count;
  constexpr int nu = TrialElement::node_count;
  auto policy = memory::arena_policy(scratch, "integrate.thrust");
  const auto total = static_cast<std::size_t>(key.triplets);
  const std::int64_t cols = trial.node_count;
  auto keys = memory::borrow_temporary<std::int64_t>(scratch, total, "integrate.triplet_keys");
  auto order = memory::borrow_temporary<std::int32_t>(pool, total, "BsrMatrix.triplet_order");
  const memory::ArrayView<std::int64_t> k = keys.view();
  const memory::ArrayView<std::int32_t> o = order.view();
  thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), total,
                     [=] AFEM_HOST_DEVICE(std::size_t t) {
                       const std::size_t e = t / (static_cast<std::size_t>(nt) * nu);
                       const std::size_t i = (t / nu) % nt;
                       const std::size_t j = t % nu;
                       const std::int64_t row = test.element_nodes[e * nt + i];
                       const std::int64_t col = trial.element_nodes[e * nu + j];
                       k[t] = row * cols + col;
                       o[t] = static_cast<std::int32_t>(t);
                     });
  memory::radix_sort_by_key(k, o, scratch);
  // Borrowed after the sort, so that it takes the place of the sort's scratch.
  auto heads = memory::borrow_temporary<std::int32_t>(scratch, total, "integrate.triplet_heads");
  const memory::ArrayView<std::int32_t> h = heads.view();
  thrust::for_each_n(
      policy, thrust::counting_iterator<std::size_t>(0), total,
      [=] AFEM_HOST_DEVICE(std::size_t t) { h[t] = t == 0 || k[t] != k[t - 1] ? 1 : 0; });
  const auto blocks =
      static_cast<std::size_t>(thrust::count(policy, h.begin(), h.end(), std::int32_t{1}));
  thrust::inclusive_scan(policy, h.begin(), h.end(), h.begin());
  auto starts = memory::borrow_temporary<std::int32_t>(pool, blocks + 1, "BsrMatrix.block_starts");
  auto columns = memory::borrow_temporary<std::int32_t>(pool, blocks, "BsrMatrix.columns");
  auto offsets = memory::borrow_temporary<std::int32_t>(
      pool, static_cast<std::size_t>(test.node_count) + 1, "BsrMatrix.offsets");
  auto values = memory::borrow_temporary<double>(pool, blocks * R * C, "BsrMatrix.values");
  const memory::ArrayView<std::int32_t> s = starts.view();
  const memory::ArrayView<std::int32_t> c = columns.view();
  const memory::ArrayView<std::int32_t> off = offsets.view();
  thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), total,
                     [=] AFEM_HOST_DEVICE(std::size_t t) {
                       if (t == 0 || h[t] != h[t - 1]) {
                         const auto b = static_cast<std::size_t>(h[t] - 1);
                         s[b] = static_cast<std::int32_t>(t);
                         c[b] = static_cast<std::int32_t>(k[t] % cols);
                       }
                     });
  const auto block_count = static_cast<std::int32_t>(blocks);
  const auto total_triplets = static_cast<std::int32_t>(total);
  thrust::for_each_n(
      policy, thrust::counting_iterator<std::int32_t>(0), test.node_count + 1,
      [=] AFEM_HOST_DEVICE(std::int32_t r) {
        if (r == 0) {
          s[static_cast<std::size_t>(block_count)] = total_triplets;
        }
        const std::int64_t first = static_cast<std::int64_t>(r) * cols;
        std::int32_t lo = 0;
        std::int32_t hi = block_count;
        while (lo < hi) {
          const std::int32_t mid = lo + (hi - lo) / 2;
          if (k[static_cast<std::size_t>(s[static_cast<std::size_t>(mid)])] < first) {
            lo = mid + 1;
          } else {
            hi = mid;
          }
        }
        off[static_cast<std::size_t>(r)] = lo;
      });
  return {test.node_count,    trial.node_count,   key,
          std::move(offsets), std::move(columns), std::move(values),
          std::move(order),   std::move(starts)};
}

#if !AFEM_HAS_CUDA

/// Rows per part of the CPU plan build below which it stays on one thread; rows with more columns
/// than this are sorted with std::sort instead of by insertion.
inline constexpr std::size_t plan_row_grain = std::size_t{1} << 13;
inline constexpr std::int32_t plan_insertion_sort_columns = 32;

/// One part's rows of the CPU plan build: `mark` is the part's table over the trial nodes (-1
/// where unmarked when a pass starts).
template <int NT, int NU>
struct PlanRows {
  RestrictionView test;
  RestrictionView trial;

  /// Calls visit(column, triplet) for every triplet of row r, in triplet order.
  template <class Visit>
  void for_each_triplet(std::int32_t r, const Visit& visit) const {
    const auto first =
        static_cast<std::size_t>(test.node_pair_offsets[static_cast<std::size_t>(r)]);
    const auto last =
        static_cast<std::size_t>(test.node_pair_offsets[static_cast<std::size_t>(r) + 1]);
    for (std::size_t u = first; u < last; ++u) {
      const auto pair = static_cast<std::size_t>(test.node_pairs[u]);
      const std::size_t e = pair / NT;
      const std::int32_t* columns = &trial.element_nodes[e * NU];
      for (int j = 0; j < NU; ++j) {
        visit(columns[j], static_cast<std::int32_t>(pair * NU + static_cast<std::size_t>(j)));
      }
    }
  }

  /// The number of distinct columns of row r (marks them with r).
  std::int32_t count_blocks(std::int32_t r, std::int32_t* mark) const {
    std::int32_t blocks = 0;
    for_each_triplet(r, [&](std::int32_t column, std::int32_t /*t*/) {
      if (mark[column] != r) {
        mark[column] = r;
        ++blocks;
      }
    });
    return blocks;
  }

  /// Row r's sorted columns into columns[offsets[r] ..), its triplets into `order` (each block's
  /// in triplet order) and each block's first triplet into starts (marks its columns with their
  /// block numbers).
  void fill(std::int32_t r, std::int32_t* mark, memory::ArrayView<const std::int32_t> offsets,
            memory::ArrayView<std::int32_t> columns, memory::ArrayView<std::int32_t> starts,
            memory::ArrayView<std::int32_t> order) const {
    const std::int32_t begin = offsets[static_cast<std::size_t>(r)];
    const std::int32_t end = offsets[static_cast<std::size_t>(r) + 1];
    std::int32_t* row_columns = &columns[static_cast<std::size_t>(begin)];
    std::int32_t* row_starts = &starts[static_cast<std::size_t>(begin)];
    // The row's columns in the order found, each with its number of triplets (in row_starts).
    std::int32_t found = 0;
    for_each_triplet(r, [&](std::int32_t column, std::int32_t /*t*/) {
      const std::int32_t slot = mark[column];
      if (slot < begin || slot >= end) {
        mark[column] = begin + found;
        row_columns[found] = column;
        row_starts[found] = 1;
        ++found;
      } else {
        ++row_starts[slot - begin];
      }
    });
    if (found > plan_insertion_sort_columns) {
      // Many columns (high-order elements): sorted alone, then counted again.
      std::sort(row_columns, row_columns + found);
      for (std::int32_t a = 0; a < found; ++a) {
        mark[row_columns[a]] = begin + a;
        row_starts[a] = 0;
      }
      for_each_triplet(
          r, [&](std::int32_t column, std::int32_t /*t*/) { ++row_starts[mark[column] - begin]; });
    }
    // A row has a few dozen columns: insertion sort, the counts along.
    for (std::int32_t a = 1; a < found; ++a) {
      const std::int32_t column = row_columns[a];
      const std::int32_t count = row_starts[a];
      std::int32_t b = a;
      for (; b > 0 && row_columns[b - 1] > column; --b) {
        row_columns[b] = row_columns[b - 1];
        row_starts[b] = row_starts[b - 1];
      }
      row_columns[b] = column;
      row_starts[b] = count;
    }
    for (std::int32_t a = 0; a < found; ++a) {
      mark[row_columns[a]] = begin + a;
    }
    // A counting sort of the row's triplets by block: the counts' running sum from the row's
    // first triplet, then each triplet at its block's next place.
    std::int32_t place =
        test.node_pair_offsets[static_cast<std::size_t>(r)] * static_cast<std::int32_t>(NU);
    const std::int32_t row_first = place;
    for (std::int32_t a = 0; a < found; ++a) {
      const std::int32_t count = row_starts[a];
      row_starts[a] = place;
      place += count;
    }
    for_each_triplet(r, [&](std::int32_t column, std::int32_t t) {
      order[static_cast<std::size_t>(starts[static_cast<std::size_t>(mark[column])]++)] = t;
    });
    // Each block's place now is the next block's first triplet.
    for (std::int32_t a = found - 1; a > 0; --a) {
      row_starts[a] = row_starts[a - 1];
    }
    if (found > 0) {
      row_starts[0] = row_first;
    }
  }
};

/// The plan row by row (CPU), with `parts` mark tables over the trial nodes.
template <int R, int C, class TestElement, class TrialElement>
AssemblyPlan<R, C> build_plan_by_rows(std::size_t parts, memory::Pool& pool,
                                      const RestrictionView& test, const RestrictionView& trial,
                                      const AssemblyKey& key, memory::Arena& scratch) {
  const auto total = static_cast<std::size_t>(key.triplets);
  const auto rows = static_cast<std::size_t>(test.node_count);
  const auto cols = static_cast<std::size_t>(trial.node_count);
  AFEM_EXPECTS(
      test.node_pair_offsets[rows] == static_cast<std::int64_t>(total) / TrialElement::node_count,
      "integrate: the restriction's node pairs do not match its " + std::to_string(total) +
          " element triplets");
  auto marks =
      memory::borrow_temporary<std::int32_t>(scratch, parts * cols, "integrate.plan_marks");
  auto offsets = memory::borrow_temporary<std::int32_t>(pool, rows + 1, "BsrMatrix.offsets");
  auto order = memory::borrow_temporary<std::int32_t>(pool, total, "BsrMatrix.triplet_order");
  const memory::ArrayView<std::int32_t> off = offsets.view();
  std::int32_t* const all_marks = marks.data();
  const PlanRows<TestElement::node_count, TrialElement::node_count> plan{test, trial};
  auto part_rows = [&](std::size_t part) {
    return std::pair{static_cast<std::int32_t>(rows * part / parts),
                     static_cast<std::int32_t>(rows * (part + 1) / parts)};
  };
  memory::parallel_for(parts, 1, [&](std::size_t part) {
    std::int32_t* mark = all_marks + part * cols;
    std::fill(mark, mark + cols, -1);
    const auto [first, last] = part_rows(part);
    for (std::int32_t r = first; r < last; ++r) {
      off[static_cast<std::size_t>(r) + 1] = plan.count_blocks(r, mark);
    }
  });
  off[0] = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    off[r + 1] += off[r];
  }
  const auto blocks = static_cast<std::size_t>(off[rows]);
  auto starts = memory::borrow_temporary<std::int32_t>(pool, blocks + 1, "BsrMatrix.block_starts");
  auto columns = memory::borrow_temporary<std::int32_t>(pool, blocks, "BsrMatrix.columns");
  auto values = memory::borrow_temporary<double>(pool, blocks * R * C, "BsrMatrix.values");
  const memory::ArrayView<std::int32_t> s = starts.view();
  const memory::ArrayView<std::int32_t> c = columns.view();
  const memory::ArrayView<std::int32_t> o = order.view();
  memory::parallel_for(parts, 1, [&](std::size_t part) {
    std::int32_t* mark = all_marks + part * cols;
    std::fill(mark, mark + cols, -1);
    const auto [first, last] = part_rows(part);
    for (std::int32_t r = first; r < last; ++r) {
      plan.fill(r, mark, off, c, s, o);
    }
  });
  s[blocks] = static_cast<std::int32_t>(total);
  return {test.node_count,    trial.node_count,   key,
          std::move(offsets), std::move(columns), std::move(values),
          std::move(order),   std::move(starts)};
}

#endif

/// The pattern and triplet plan of test x trial over the domain, in `pool`.
template <int R, int C, class TestElement, class TrialElement>
AssemblyPlan<R, C> build_plan(memory::Pool& pool, const RestrictionView& test,
                              const RestrictionView& trial, const AssemblyKey& key,
                              memory::Arena& scratch) {
#if !AFEM_HAS_CUDA
  const auto total = static_cast<std::size_t>(key.triplets);
  const auto rows = static_cast<std::size_t>(test.node_count);
  const auto columns = static_cast<std::size_t>(trial.node_count);
  std::size_t parts = 1;
  if (rows >= 2 * plan_row_grain) {
    parts = std::min(static_cast<std::size_t>(memory::parallel_team_size()), rows / plan_row_grain);
  }
  // The mark tables stay smaller than the plan's own triplet order.
  parts = std::min(parts, std::max<std::size_t>(total / std::max<std::size_t>(columns, 1), 1));
  if (columns <= total) {
    return build_plan_by_rows<R, C, TestElement, TrialElement>(parts, pool, test, trial, key,
                                                               scratch);
  }
#endif
  return build_plan_by_sort<R, C, TestElement, TrialElement>(pool, test, trial, key, scratch);
}

}  // namespace afem::fem::detail
