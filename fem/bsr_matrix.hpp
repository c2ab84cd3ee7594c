#pragma once

/// @file
/// BsrMatrix<B>: a block-sparse-row matrix with B x B blocks (B = 1, 2, 3) in the backend's
/// memory, with SpMV, transpose, block diagonal and Dirichlet projection.

#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/logical.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>

#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include "fem/detail/check_size.hpp"
#include "memory/arena.hpp"
#include "memory/array_view.hpp"
#include "memory/config.hpp"
#include "memory/copy.hpp"
#include "memory/error.hpp"
#include "memory/pool.hpp"
#include "memory/radix_sort.hpp"
#include "memory/replace_owned.hpp"
#include "memory/temporary.hpp"
#include "memory/thrust_allocator.hpp"

namespace afem::fem {

/// What kernels see of a BsrMatrix: row offsets (block_rows + 1), block columns (increasing in
/// each row) and values (B * B per block, row-major in the block).
template <int B>
struct BsrView {
  static constexpr int block = B;
  std::int32_t block_rows = 0;
  std::int32_t block_columns = 0;
  memory::ArrayView<const std::int32_t> offsets;
  memory::ArrayView<const std::int32_t> columns;
  memory::ArrayView<double> values;
};

/// Which cached triplet plan a matrix's pattern came from (the restrictions' versions).
struct AssemblyKey {
  std::uint64_t test = 0;
  std::uint64_t trial = 0;
  std::int64_t triplets = 0;
  bool operator==(const AssemblyKey&) const = default;
};

/// A B x B block-sparse matrix. Owns "BsrMatrix.offsets", "BsrMatrix.columns", "BsrMatrix.values"
/// and, once assembled by integrate(), the triplet plan of its pattern ("BsrMatrix.triplet_order",
/// "BsrMatrix.block_starts") in its pool until destroyed. A new pattern is swapped in with
/// replace_owned, so the matrix is left as it was when building one fails.
template <int B>
class BsrMatrix {
  static_assert(B == 1 || B == 2 || B == 3, "BsrMatrix blocks are 1x1, 2x2 or 3x3");

public:
  static constexpr int block = B;
  static constexpr int block_size = B * B;

  explicit BsrMatrix(memory::Pool& pool) : pool_(&pool) {}

  /// A matrix from host CSR-of-blocks arrays. Throws afem::Error naming the first bad entry
  /// (offsets not increasing from 0 to the column count, a column out of range or repeated or not
  /// increasing in its row, a value count other than B * B per block).
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
  [[nodiscard]] std::int64_t rows() const { return static_cast<std::int64_t>(block_rows_) * B; }
  [[nodiscard]] std::int64_t columns() const {
    return static_cast<std::int64_t>(block_columns_) * B;
  }
  [[nodiscard]] memory::Pool& pool() const { return *pool_; }
  [[nodiscard]] BsrView<B> view() const {
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
    memory::replace_owned(triplet_order_, memory::Temporary<std::int32_t>{});
    memory::replace_owned(block_starts_, memory::Temporary<std::int32_t>{});
  }

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
  std::int32_t block_rows_ = 0;
  std::int32_t block_columns_ = 0;
  memory::Temporary<std::int32_t> offsets_;
  memory::Temporary<std::int32_t> columns_;
  memory::Temporary<double> values_;
  AssemblyKey plan_key_;
  memory::Temporary<std::int32_t> triplet_order_;
  memory::Temporary<std::int32_t> block_starts_;
};

namespace detail {

/// Prefetches the values and columns of the blocks `lookahead` blocks past [begin, end), a cache
/// line at a time: a row of a product asks for the lines a later row will read, which the
/// hardware prefetcher alone leaves a core short of memory bandwidth on (measured on the CPU
/// backend). Nothing on the GPU.
template <int B>
AFEM_HOST_DEVICE void prefetch_ahead(const BsrView<B>& m, std::int32_t begin, std::int32_t end) {
#if !defined(__CUDA_ARCH__)
  constexpr std::size_t lookahead = 512;
  constexpr std::size_t line = 64;
  const std::size_t blocks = m.columns.size();
  const auto first = static_cast<std::size_t>(begin) + lookahead;
  const std::size_t ahead_end = static_cast<std::size_t>(end) + lookahead;
  const std::size_t last = ahead_end < blocks ? ahead_end : blocks;
  if (first >= last) {
    return;
  }
  const auto* values = reinterpret_cast<const char*>(m.values.data());
  for (std::size_t byte = first * sizeof(double) * B * B; byte < last * sizeof(double) * B * B;
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
  (void)begin;
  (void)end;
#endif
}

/// Adds block k's product with x to the B sums of `lane`.
template <int B>
AFEM_HOST_DEVICE void add_block_product(const BsrView<B>& m, memory::ArrayView<const double> x,
                                        std::size_t k, double* lane) {
  const auto col = static_cast<std::size_t>(m.columns[k]);
  const double* block = &m.values[k * B * B];
  for (int i = 0; i < B; ++i) {
    for (int j = 0; j < B; ++j) {
      lane[i] += block[i * B + j] * x[col * B + static_cast<std::size_t>(j)];
    }
  }
}

/// The B entries of (A x) for the blocks [begin, end) of one block row. The blocks are summed in
/// `lanes` interleaved partial sums (block k into lane k % lanes, the last few into lane 0, the
/// lanes added pairwise at the end): one running sum would make every block wait for the previous
/// one's addition, which bounds a row by the adder's latency rather than by memory. The order is
/// fixed, so the result does not depend on the thread count.
template <int B>
AFEM_HOST_DEVICE void row_product(const BsrView<B>& m, memory::ArrayView<const double> x,
                                  std::size_t begin, std::size_t end, double* sum) {
  constexpr int lanes = B == 1 ? 4 : 2;
  double lane[lanes][B] = {};
  std::size_t k = begin;
  for (; k + lanes <= end; k += lanes) {
    for (int l = 0; l < lanes; ++l) {
      add_block_product<B>(m, x, k + static_cast<std::size_t>(l), lane[l]);
    }
  }
  for (; k < end; ++k) {
    add_block_product<B>(m, x, k, lane[0]);
  }
  for (int i = 0; i < B; ++i) {
    if constexpr (lanes == 4) {
      sum[i] = (lane[0][i] + lane[1][i]) + (lane[2][i] + lane[3][i]);
    } else {
      sum[i] = lane[0][i] + lane[1][i];
    }
  }
}

}  // namespace detail

/// y = A x (alpha = 1, beta = 0) or y = alpha A x + beta y. Runs on the matrix's backend; returns
/// when y is written.
template <int B>
void spmv(const BsrMatrix<B>& a, memory::ArrayView<const double> x, memory::ArrayView<double> y,
          memory::Arena& scratch, double alpha = 1.0, double beta = 0.0) {
  detail::check_size(x.size(), a.columns(), "spmv (x)");
  detail::check_size(y.size(), a.rows(), "spmv (y)");
  auto policy = memory::arena_policy(scratch, "BsrMatrix.thrust");
  const BsrView<B> m = a.view();
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), m.block_rows,
                     [=] AFEM_HOST_DEVICE(std::int32_t r) {
                       const auto row = static_cast<std::size_t>(r);
                       const auto begin = static_cast<std::size_t>(m.offsets[row]);
                       const auto end = static_cast<std::size_t>(m.offsets[row + 1]);
                       detail::prefetch_ahead(m, m.offsets[row], m.offsets[row + 1]);
                       double sum[B];
                       detail::row_product<B>(m, x, begin, end, sum);
                       for (int i = 0; i < B; ++i) {
                         double& out = y[row * B + static_cast<std::size_t>(i)];
                         out = beta == 0.0 ? alpha * sum[i] : alpha * sum[i] + beta * out;
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
  const BsrView<B> m = a.view();
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

/// A^T as a new matrix in `a`'s pool (blocks transposed too).
template <int B>
BsrMatrix<B> transpose(const BsrMatrix<B>& a, memory::Arena& scratch) {
  auto policy = memory::arena_policy(scratch, "BsrMatrix.thrust");
  const BsrView<B> m = a.view();
  const auto n = static_cast<std::size_t>(a.block_count());
  memory::Pool& pool = a.pool();
  auto offsets = memory::borrow_temporary<std::int32_t>(
      pool, static_cast<std::size_t>(m.block_columns) + 1, "BsrMatrix.offsets");
  auto columns = memory::borrow_temporary<std::int32_t>(pool, n, "BsrMatrix.columns");
  auto values = memory::borrow_temporary<double>(pool, n * B * B, "BsrMatrix.values");
  auto keys = memory::borrow_temporary<std::int64_t>(scratch, n, "BsrMatrix.transpose_keys");
  auto order = memory::borrow_temporary<std::int32_t>(scratch, n, "BsrMatrix.transpose_order");
  const memory::ArrayView<std::int64_t> key = keys.view();
  const memory::ArrayView<std::int32_t> index = order.view();
  const memory::ArrayView<std::int32_t> out_offsets = offsets.view();
  const memory::ArrayView<std::int32_t> out_columns = columns.view();
  const memory::ArrayView<double> out_values = values.view();
  const std::int64_t rows = m.block_rows;
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), m.block_rows,
                     [=] AFEM_HOST_DEVICE(std::int32_t r) {
                       const auto row = static_cast<std::size_t>(r);
                       for (auto k = m.offsets[row]; k < m.offsets[row + 1]; ++k) {
                         const auto s = static_cast<std::size_t>(k);
                         key[s] = static_cast<std::int64_t>(m.columns[s]) * rows + r;
                         index[s] = k;
                       }
                     });
  memory::radix_sort_by_key(key, index, scratch);
  thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), n,
                     [=] AFEM_HOST_DEVICE(std::size_t i) {
                       out_columns[i] = static_cast<std::int32_t>(key[i] % rows);
                       const auto from = static_cast<std::size_t>(index[i]) * B * B;
                       for (int p = 0; p < B; ++p) {
                         for (int q = 0; q < B; ++q) {
                           out_values[i * B * B + static_cast<std::size_t>(p * B + q)] =
                               m.values[from + static_cast<std::size_t>(q * B + p)];
                         }
                       }
                     });
  const auto block_count = static_cast<std::int32_t>(n);
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), m.block_columns + 1,
                     [=] AFEM_HOST_DEVICE(std::int32_t c) {
                       // First block whose key is in row c of the transpose or later.
                       const std::int64_t first = static_cast<std::int64_t>(c) * rows;
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
                       out_offsets[static_cast<std::size_t>(c)] = lo;
                     });
  BsrMatrix<B> result(pool);
  result.set_pattern(m.block_columns, m.block_rows, std::move(offsets), std::move(columns),
                     std::move(values));
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
