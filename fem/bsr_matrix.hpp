#pragma once

/// @file
/// BsrMatrix<R, C>: a block-sparse-row matrix with R x C blocks (1 to 3 each; square by default)
/// in the backend's memory, with SpMV and transposed SpMV, transpose, block diagonal, the diagonal
/// of A W A^T and Dirichlet projection.

#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/logical.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>

#include "arenafem/fem/detail/check_size.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/radix_sort.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::fem {

/// What kernels see of a BsrMatrix: row offsets (block_rows + 1), block columns (increasing in
/// each row) and values (R * C per block, row-major in the block), writable (Value = double, from
/// a non-const matrix) or read-only (Value = const double, from a const one).
template <int R, int C = R, class Value = double>
struct BsrView {
  static constexpr int block_row_size = R;
  static constexpr int block_column_size = C;
  std::int32_t block_rows = 0;
  std::int32_t block_columns = 0;
  memory::ArrayView<const std::int32_t> offsets;
  memory::ArrayView<const std::int32_t> columns;
  memory::ArrayView<Value> values;
};

/// The read-only view of an R x C block matrix, which the products take.
template <int R, int C = R>
using ConstBsrView = BsrView<R, C, const double>;

namespace detail {

/// The next BsrMatrix::pattern_id(), unique in the process over every block shape.
inline std::uint64_t next_pattern_id() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

}  // namespace detail

/// A BsrMatrix's pattern read by columns: the blocks of block column c are
/// entries[offsets[c] .. offsets[c + 1]), in increasing row order, and rows[i] is the block row of
/// entries[i].
struct ColumnIndexView {
  memory::ArrayView<const std::int32_t> offsets;
  memory::ArrayView<const std::int32_t> entries;
  memory::ArrayView<const std::int32_t> rows;
};

/// Which cached triplet plan a matrix's pattern came from (the restrictions' versions).
struct AssemblyKey {
  std::uint64_t test = 0;
  std::uint64_t trial = 0;
  std::int64_t triplets = 0;
  bool operator==(const AssemblyKey&) const = default;
};

/// A block-sparse matrix with R x C blocks: R scalar rows per block row, C scalar columns per
/// block column (a form whose test space has R components and trial space C). Owns
/// "BsrMatrix.offsets", "BsrMatrix.columns", "BsrMatrix.values" and, once assembled by integrate(),
/// the triplet plan of its pattern ("BsrMatrix.triplet_order", "BsrMatrix.block_starts") and, once
/// spmv_transposed() asked for it, the column index of its pattern ("BsrMatrix.column_*") in its
/// pool until destroyed. A new pattern is swapped in with replace_owned, so the matrix is left as
/// it was when building one fails.
template <int R, int C = R>
class BsrMatrix {
  static_assert(R >= 1 && R <= 3 && C >= 1 && C <= 3,
                "BsrMatrix blocks have 1 to 3 rows and columns");

public:
  static constexpr int block_row_size = R;
  static constexpr int block_column_size = C;
  static constexpr int block_size = R * C;

  explicit BsrMatrix(memory::Pool& pool) : pool_(&pool) {}
  /// Takes `other`'s arrays; `other` is left empty (no pattern, id 0) in the same pool.
  BsrMatrix(BsrMatrix&& other) noexcept
      : pool_(other.pool_),
        pattern_id_(std::exchange(other.pattern_id_, 0)),
        transposed_from_(std::exchange(other.transposed_from_, 0)),
        block_rows_(std::exchange(other.block_rows_, 0)),
        block_columns_(std::exchange(other.block_columns_, 0)),
        offsets_(std::move(other.offsets_)),
        columns_(std::move(other.columns_)),
        values_(std::move(other.values_)),
        plan_key_(std::exchange(other.plan_key_, {})),
        triplet_order_(std::move(other.triplet_order_)),
        block_starts_(std::move(other.block_starts_)),
        column_offsets_(std::move(other.column_offsets_)),
        column_entries_(std::move(other.column_entries_)),
        column_rows_(std::move(other.column_rows_)) {}
  BsrMatrix(const BsrMatrix&) = delete;
  BsrMatrix& operator=(const BsrMatrix&) = delete;
  BsrMatrix& operator=(BsrMatrix&&) = delete;
  ~BsrMatrix() = default;

  /// A matrix from host CSR-of-blocks arrays. Throws afem::Error naming the first bad entry
  /// (offsets not increasing from 0 to the column count, a column out of range or repeated or not
  /// increasing in its row, a value count other than R * C per block).
  static BsrMatrix from_host(memory::Pool& pool, std::int32_t block_rows,
                             std::int32_t block_columns, std::span<const std::int32_t> offsets,
                             std::span<const std::int32_t> columns,
                             std::span<const double> values) {
    AFEM_EXPECTS(block_rows >= 0 && block_columns >= 0, "BsrMatrix::from_host: negative size " +
                                                            std::to_string(block_rows) + " x " +
                                                            std::to_string(block_columns));
    AFEM_EXPECTS(offsets.size() == static_cast<std::size_t>(block_rows) + 1 && offsets[0] == 0 &&
                     static_cast<std::size_t>(offsets.back()) == columns.size(),
                 "BsrMatrix::from_host: expected " + std::to_string(block_rows + 1) +
                     " offsets from 0 to the number of blocks (" + std::to_string(columns.size()) +
                     ")");
    AFEM_EXPECTS(values.size() == columns.size() * block_size,
                 "BsrMatrix::from_host: " + std::to_string(values.size()) + " values for " +
                     std::to_string(columns.size()) + " blocks of " + std::to_string(block_size));
    for (std::int32_t r = 0; r < block_rows; ++r) {
      const auto row = static_cast<std::size_t>(r);
      AFEM_EXPECTS(offsets[row] <= offsets[row + 1],
                   "BsrMatrix::from_host: offsets decrease at row " + std::to_string(r));
    }
    for (std::int32_t r = 0; r < block_rows; ++r) {
      const auto row = static_cast<std::size_t>(r);
      for (auto k = offsets[row]; k < offsets[row + 1]; ++k) {
        const std::int32_t c = columns[static_cast<std::size_t>(k)];
        AFEM_EXPECTS(c >= 0 && c < block_columns && (k == offsets[row] || columns[k - 1] < c),
                     "BsrMatrix::from_host: column " + std::to_string(c) + " at row " +
                         std::to_string(r) + " is out of range or not increasing");
      }
    }
    BsrMatrix matrix(pool);
    auto o = memory::borrow_temporary<std::int32_t>(pool, offsets.size(), "BsrMatrix.offsets");
    auto c = memory::borrow_temporary<std::int32_t>(pool, columns.size(), "BsrMatrix.columns");
    auto v = memory::borrow_temporary<double>(pool, values.size(), "BsrMatrix.values");
    memory::copy_to_device(o.view(), offsets, pool.stream());
    memory::copy_to_device(c.view(), columns, pool.stream());
    memory::copy_to_device(v.view(), values, pool.stream());
    pool.stream().synchronize();
    matrix.set_pattern(block_rows, block_columns, std::move(o), std::move(c), std::move(v));
    return matrix;
  }

  [[nodiscard]] std::int32_t block_rows() const { return block_rows_; }
  [[nodiscard]] std::int32_t block_columns() const { return block_columns_; }
  [[nodiscard]] std::int64_t block_count() const {
    return static_cast<std::int64_t>(columns_.size());
  }
  /// Scalar rows and columns.
  [[nodiscard]] std::int64_t rows() const { return static_cast<std::int64_t>(block_rows_) * R; }
  [[nodiscard]] std::int64_t columns() const {
    return static_cast<std::int64_t>(block_columns_) * C;
  }
  [[nodiscard]] memory::Pool& pool() const { return *pool_; }
  /// The view kernels take: writable values from a non-const matrix, read-only from a const one.
  [[nodiscard]] BsrView<R, C> view() {
    return {block_rows_, block_columns_, offsets_.view(), columns_.view(), values_.view()};
  }
  [[nodiscard]] ConstBsrView<R, C> view() const {
    return {block_rows_, block_columns_, offsets_.view(), columns_.view(), values_.view()};
  }

  /// Swaps in a new pattern and values (the assembly plan is dropped).
  void set_pattern(std::int32_t block_rows, std::int32_t block_columns,
                   memory::Temporary<std::int32_t>&& offsets,
                   memory::Temporary<std::int32_t>&& columns, memory::Temporary<double>&& values) {
    memory::replace_owned(offsets_, std::move(offsets));
    memory::replace_owned(columns_, std::move(columns));
    memory::replace_owned(values_, std::move(values));
    block_rows_ = block_rows;
    block_columns_ = block_columns;
    plan_key_ = {};
    pattern_id_ = detail::next_pattern_id();
    transposed_from_ = 0;
    memory::replace_owned(triplet_order_, memory::Temporary<std::int32_t>{});
    memory::replace_owned(block_starts_, memory::Temporary<std::int32_t>{});
    memory::replace_owned(column_offsets_, memory::Temporary<std::int32_t>{});
    memory::replace_owned(column_entries_, memory::Temporary<std::int32_t>{});
    memory::replace_owned(column_rows_, memory::Temporary<std::int32_t>{});
  }

  /// Takes `other`'s pattern and values as this matrix's new ones, through set_pattern (a new
  /// pattern id); `other`, which must be in the same pool, is left empty.
  void replace_with(BsrMatrix&& other) {
    AFEM_EXPECTS(other.pool_ == pool_,
                 "BsrMatrix::replace_with: the matrices are in different pools");
    BsrMatrix taken(std::move(other));  // leaves `other` empty, its plan and caches too
    set_pattern(taken.block_rows_, taken.block_columns_, std::move(taken.offsets_),
                std::move(taken.columns_), std::move(taken.values_));
  }

  /// Names the current pattern: a new one (set_pattern, a new assembly plan) gets a new id, unique
  /// in the process; 0 before any.
  [[nodiscard]] std::uint64_t pattern_id() const { return pattern_id_; }
  /// The pattern_id() of the matrix whose transpose this one's pattern is (transpose(a, at)), or 0.
  [[nodiscard]] std::uint64_t transposed_from() const { return transposed_from_; }
  void set_transposed_from(std::uint64_t id) { transposed_from_ = id; }

  /// The pattern read by columns, built in the matrix's pool on the first call after a new
  /// pattern and kept until the next one. That first call writes the matrix's cache: it must not
  /// run in two threads at once (nor does any function that calls it: spmv_transposed,
  /// transpose).
  [[nodiscard]] ColumnIndexView column_index(memory::Arena& scratch) const;

  /// The cached assembly plan: for block b, the triplets triplet_order[block_starts[b] ..
  /// block_starts[b + 1]) sum into it, in that (element) order.
  [[nodiscard]] const AssemblyKey& plan_key() const { return plan_key_; }
  [[nodiscard]] memory::ArrayView<const std::int32_t> triplet_order() const {
    return triplet_order_.view();
  }
  [[nodiscard]] memory::ArrayView<const std::int32_t> block_starts() const {
    return block_starts_.view();
  }
  void set_plan(const AssemblyKey& key, memory::Temporary<std::int32_t>&& order,
                memory::Temporary<std::int32_t>&& starts) {
    memory::replace_owned(triplet_order_, std::move(order));
    memory::replace_owned(block_starts_, std::move(starts));
    plan_key_ = key;
  }

private:
  memory::Pool* pool_;
  std::uint64_t pattern_id_ = 0;
  std::uint64_t transposed_from_ = 0;
  std::int32_t block_rows_ = 0;
  std::int32_t block_columns_ = 0;
  memory::Temporary<std::int32_t> offsets_;
  memory::Temporary<std::int32_t> columns_;
  memory::Temporary<double> values_;
  AssemblyKey plan_key_;
  memory::Temporary<std::int32_t> triplet_order_;
  memory::Temporary<std::int32_t> block_starts_;
  mutable memory::Temporary<std::int32_t> column_offsets_;
  mutable memory::Temporary<std::int32_t> column_entries_;
  mutable memory::Temporary<std::int32_t> column_rows_;
};

namespace detail {

/// Prefetches the values and columns of the blocks [first, last), a cache line at a time. Nothing
/// on the GPU. Forced inline: GCC counts a prefetch as free of side effects, so an out-of-line copy
/// of this function is deduced `const` and its calls are deleted.
template <int R, int C>
AFEM_HOST_DEVICE AFEM_INLINE void prefetch_blocks(const ConstBsrView<R, C>& m, std::size_t first,
                                                  std::size_t last) {
#if !defined(__CUDA_ARCH__)
  constexpr std::size_t line = 64;
  const auto* values = reinterpret_cast<const char*>(m.values.data());
  for (std::size_t byte = first * sizeof(double) * R * C; byte < last * sizeof(double) * R * C;
       byte += line) {
    memory::prefetch(values + byte);
  }
  const auto* columns = reinterpret_cast<const char*>(m.columns.data());
  for (std::size_t byte = first * sizeof(std::int32_t); byte < last * sizeof(std::int32_t);
       byte += line) {
    memory::prefetch(columns + byte);
  }
#else
  (void)m;
  (void)first;
  (void)last;
#endif
}

/// Prefetches the blocks `lookahead` blocks past [begin, end): a row of a product asks for the
/// lines a later row will read, which the hardware prefetcher alone leaves a core short of memory
/// bandwidth on (measured on the CPU backend). Forced inline (see prefetch_blocks).
template <int R, int C>
AFEM_HOST_DEVICE AFEM_INLINE void prefetch_ahead(const ConstBsrView<R, C>& m, std::int32_t begin,
                                                 std::int32_t end) {
  constexpr std::size_t lookahead = 512;
  const std::size_t blocks = m.columns.size();
  const auto first = static_cast<std::size_t>(begin) + lookahead;
  const std::size_t ahead_end = static_cast<std::size_t>(end) + lookahead;
  const std::size_t last = ahead_end < blocks ? ahead_end : blocks;
  if (first < last) {
    prefetch_blocks(m, first, last);
  }
}

/// Adds block k's product with x to the B sums of `lane`.
template <int B>
AFEM_HOST_DEVICE void add_block_product(const ConstBsrView<B>& m, memory::ArrayView<const double> x,
                                        std::size_t k, double* lane) {
  const auto col = static_cast<std::size_t>(m.columns[k]);
  const double* block = &m.values[k * B * B];
  for (int i = 0; i < B; ++i) {
    for (int j = 0; j < B; ++j) {
      lane[i] += block[i * B + j] * x[col * B + static_cast<std::size_t>(j)];
    }
  }
}

/// The R entries of (A x) for the blocks [begin, end) of one block row. Square blocks are summed
/// in `lanes` interleaved partial sums (block k into lane k % lanes, the last few into lane 0,
/// the lanes added pairwise at the end): one running sum would make every block wait for the
/// previous one's addition, which bounds a row by the adder's latency rather than by memory.
/// Rectangular blocks keep one running sum per entry, column component by column component (so
/// that a product by the divergence of a vector field sums as one per component would). The
/// order is fixed, so the result does not depend on the thread count.
template <int R, int C>
AFEM_HOST_DEVICE void row_product(const ConstBsrView<R, C>& m, memory::ArrayView<const double> x,
                                  std::size_t begin, std::size_t end, double* sum) {
  if constexpr (R != C) {
    for (int i = 0; i < R; ++i) {
      double total = 0.0;
      for (int j = 0; j < C; ++j) {
        for (std::size_t k = begin; k < end; ++k) {
          const auto col = static_cast<std::size_t>(m.columns[k]);
          total += m.values[k * R * C + static_cast<std::size_t>(i * C + j)] *
                   x[col * C + static_cast<std::size_t>(j)];
        }
      }
      sum[i] = total;
    }
  } else {
    constexpr int lanes = R == 1 ? 4 : 2;
    double lane[lanes][R] = {};
    std::size_t k = begin;
    for (; k + lanes <= end; k += lanes) {
      for (int l = 0; l < lanes; ++l) {
        add_block_product<R>(m, x, k + static_cast<std::size_t>(l), lane[l]);
      }
    }
    for (; k < end; ++k) {
      add_block_product<R>(m, x, k, lane[0]);
    }
    for (int i = 0; i < R; ++i) {
      if constexpr (lanes == 4) {
        sum[i] = (lane[0][i] + lane[1][i]) + (lane[2][i] + lane[3][i]);
      } else {
        sum[i] = lane[0][i] + lane[1][i];
      }
    }
  }
}

/// The column index of `m` (see ColumnIndexView), its three arrays borrowed from `source`
/// ("BsrMatrix.column_offsets", "BsrMatrix.column_entries", "BsrMatrix.column_rows"): a radix
/// sort of the blocks by (column, row) in `scratch`, then a binary search per column.
template <int R, int C, class Source>
std::array<memory::Temporary<std::int32_t>, 3> build_column_index(const ConstBsrView<R, C>& m,
                                                                  Source& source,
                                                                  memory::Arena& scratch) {
  auto policy = memory::arena_policy(scratch, "BsrMatrix.thrust");
  const std::size_t n = m.columns.size();
  auto offsets = memory::borrow_temporary<std::int32_t>(
      source, static_cast<std::size_t>(m.block_columns) + 1, "BsrMatrix.column_offsets");
  auto entries = memory::borrow_temporary<std::int32_t>(source, n, "BsrMatrix.column_entries");
  auto rows = memory::borrow_temporary<std::int32_t>(source, n, "BsrMatrix.column_rows");
  auto keys = memory::borrow_temporary<std::int64_t>(scratch, n, "BsrMatrix.column_keys");
  const memory::ArrayView<std::int64_t> key = keys.view();
  const memory::ArrayView<std::int32_t> entry = entries.view();
  const memory::ArrayView<std::int32_t> row_of = rows.view();
  const memory::ArrayView<std::int32_t> column_offsets = offsets.view();
  const std::int64_t block_rows = m.block_rows;
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), m.block_rows,
                     [=] AFEM_HOST_DEVICE(std::int32_t r) {
                       const auto row = static_cast<std::size_t>(r);
                       for (auto k = m.offsets[row]; k < m.offsets[row + 1]; ++k) {
                         const auto s = static_cast<std::size_t>(k);
                         key[s] = static_cast<std::int64_t>(m.columns[s]) * block_rows + r;
                         entry[s] = k;
                       }
                     });
  memory::radix_sort_by_key(key, entry, scratch);
  thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), n,
                     [=] AFEM_HOST_DEVICE(std::size_t i) {
                       row_of[i] = static_cast<std::int32_t>(key[i] % block_rows);
                     });
  const auto block_count = static_cast<std::int32_t>(n);
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), m.block_columns + 1,
                     [=] AFEM_HOST_DEVICE(std::int32_t c) {
                       // First block whose key is in column c or later.
                       const std::int64_t first = static_cast<std::int64_t>(c) * block_rows;
                       std::int32_t lo = 0;
                       std::int32_t hi = block_count;
                       while (lo < hi) {
                         const std::int32_t mid = lo + (hi - lo) / 2;
                         if (key[static_cast<std::size_t>(mid)] < first) {
                           lo = mid + 1;
                         } else {
                           hi = mid;
                         }
                       }
                       column_offsets[static_cast<std::size_t>(c)] = lo;
                     });
  return {std::move(offsets), std::move(entries), std::move(rows)};
}

}  // namespace detail

template <int R, int C>
ColumnIndexView BsrMatrix<R, C>::column_index(memory::Arena& scratch) const {
  if (column_offsets_.size() != static_cast<std::size_t>(block_columns_) + 1) {
    auto index = detail::build_column_index(view(), *pool_, scratch);
    memory::replace_owned(column_offsets_, std::move(index[0]));
    memory::replace_owned(column_entries_, std::move(index[1]));
    memory::replace_owned(column_rows_, std::move(index[2]));
  }
  return {column_offsets_.view(), column_entries_.view(), column_rows_.view()};
}

/// Every row: the selection of spmv() and spmv_transposed().
struct AllRows {
  AFEM_HOST_DEVICE constexpr bool operator()(std::size_t /*row*/) const { return true; }
};

/// y = A x (alpha = 1, beta = 0) or y = alpha A x + beta y on the scalar rows i where keep(i) is
/// true (a device-callable predicate); the other entries of y are left as they are, and a block
/// row none of whose rows is kept is not read. Runs on the matrix's backend; returns when y is
/// written.
template <int R, int C, class Keep>
void spmv_where(const BsrMatrix<R, C>& a, Keep keep, memory::ArrayView<const double> x,
                memory::ArrayView<double> y, memory::Arena& scratch, double alpha = 1.0,
                double beta = 0.0) {
  detail::check_size(x.size(), a.columns(), "spmv (x)");
  detail::check_size(y.size(), a.rows(), "spmv (y)");
  auto policy = memory::arena_policy(scratch, "BsrMatrix.thrust");
  const ConstBsrView<R, C> m = a.view();
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), m.block_rows,
                     [=] AFEM_HOST_DEVICE(std::int32_t r) {
                       const auto row = static_cast<std::size_t>(r);
                       bool kept[R];
                       bool any = false;
                       for (int i = 0; i < R; ++i) {
                         kept[i] = keep(row * R + static_cast<std::size_t>(i));
                         any = any || kept[i];
                       }
                       if (!any) {
                         return;
                       }
                       const auto begin = static_cast<std::size_t>(m.offsets[row]);
                       const auto end = static_cast<std::size_t>(m.offsets[row + 1]);
                       detail::prefetch_ahead(m, m.offsets[row], m.offsets[row + 1]);
                       double sum[R];
                       detail::row_product(m, x, begin, end, sum);
                       for (int i = 0; i < R; ++i) {
                         if (kept[i]) {
                           double& out = y[row * R + static_cast<std::size_t>(i)];
                           out = beta == 0.0 ? alpha * sum[i] : alpha * sum[i] + beta * out;
                         }
                       }
                     });
}

/// y = A x (alpha = 1, beta = 0) or y = alpha A x + beta y. Runs on the matrix's backend; returns
/// when y is written.
template <int R, int C>
void spmv(const BsrMatrix<R, C>& a, memory::ArrayView<const double> x, memory::ArrayView<double> y,
          memory::Arena& scratch, double alpha = 1.0, double beta = 0.0) {
  spmv_where(a, AllRows{}, x, y, scratch, alpha, beta);
}

/// y = A^T x (alpha = 1, beta = 0) or y = alpha A^T x + beta y on the entries i of y where
/// keep(i) is true (the others are left as they are), without forming A^T: each entry of y is
/// one running sum over its column's blocks in row order (for R = 1, bit for bit spmv on
/// transpose(a)). The first call after a new pattern builds the matrix's column index
/// (BsrMatrix::column_index) in its pool, so that call must not run in two threads at once on one
/// matrix; later calls take nothing from the pool. The values are gathered through the index: for
/// many products, transpose(a, at, scratch) and spmv on `at` read them in order.
template <int R, int C, class Keep>
void spmv_transposed_where(const BsrMatrix<R, C>& a, Keep keep, memory::ArrayView<const double> x,
                           memory::ArrayView<double> y, memory::Arena& scratch, double alpha = 1.0,
                           double beta = 0.0) {
  detail::check_size(x.size(), a.rows(), "spmv_transposed (x)");
  detail::check_size(y.size(), a.columns(), "spmv_transposed (y)");
  const ColumnIndexView index = a.column_index(scratch);
  auto policy = memory::arena_policy(scratch, "BsrMatrix.thrust");
  const ConstBsrView<R, C> m = a.view();
  thrust::for_each_n(
      policy, thrust::counting_iterator<std::int32_t>(0), m.block_columns,
      [=] AFEM_HOST_DEVICE(std::int32_t c) {
        const auto column = static_cast<std::size_t>(c);
        bool kept[C];
        bool any = false;
        for (int j = 0; j < C; ++j) {
          kept[j] = keep(column * C + static_cast<std::size_t>(j));
          any = any || kept[j];
        }
        if (!any) {
          return;
        }
        // The C sums run side by side in one pass over the column, each in entry order.
        double sum[C] = {};
        for (auto e = index.offsets[column]; e < index.offsets[column + 1]; ++e) {
          const auto k = static_cast<std::size_t>(index.entries[static_cast<std::size_t>(e)]);
          const auto row = static_cast<std::size_t>(index.rows[static_cast<std::size_t>(e)]);
          const double* block = &m.values[k * R * C];
          for (int i = 0; i < R; ++i) {
            const double xi = x[row * R + static_cast<std::size_t>(i)];
            for (int j = 0; j < C; ++j) {
              sum[j] += block[i * C + j] * xi;
            }
          }
        }
        for (int j = 0; j < C; ++j) {
          if (kept[j]) {
            double& out = y[column * C + static_cast<std::size_t>(j)];
            out = beta == 0.0 ? alpha * sum[j] : alpha * sum[j] + beta * out;
          }
        }
      });
}

/// spmv_transposed_where() on every entry of y.
template <int R, int C>
void spmv_transposed(const BsrMatrix<R, C>& a, memory::ArrayView<const double> x,
                     memory::ArrayView<double> y, memory::Arena& scratch, double alpha = 1.0,
                     double beta = 0.0) {
  spmv_transposed_where(a, AllRows{}, x, y, scratch, alpha, beta);
}

/// d = the diagonal of A W A^T for the diagonal W = diag(w) (w: one weight per column of A, d:
/// one entry per row): d_i = sum over the row's entries a_ij^2 w_j, column component by column
/// component. The Jacobi preconditioner of a Schur complement such as B M^-1 B^T.
template <int R, int C>
void weighted_gram_diagonal(const BsrMatrix<R, C>& a, memory::ArrayView<const double> w,
                            memory::ArrayView<double> d, memory::Arena& scratch) {
  detail::check_size(w.size(), a.columns(), "weighted_gram_diagonal (w)");
  detail::check_size(d.size(), a.rows(), "weighted_gram_diagonal (d)");
  auto policy = memory::arena_policy(scratch, "BsrMatrix.thrust");
  const ConstBsrView<R, C> m = a.view();
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), m.block_rows,
                     [=] AFEM_HOST_DEVICE(std::int32_t r) {
                       const auto row = static_cast<std::size_t>(r);
                       for (int i = 0; i < R; ++i) {
                         double sum = 0.0;
                         for (int j = 0; j < C; ++j) {
                           for (auto k = m.offsets[row]; k < m.offsets[row + 1]; ++k) {
                             const auto entry = static_cast<std::size_t>(k);
                             const double v =
                                 m.values[entry * R * C + static_cast<std::size_t>(i * C + j)];
                             const auto col = static_cast<std::size_t>(m.columns[entry]);
                             sum += v * v * w[col * C + static_cast<std::size_t>(j)];
                           }
                         }
                         d[row * R + static_cast<std::size_t>(i)] = sum;
                       }
                     });
}

/// The diagonal blocks (B * B per block row, zero where a row has no diagonal block).
template <int B>
void block_diagonal(const BsrMatrix<B>& a, memory::ArrayView<double> diagonal,
                    memory::Arena& scratch) {
  AFEM_EXPECTS(a.block_rows() == a.block_columns(), "block_diagonal: the matrix is not square");
  detail::check_size(diagonal.size(), a.rows() * B, "block_diagonal");
  auto policy = memory::arena_policy(scratch, "BsrMatrix.thrust");
  const ConstBsrView<B> m = a.view();
  thrust::for_each_n(
      policy, thrust::counting_iterator<std::int32_t>(0), m.block_rows,
      [=] AFEM_HOST_DEVICE(std::int32_t r) {
        const auto row = static_cast<std::size_t>(r);
        double* out = &diagonal[row * B * B];
        for (int i = 0; i < B * B; ++i) {
          out[i] = 0.0;
        }
        for (auto k = m.offsets[row]; k < m.offsets[row + 1]; ++k) {
          if (m.columns[static_cast<std::size_t>(k)] == r) {
            for (int i = 0; i < B * B; ++i) {
              out[i] = m.values[static_cast<std::size_t>(k) * B * B + static_cast<std::size_t>(i)];
            }
          }
        }
      });
}

namespace detail {

/// out = a's values transposed block by block into the order of a's column index.
template <int R, int C>
void transposed_values(const ConstBsrView<R, C>& m, memory::ArrayView<const std::int32_t> entry,
                       memory::ArrayView<double> out, memory::Arena& scratch) {
  auto policy = memory::arena_policy(scratch, "BsrMatrix.thrust");
  thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), entry.size(),
                     [=] AFEM_HOST_DEVICE(std::size_t i) {
                       const auto from = static_cast<std::size_t>(entry[i]) * R * C;
                       for (int p = 0; p < C; ++p) {
                         for (int q = 0; q < R; ++q) {
                           out[i * R * C + static_cast<std::size_t>(p * R + q)] =
                               m.values[from + static_cast<std::size_t>(q * C + p)];
                         }
                       }
                     });
}

}  // namespace detail

/// at = A^T. When `at` already holds the transpose of `a`'s current pattern (an earlier call),
/// only its values are rewritten, in one pass through `a`'s column index; otherwise `at` gets a new
/// pattern in its pool. Either way `a` keeps its column index (BsrMatrix::column_index) in its
/// pool, so a call after the first on the same pattern takes nothing from either pool, and the
/// first must not run in two threads at once. For a matrix re-assembled every step whose
/// transpose is applied many times (a Schur complement B W B^T in a Krylov solve), this is cheaper
/// than spmv_transposed in every product. `at` must not be `a`.
template <int R, int C>
void transpose(const BsrMatrix<R, C>& a, BsrMatrix<C, R>& at, memory::Arena& scratch) {
  if constexpr (R == C) {
    AFEM_EXPECTS(&a != &at, "transpose: the matrix and its transpose are the same object");
  }
  const ConstBsrView<R, C> m = a.view();
  const ColumnIndexView index = a.column_index(scratch);
  const std::uint64_t source = a.pattern_id();
  const bool same_pattern = source != 0 && at.transposed_from() == source &&
                            at.block_rows() == a.block_columns() &&
                            at.block_count() == a.block_count();
  if (same_pattern) {
    detail::transposed_values(m, index.entries, at.view().values, scratch);
    return;
  }
  auto offsets =
      memory::borrow_temporary<std::int32_t>(at.pool(), index.offsets.size(), "BsrMatrix.offsets");
  auto columns =
      memory::borrow_temporary<std::int32_t>(at.pool(), index.rows.size(), "BsrMatrix.columns");
  auto values =
      memory::borrow_temporary<double>(at.pool(), index.rows.size() * R * C, "BsrMatrix.values");
  auto policy = memory::arena_policy(scratch, "BsrMatrix.thrust");
  thrust::copy(policy, index.offsets.begin(), index.offsets.end(), offsets.view().begin());
  thrust::copy(policy, index.rows.begin(), index.rows.end(), columns.view().begin());
  detail::transposed_values(m, index.entries, values.view(), scratch);
  at.set_pattern(m.block_columns, m.block_rows, std::move(offsets), std::move(columns),
                 std::move(values));
  at.set_transposed_from(source);
}

/// A^T as a new matrix in `a`'s pool (blocks transposed too: C x R); `a` keeps its column index
/// (see transpose(a, at, scratch)).
template <int R, int C>
BsrMatrix<C, R> transpose(const BsrMatrix<R, C>& a, memory::Arena& scratch) {
  BsrMatrix<C, R> result(a.pool());
  transpose(a, result, scratch);
  return result;
}

/// Imposes u = g on the dofs where `mask` is nonzero: b -= A g (g zero off the mask), then zeroes
/// those rows and columns, puts 1 on their diagonal and g in b. Keeps a symmetric matrix
/// symmetric. `mask` and `values` have one entry per scalar row.
template <int B>
void project_dirichlet(BsrMatrix<B>& a, memory::ArrayView<double> rhs,
                       memory::ArrayView<const std::uint8_t> mask,
                       memory::ArrayView<const double> values, memory::Arena& scratch) {
  AFEM_EXPECTS(a.block_rows() == a.block_columns(), "project_dirichlet: the matrix is not square");
  detail::check_size(rhs.size(), a.rows(), "project_dirichlet (rhs)");
  detail::check_size(mask.size(), a.rows(), "project_dirichlet (mask)");
  detail::check_size(values.size(), a.rows(), "project_dirichlet (values)");
  auto policy = memory::arena_policy(scratch, "BsrMatrix.thrust");
  const auto n = static_cast<std::size_t>(a.rows());
  auto lifted = memory::borrow_temporary<double>(scratch, n, "BsrMatrix.dirichlet_lift");
  const memory::ArrayView<double> g = lifted.view();
  thrust::for_each_n(
      policy, thrust::counting_iterator<std::size_t>(0), n,
      [=] AFEM_HOST_DEVICE(std::size_t i) { g[i] = mask[i] != 0 ? values[i] : 0.0; });
  spmv(a, memory::ArrayView<const double>(g.data(), n), rhs, scratch, -1.0, 1.0);
  const BsrView<B> m = a.view();
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), m.block_rows,
                     [=] AFEM_HOST_DEVICE(std::int32_t r) {
                       const auto row = static_cast<std::size_t>(r);
                       for (auto k = m.offsets[row]; k < m.offsets[row + 1]; ++k) {
                         const auto col =
                             static_cast<std::size_t>(m.columns[static_cast<std::size_t>(k)]);
                         double* block = &m.values[static_cast<std::size_t>(k) * B * B];
                         for (int i = 0; i < B; ++i) {
                           for (int j = 0; j < B; ++j) {
                             const bool fixed = mask[row * B + static_cast<std::size_t>(i)] != 0 ||
                                                mask[col * B + static_cast<std::size_t>(j)] != 0;
                             if (fixed) {
                               block[i * B + j] = row == col && i == j ? 1.0 : 0.0;
                             }
                           }
                         }
                       }
                       for (int i = 0; i < B; ++i) {
                         const std::size_t dof = row * B + static_cast<std::size_t>(i);
                         if (mask[dof] != 0) {
                           rhs[dof] = values[dof];
                         }
                       }
                     });
}

}  // namespace afem::fem
