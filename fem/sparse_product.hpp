#pragma once

/// @file
/// sparse_product: the sparse matrix product C = A diag(w) B of two BsrMatrix, pattern and values,
/// into a new matrix in a pool (Galerkin coarse operators P^T A P, Schur complements B W B^T).
/// CPU: row by row (Gustavson), a column table per part of the rows; CUDA: every block product
/// expanded, sorted by (row, column) and summed. Both sum the products of a block in the same
/// order (A's blocks of the row in column order, then B's), so the result does not depend on the
/// backend's thread count.

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/scan.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/parallel_for.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/radix_sort.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::fem {

namespace detail {

/// c += a diag(w_k) b for one R x K block a and K x C block b (w: K weights, or null for 1).
template <int R, int K, int C>
AFEM_HOST_DEVICE void add_weighted_block_product(const double* a, const double* w, const double* b,
                                                 double* c) {
  for (int k = 0; k < K; ++k) {
    const double wk = w != nullptr ? w[k] : 1.0;
    if (wk == 0.0) {
      continue;
    }
    for (int i = 0; i < R; ++i) {
      const double aik = a[i * K + k] * wk;
      for (int j = 0; j < C; ++j) {
        c[i * C + j] += aik * b[k * C + j];
      }
    }
  }
}

/// Rows per part of the CPU product below which it stays on one thread.
inline constexpr std::size_t product_row_grain = 4096;

}  // namespace detail

/// C = A diag(w) B: (R x K blocks) times (K x C blocks), w one weight per scalar column of A (an
/// empty view for none). C's pattern holds every block that some product reaches, zeros included,
/// its columns increasing in each row. Owns nothing: C's arrays ("BsrMatrix.*") are in `pool`,
/// scratch comes from `scratch` and is given back. Throws afem::Error when the sizes do not chain
/// and afem::OutOfMemory when C or the scratch does not fit (nothing is left half-built).
template <int R, int K, int C>
BsrMatrix<R, C> sparse_product(const BsrMatrix<R, K>& a, memory::ArrayView<const double> weight,
                               const BsrMatrix<K, C>& b, memory::Pool& pool,
                               memory::Arena& scratch) {
  AFEM_EXPECTS(a.block_columns() == b.block_rows(),
               "sparse_product: the left matrix has " + std::to_string(a.columns()) +
                   " columns and the right one " + std::to_string(b.rows()) + " rows");
  AFEM_EXPECTS(weight.empty() || weight.size() == static_cast<std::size_t>(a.columns()),
               "sparse_product: " + std::to_string(weight.size()) + " weights for " +
                   std::to_string(a.columns()) + " columns");
  const ConstBsrView<R, K> av = a.view();
  const ConstBsrView<K, C> bv = b.view();
  const auto rows = static_cast<std::size_t>(a.block_rows());
  const auto cols = static_cast<std::size_t>(b.block_columns());
  const double* const w = weight.empty() ? nullptr : weight.data();
  constexpr int block = R * C;
  auto offsets = memory::borrow_temporary<std::int32_t>(pool, rows + 1, "BsrMatrix.offsets");
  const memory::ArrayView<std::int32_t> off = offsets.view();
#if !AFEM_HAS_CUDA
  std::size_t parts = 1;
  if (rows >= 2 * detail::product_row_grain) {
    parts = std::min(static_cast<std::size_t>(memory::parallel_team_size()),
                     rows / detail::product_row_grain);
  }
  auto marks = memory::borrow_temporary<std::int32_t>(
      scratch, parts * std::max<std::size_t>(cols, 1), "sparse_product.marks");
  std::int32_t* const all_marks = marks.data();
  auto part_rows = [&](std::size_t part) {
    return std::pair{rows * part / parts, rows * (part + 1) / parts};
  };
  // Blocks per row: a column counts once per row (mark[j] holds the last row that reached j).
  memory::parallel_for(parts, 1, [&](std::size_t part) {
    std::int32_t* mark = all_marks + part * cols;
    std::fill(mark, mark + cols, -1);
    const auto [first, last] = part_rows(part);
    for (std::size_t i = first; i < last; ++i) {
      std::int32_t count = 0;
      for (auto ka = av.offsets[i]; ka < av.offsets[i + 1]; ++ka) {
        const auto k = static_cast<std::size_t>(av.columns[static_cast<std::size_t>(ka)]);
        for (auto kb = bv.offsets[k]; kb < bv.offsets[k + 1]; ++kb) {
          const auto j = static_cast<std::size_t>(bv.columns[static_cast<std::size_t>(kb)]);
          if (mark[j] != static_cast<std::int32_t>(i)) {
            mark[j] = static_cast<std::int32_t>(i);
            ++count;
          }
        }
      }
      off[i + 1] = count;
    }
  });
  off[0] = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    AFEM_EXPECTS(off[i + 1] <= std::numeric_limits<std::int32_t>::max() - off[i],
                 "sparse_product: the product has more than 2^31 blocks");
    off[i + 1] += off[i];
  }
  const auto blocks = static_cast<std::size_t>(off[rows]);
  auto columns = memory::borrow_temporary<std::int32_t>(pool, blocks, "BsrMatrix.columns");
  auto values = memory::borrow_temporary<double>(pool, blocks * block, "BsrMatrix.values");
  const memory::ArrayView<std::int32_t> c = columns.view();
  const memory::ArrayView<double> v = values.view();
  // The row's columns, sorted; then mark[j] is j's place in the row while its products are summed.
  memory::parallel_for(parts, 1, [&](std::size_t part) {
    std::int32_t* mark = all_marks + part * cols;
    std::fill(mark, mark + cols, -1);
    const auto [first, last] = part_rows(part);
    for (std::size_t i = first; i < last; ++i) {
      const auto begin = static_cast<std::size_t>(off[i]);
      std::size_t end = begin;
      for (auto ka = av.offsets[i]; ka < av.offsets[i + 1]; ++ka) {
        const auto k = static_cast<std::size_t>(av.columns[static_cast<std::size_t>(ka)]);
        for (auto kb = bv.offsets[k]; kb < bv.offsets[k + 1]; ++kb) {
          const std::int32_t j = bv.columns[static_cast<std::size_t>(kb)];
          if (mark[static_cast<std::size_t>(j)] != -2) {
            mark[static_cast<std::size_t>(j)] = -2;
            c[end++] = j;
          }
        }
      }
      std::sort(c.data() + begin, c.data() + end);
      for (std::size_t p = begin; p < end; ++p) {
        mark[static_cast<std::size_t>(c[p])] = static_cast<std::int32_t>(p);
      }
      std::fill(v.data() + begin * block, v.data() + end * block, 0.0);
      for (auto ka = av.offsets[i]; ka < av.offsets[i + 1]; ++ka) {
        const auto k = static_cast<std::size_t>(av.columns[static_cast<std::size_t>(ka)]);
        for (auto kb = bv.offsets[k]; kb < bv.offsets[k + 1]; ++kb) {
          const auto p = static_cast<std::size_t>(
              mark[static_cast<std::size_t>(bv.columns[static_cast<std::size_t>(kb)])]);
          detail::add_weighted_block_product<R, K, C>(
              &av.values[static_cast<std::size_t>(ka) * R * K], w != nullptr ? w + k * K : nullptr,
              &bv.values[static_cast<std::size_t>(kb) * K * C], &v[p * block]);
        }
      }
      for (std::size_t p = begin; p < end; ++p) {
        mark[static_cast<std::size_t>(c[p])] = -1;
      }
    }
  });
#else
  // Every block product expanded, in the order the CPU sums them, then a stable sort by key.
  auto policy = memory::arena_policy(scratch, "sparse_product.thrust");
  const auto count = thrust::counting_iterator<std::size_t>(0);
  auto expanded_offsets =
      memory::borrow_temporary<std::int64_t>(scratch, rows + 1, "sparse_product.expanded_offsets");
  const memory::ArrayView<std::int64_t> eo = expanded_offsets.view();
  thrust::for_each_n(policy, count, rows + 1, [=] AFEM_HOST_DEVICE(std::size_t i) {
    std::int64_t n = 0;
    if (i > 0) {
      for (auto ka = av.offsets[i - 1]; ka < av.offsets[i]; ++ka) {
        const auto k = static_cast<std::size_t>(av.columns[static_cast<std::size_t>(ka)]);
        n += bv.offsets[k + 1] - bv.offsets[k];
      }
    }
    eo[i] = n;
  });
  thrust::inclusive_scan(policy, eo.begin(), eo.end(), eo.begin());
  std::int64_t total = 0;
  memory::copy_to_host(std::span<std::int64_t>(&total, 1), eo.subview(rows, 1), scratch.stream());
  AFEM_EXPECTS(total < std::numeric_limits<std::int32_t>::max(),
               "sparse_product: more than 2^31 block products");
  const auto n = static_cast<std::size_t>(total);
  auto keys = memory::borrow_temporary<std::int64_t>(scratch, n, "sparse_product.keys");
  auto order = memory::borrow_temporary<std::int32_t>(scratch, n, "sparse_product.order");
  auto pairs = memory::borrow_temporary<std::int32_t>(scratch, 2 * n, "sparse_product.pairs");
  const memory::ArrayView<std::int64_t> key = keys.view();
  const memory::ArrayView<std::int32_t> ord = order.view();
  const memory::ArrayView<std::int32_t> pair = pairs.view();
  thrust::for_each_n(policy, count, rows, [=] AFEM_HOST_DEVICE(std::size_t i) {
    auto e = static_cast<std::size_t>(eo[i]);
    for (auto ka = av.offsets[i]; ka < av.offsets[i + 1]; ++ka) {
      const auto k = static_cast<std::size_t>(av.columns[static_cast<std::size_t>(ka)]);
      for (auto kb = bv.offsets[k]; kb < bv.offsets[k + 1]; ++kb, ++e) {
        key[e] = static_cast<std::int64_t>(i) * static_cast<std::int64_t>(cols) +
                 bv.columns[static_cast<std::size_t>(kb)];
        ord[e] = static_cast<std::int32_t>(e);
        pair[2 * e] = ka;
        pair[2 * e + 1] = kb;
      }
    }
  });
  memory::radix_sort_by_key(key, ord, scratch);
  // heads[e] = 1 where a new (row, column) starts; its inclusive scan numbers the blocks from 1.
  auto heads = memory::borrow_temporary<std::int32_t>(scratch, n + 1, "sparse_product.heads");
  const memory::ArrayView<std::int32_t> head = heads.view();
  thrust::for_each_n(policy, count, n, [=] AFEM_HOST_DEVICE(std::size_t e) {
    head[e] = e == 0 || key[e] != key[e - 1] ? 1 : 0;
  });
  thrust::inclusive_scan(policy, head.begin(), head.begin() + static_cast<std::ptrdiff_t>(n),
                         head.begin());
  std::int32_t blocks32 = 0;
  if (n > 0) {
    memory::copy_to_host(std::span<std::int32_t>(&blocks32, 1), head.subview(n - 1, 1),
                         scratch.stream());
  }
  const auto blocks = static_cast<std::size_t>(blocks32);
  auto columns = memory::borrow_temporary<std::int32_t>(pool, blocks, "BsrMatrix.columns");
  auto values = memory::borrow_temporary<double>(pool, blocks * block, "BsrMatrix.values");
  auto starts =
      memory::borrow_temporary<std::int32_t>(scratch, blocks + 1, "sparse_product.starts");
  const memory::ArrayView<std::int32_t> c = columns.view();
  const memory::ArrayView<double> v = values.view();
  const memory::ArrayView<std::int32_t> start = starts.view();
  thrust::for_each_n(policy, count, n, [=] AFEM_HOST_DEVICE(std::size_t e) {
    if (e == 0 || key[e] != key[e - 1]) {
      const auto b = static_cast<std::size_t>(head[e] - 1);
      start[b] = static_cast<std::int32_t>(e);
      c[b] = static_cast<std::int32_t>(key[e] % static_cast<std::int64_t>(cols));
    }
  });
  thrust::for_each_n(policy, count, 1, [=] AFEM_HOST_DEVICE(std::size_t) {
    start[blocks] = static_cast<std::int32_t>(n);
  });
  thrust::for_each_n(policy, count, blocks, [=] AFEM_HOST_DEVICE(std::size_t b) {
    double* out = &v[b * block];
    for (int q = 0; q < block; ++q) {
      out[q] = 0.0;
    }
    for (auto e = start[b]; e < start[b + 1]; ++e) {
      const auto o = static_cast<std::size_t>(ord[static_cast<std::size_t>(e)]);
      const auto ka = static_cast<std::size_t>(pair[2 * o]);
      const auto kb = static_cast<std::size_t>(pair[2 * o + 1]);
      const auto k = static_cast<std::size_t>(av.columns[ka]);
      detail::add_weighted_block_product<R, K, C>(
          &av.values[ka * R * K], w != nullptr ? w + k * K : nullptr, &bv.values[kb * K * C], out);
    }
  });
  // Row offsets: the first block of each row (blocks of a row are consecutive, rows in order).
  thrust::for_each_n(policy, count, rows + 1, [=] AFEM_HOST_DEVICE(std::size_t i) {
    const std::int64_t first = static_cast<std::int64_t>(i) * static_cast<std::int64_t>(cols);
    std::size_t lo = 0;
    std::size_t hi = n;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (key[mid] < first) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    off[i] = lo < n ? head[lo] - 1 : static_cast<std::int32_t>(blocks);
  });
  scratch.stream().synchronize();
#endif
  BsrMatrix<R, C> product(pool);
  product.set_pattern(a.block_rows(), b.block_columns(), std::move(offsets), std::move(columns),
                      std::move(values));
  return product;
}

/// C = A B (sparse_product without weights).
template <int R, int K, int C>
BsrMatrix<R, C> sparse_product(const BsrMatrix<R, K>& a, const BsrMatrix<K, C>& b,
                               memory::Pool& pool, memory::Arena& scratch) {
  return sparse_product(a, memory::ArrayView<const double>{}, b, pool, scratch);
}

}  // namespace afem::fem
