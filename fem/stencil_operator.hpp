#pragma once

/// @file
/// StencilOperator: a scalar BsrMatrix on the vertices of a 2D or 3D grid (numbered x fastest, as
/// the Q1 nodes of Grid2D/Grid3D and every geometric multigrid level) applied through the stencil
/// its interior rows share. A constant-coefficient form on a uniform grid (a Laplacian, a mass, a
/// Galerkin coarse operator) gives every vertex away from the boundary the same 3^D entries at the
/// same offsets; such rows are computed from the vector alone, with the entries held as 3^D
/// constants, and every other row (the boundary, a Dirichlet row, a varying coefficient) from the
/// matrix. A row that repeats the row before it along x (the same entries, one column further: a
/// run of rows that share a coefficient, as the fluid or the empty cells of a pressure Laplacian
/// whose 5 or 7 entries are no 3^D stencil) is computed from the run's first row the same way.
/// The product reads a few bytes per row instead of the row's entries and columns, and is bit for
/// bit the matrix's spmv(): each row is summed in the order and the partial sums of the matrix's
/// row product.

#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform_reduce.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include <Eigen/Core>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/detail/check_size.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::fem {

namespace detail {

/// The most entries a stencil row holds (3^3).
inline constexpr int max_stencil_taps = 27;

/// What the stencil kernels read: the vertices per axis, the stencil's column offsets (increasing)
/// and entries, and which rows use it.
struct StencilRows {
  std::int64_t vertices[3] = {1, 1, 1};
  std::int64_t offsets[max_stencil_taps] = {};
  double values[max_stencil_taps] = {};
  memory::ArrayView<const std::uint8_t> flags;
};

/// Whether two doubles have the same bits (a stencil row must sum exactly what its matrix row
/// sums: 0.0 and -0.0 differ).
AFEM_HOST_DEVICE inline bool same_bits(double a, double b) {
  std::uint64_t x = 0;
  std::uint64_t y = 0;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
}

/// What a row's flag says: computed from the matrix (`matrix_row`), from the stencil
/// (`stencil_row`), or from the run of rows it continues (`repeated_row`: it holds the row before
/// it shifted by one column, the same entries bit for bit, so it repeats the run's first row).
inline constexpr std::uint8_t matrix_row = 0;
inline constexpr std::uint8_t stencil_row = 1;
inline constexpr std::uint8_t repeated_row = 2;

/// How many rows FlagStencilRows flagged as stencil rows and as repeated rows.
struct FlaggedRows {
  std::int64_t stencil = 0;
  std::int64_t repeated = 0;
};
struct AddFlaggedRows {
  AFEM_HOST_DEVICE FlaggedRows operator()(const FlaggedRows& a, const FlaggedRows& b) const {
    return {a.stencil + b.stencil, a.repeated + b.repeated};
  }
};

/// Flags the rows of one line of vertices along x: `stencil_row` where a row lies one vertex or
/// more inside the grid and holds exactly the stencil (the same columns at the same offsets, the
/// same entries bit for bit; none when `has_stencil` is false), else `repeated_row` where it holds
/// the row before it in the line shifted by one column (at most max_stencil_taps entries, the
/// same bits) and that row is no stencil row, else `matrix_row`.
template <int D>
struct FlagStencilRows {
  static constexpr int taps = D == 2 ? 9 : 27;
  StencilRows rows;
  ConstBsrView<1> m;
  memory::ArrayView<std::uint8_t> flags;
  bool has_stencil = false;
  AFEM_HOST_DEVICE FlaggedRows operator()(std::int64_t line) const {
    const std::int64_t n = rows.vertices[0];
    const std::int64_t j = line % rows.vertices[1];
    const std::int64_t k = line / rows.vertices[1];
    const bool inner_line = has_stencil && j >= 1 && j + 1 < rows.vertices[1] &&
                            (D == 2 || (k >= 1 && k + 1 < rows.vertices[2]));
    FlaggedRows found;
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t row = line * n + i;
      const auto at = static_cast<std::size_t>(row);
      const auto begin = static_cast<std::int64_t>(m.offsets[at]);
      const auto length = static_cast<std::int64_t>(m.offsets[at + 1]) - begin;
      bool same = inner_line && i >= 1 && i + 1 < n && length == taps;
      for (int t = 0; same && t < taps; ++t) {
        const auto entry = static_cast<std::size_t>(begin + t);
        same =
            m.columns[entry] == row + rows.offsets[t] && same_bits(m.values[entry], rows.values[t]);
      }
      const auto before = static_cast<std::int64_t>(m.offsets[at - (i >= 1 ? 1 : 0)]);
      bool repeat = !same && i >= 1 && flags[at - 1] != stencil_row && length > 0 &&
                    length <= max_stencil_taps && begin - before == length;
      for (std::int64_t t = 0; repeat && t < length; ++t) {
        const auto entry = static_cast<std::size_t>(begin + t);
        const auto previous = static_cast<std::size_t>(before + t);
        repeat = m.columns[entry] == m.columns[previous] + 1 &&
                 same_bits(m.values[entry], m.values[previous]);
      }
      flags[at] = same ? stencil_row : repeat ? repeated_row : matrix_row;
      found.stencil += same ? 1 : 0;
      found.repeated += repeat ? 1 : 0;
    }
    return found;
  }
};

/// y = alpha A x + beta y (y = alpha A x when beta is 0) on the rows of one line of vertices along
/// x: runs of stencil rows from the stencil, the others from the matrix, each sum as
/// row_product<1> forms it (four interleaved partial sums, the last entries into the first).
template <int D>
struct StencilLineProduct {
  static constexpr int taps = D == 2 ? 9 : 27;
  static constexpr int lanes = 4;
  StencilRows rows;
  ConstBsrView<1> m;
  memory::ArrayView<const double> x;
  memory::ArrayView<double> y;
  double alpha = 1.0;
  double beta = 0.0;

  /// The `count` stencil rows whose x and y start at `x_at` and `y_at` (which do not overlap, as
  /// in every product). The stencil is copied to locals first, so that no store to y can be taken
  /// to change it and the rows vectorise.
  AFEM_HOST_DEVICE void stencil_run(const double* __restrict__ x_at, double* __restrict__ y_at,
                                    std::size_t count) const {
    double value[taps];
    for (int k = 0; k < taps; ++k) {
      value[k] = rows.values[k];
    }
    // Tap K sits at (K % 3 - 1) + line (K / 3 % 3 - 1) + plane (K / 9 - 1): addresses affine in
    // the row, so the loop over rows vectorises with plain loads.
    const auto line = static_cast<std::ptrdiff_t>(rows.vertices[0]);
    const auto plane = static_cast<std::ptrdiff_t>(rows.vertices[0] * rows.vertices[1]);
    const double a = alpha;
    const double b = beta;
    if (b == 0.0) {
      for (std::size_t r = 0; r < count; ++r) {
        y_at[r] = a * row_sum(value, line, plane, x_at + r);
      }
    } else {
      for (std::size_t r = 0; r < count; ++r) {
        y_at[r] = a * row_sum(value, line, plane, x_at + r) + b * y_at[r];
      }
    }
  }
  AFEM_HOST_DEVICE static AFEM_INLINE double row_sum(const double* value, std::ptrdiff_t line,
                                                     std::ptrdiff_t plane, const double* at) {
    double lane[lanes] = {};
    add_taps(lane, value, line, plane, at, std::make_index_sequence<taps>{});
    return (lane[0] + lane[1]) + (lane[2] + lane[3]);
  }
  /// Entry K into partial sum K % lanes, the last taps % lanes into the first, in order of K
  /// (unrolled at compile time).
  template <std::size_t... K>
  AFEM_HOST_DEVICE static AFEM_INLINE void add_taps(double (&lane)[lanes], const double* value,
                                                    std::ptrdiff_t line, std::ptrdiff_t plane,
                                                    const double* at,
                                                    std::index_sequence<K...> /*taps*/) {
    constexpr std::size_t grouped = std::size_t{taps} / lanes * lanes;
    ((lane[K < grouped ? K % lanes : 0] +=
      value[K] * at[static_cast<std::ptrdiff_t>(K % 3) - 1 +
                    line * (static_cast<std::ptrdiff_t>(K / 3 % 3) - 1) +
                    plane * (static_cast<std::ptrdiff_t>(K / 9) - (D == 3 ? 1 : 0))]),
     ...);
  }
  AFEM_HOST_DEVICE void store(std::size_t i, double sum) const {
    y[i] = beta == 0.0 ? alpha * sum : alpha * sum + beta * y[i];
  }
  /// Asks for the entries and columns of `row` ahead of their use (forced inline, see
  /// prefetch_blocks).
  AFEM_HOST_DEVICE AFEM_INLINE void prefetch_row(std::size_t row) const {
    prefetch_blocks(m, static_cast<std::size_t>(m.offsets[row]),
                    static_cast<std::size_t>(m.offsets[row + 1]));
  }
  AFEM_HOST_DEVICE void operator()(std::int64_t line) const {
    const std::int64_t n = rows.vertices[0];
    const auto first = static_cast<std::size_t>(line * n);
    const auto last = first + static_cast<std::size_t>(n);
    // The rows at both ends of a line are at the boundary and come from the matrix: their
    // entries lie a line's worth of rows apart, beyond the hardware prefetcher's reach, so the
    // next line's are asked for now.
    if (last + static_cast<std::size_t>(n) <= rows.flags.size()) {
      prefetch_row(last);
      prefetch_row(last + static_cast<std::size_t>(n) - 1);
    }
    std::size_t i = first;
    while (i < last) {
      std::size_t end = i + 1;
      if (rows.flags[i] == stencil_row) {
        while (end < last && rows.flags[end] == stencil_row) {
          ++end;
        }
        stencil_run(x.data() + i, y.data() + i, end - i);
      } else {
        double sum = 0.0;
        row_product<1, 1>(m, x, static_cast<std::size_t>(m.offsets[i]),
                          static_cast<std::size_t>(m.offsets[i + 1]), &sum);
        store(i, sum);
        while (end < last && rows.flags[end] == repeated_row) {
          ++end;
        }
        if (end > i + 1) {
          repeated_run(i, end);
        }
      }
      i = end;
    }
  }

  /// Rows head + 1 to end - 1, each the head row shifted by its distance from it: the head's
  /// entries and relative columns are copied to locals, and the rows are summed 8 or 4 at a time,
  /// entry by entry, into the partial sums row_product<1> would use (so each sum has its bits).
  AFEM_HOST_DEVICE void repeated_run(std::size_t head, std::size_t end) const {
    const auto begin = static_cast<std::size_t>(m.offsets[head]);
    const auto length = static_cast<int>(m.offsets[head + 1] - m.offsets[head]);
    double value[max_stencil_taps];
    std::ptrdiff_t offset[max_stencil_taps];
    for (int t = 0; t < length; ++t) {
      value[t] = m.values[begin + static_cast<std::size_t>(t)];
      offset[t] = static_cast<std::ptrdiff_t>(m.columns[begin + static_cast<std::size_t>(t)]) -
                  static_cast<std::ptrdiff_t>(head);
    }
    std::size_t row = head + 1;
    for (; row + 8 <= end; row += 8) {
      repeated_rows<8>(value, offset, length, row);
    }
    if (row + 4 <= end) {
      repeated_rows<4>(value, offset, length, row);
      row += 4;
    }
    // The last few rows from the matrix: as single rows the compiler may vectorise the product
    // across the partial sums and leave it unfused, which a row product does not.
    for (; row < end; ++row) {
      double sum = 0.0;
      row_product<1, 1>(m, x, static_cast<std::size_t>(m.offsets[row]),
                        static_cast<std::size_t>(m.offsets[row + 1]), &sum);
      store(row, sum);
    }
  }
  /// Rows `first` to first + W - 1 of a repeated run (see repeated_run), as W-wide vectors, so
  /// that each row's partial sums are the row product's (a vectorisation across the partial sums
  /// would leave the products unfused).
  template <int W>
  AFEM_HOST_DEVICE AFEM_INLINE void repeated_rows(const double* value, const std::ptrdiff_t* offset,
                                                  int length, std::size_t first) const {
    using Rows = Eigen::Array<double, W, 1>;
    using Column = Eigen::Map<const Rows>;
    Rows lane0 = Rows::Zero();
    Rows lane1 = Rows::Zero();
    Rows lane2 = Rows::Zero();
    Rows lane3 = Rows::Zero();
    const double* at = x.data() + first;
    int t = 0;
    for (; t + lanes <= length; t += lanes) {
      lane0 += value[t] * Column(at + offset[t]);
      lane1 += value[t + 1] * Column(at + offset[t + 1]);
      lane2 += value[t + 2] * Column(at + offset[t + 2]);
      lane3 += value[t + 3] * Column(at + offset[t + 3]);
    }
    for (; t < length; ++t) {
      lane0 += value[t] * Column(at + offset[t]);
    }
    const Rows sum = (lane0 + lane1) + (lane2 + lane3);
    for (int w = 0; w < W; ++w) {
      store(first + static_cast<std::size_t>(w), sum[w]);
    }
  }
};

}  // namespace detail

/// A scalar BsrMatrix on the vertices of a grid with `cells` cells per axis (2 or 3 axes; vertex
/// (i, j, k) is row i + (cells_x + 1) (j + (cells_y + 1) k)) as an operator whose interior rows
/// that hold the stencil of the centre vertex are applied from that stencil, and the rows that
/// repeat the row before them from that row's entries (see the file comment); apply() gives bit
/// for bit spmv() of the matrix. When fewer than half the rows are stencil or repeated rows, and
/// on the CUDA backend (where a thread per row reads the matrix in coalesced loads), apply() is
/// spmv() itself. Reads the matrix's values at construction and at rebuild(): rebuild after they
/// change (apply() refuses a matrix whose pattern changed since). The matrix must outlive it. Owns
/// one flag per row ("StencilOperator.flags") in the matrix's pool until destroyed or rebuilt.
class StencilOperator {
public:
  /// Finds the stencil rows of `a` on a grid of `cells` cells per axis. Throws afem::Error when
  /// `a` is not square or has another number of rows than the grid has vertices.
  template <std::size_t D>
  StencilOperator(const BsrMatrix<1>& a, const std::array<std::int32_t, D>& cells,
                  memory::Arena& scratch)
      : a_(&a) {
    rebuild(a, cells, scratch);
  }
  template <std::size_t D>
  StencilOperator(const BsrMatrix<1>&& a, const std::array<std::int32_t, D>& cells,
                  memory::Arena& scratch) = delete;

  /// Finds the stencil rows again (new values, or another matrix of the same grid); on an error
  /// the operator is left as it was.
  template <std::size_t D>
  void rebuild(const BsrMatrix<1>& a, const std::array<std::int32_t, D>& cells,
               memory::Arena& scratch) {
    static_assert(D == 2 || D == 3, "StencilOperator: grids of 2 or 3 axes");
    constexpr int taps = D == 2 ? 9 : 27;
    AFEM_EXPECTS(a.block_rows() == a.block_columns(),
                 "StencilOperator: the matrix is " + std::to_string(a.rows()) + " x " +
                     std::to_string(a.columns()) + "; it must be square");
    detail::StencilRows rows;
    std::int64_t vertices = 1;
    for (std::size_t d = 0; d < D; ++d) {
      AFEM_EXPECTS(cells[d] >= 1,
                   "StencilOperator: a grid axis has " + std::to_string(cells[d]) + " cells");
      rows.vertices[d] = std::int64_t{cells[d]} + 1;
      vertices *= rows.vertices[d];
    }
    AFEM_EXPECTS(vertices == a.rows(), "StencilOperator: the matrix has " +
                                           std::to_string(a.rows()) + " rows and the grid " +
                                           std::to_string(vertices) + " vertices");
    // Offsets of the 3^D neighbours, increasing (the last axis varies slowest).
    int k = 0;
    for (int e2 = D == 3 ? -1 : 0; e2 <= (D == 3 ? 1 : 0); ++e2) {
      for (int e1 = -1; e1 <= 1; ++e1) {
        for (int e0 = -1; e0 <= 1; ++e0) {
          rows.offsets[k++] = e0 + rows.vertices[0] * (e1 + rows.vertices[1] * e2);
        }
      }
    }
    const auto n = static_cast<std::size_t>(a.rows());
    auto flags = memory::borrow_temporary<std::uint8_t>(a.pool(), n, "StencilOperator.flags");
    const bool has_centre =
        rows.vertices[0] >= 3 && rows.vertices[1] >= 3 && (D == 2 || rows.vertices[2] >= 3);
    const bool has_stencil = has_centre && reference_row<taps>(a, rows, scratch);
    auto policy = memory::arena_policy(scratch, "StencilOperator.thrust");
    const std::int64_t lines = a.rows() / rows.vertices[0];
    const detail::FlaggedRows found = thrust::transform_reduce(
        policy, thrust::counting_iterator<std::int64_t>(0),
        thrust::counting_iterator<std::int64_t>(lines),
        detail::FlagStencilRows<static_cast<int>(D)>{rows, a.view(), flags.view(), has_stencil},
        detail::FlaggedRows{}, detail::AddFlaggedRows{});
    a_ = &a;
    pattern_ = a.pattern_id();
    dimension_ = static_cast<int>(D);
    stencil_rows_ = has_stencil ? found.stencil : 0;
    repeated_rows_ = found.repeated;
    memory::replace_owned(flags_, std::move(flags));
    rows_ = rows;
    rows_.flags = flags_.view();
  }

  [[nodiscard]] std::int64_t rows() const { return a_->rows(); }
  [[nodiscard]] std::int64_t columns() const { return a_->columns(); }
  /// How many rows are applied from the stencil (0 when the centre vertex's row is not a 3^D
  /// stencil, or the grid has fewer than 3 vertices along an axis).
  [[nodiscard]] std::int64_t stencil_rows() const { return stencil_rows_; }
  /// How many rows are applied as repeats of the row before them (the same entries one column
  /// further; the rows of a run along x that share a coefficient, where no stencil is).
  [[nodiscard]] std::int64_t repeated_rows() const { return repeated_rows_; }
  [[nodiscard]] const BsrMatrix<1>& matrix() const { return *a_; }
  /// One byte per row: detail::stencil_row (1) where the row holds the stencil, repeated_row (2)
  /// where it repeats the row before it, matrix_row (0) elsewhere (apply() computes each row so,
  /// unless it is spmv() itself).
  [[nodiscard]] memory::ArrayView<const std::uint8_t> stencil_flags() const {
    return flags_.view();
  }
  /// The stencil's 3^D entries in increasing column order (x fastest); meaningful when
  /// stencil_rows() > 0.
  [[nodiscard]] std::span<const double> stencil() const {
    return {rows_.values, static_cast<std::size_t>(dimension_ == 2 ? 9 : 27)};
  }

  /// y = A x (alpha = 1, beta = 0) or y = alpha A x + beta y, bit for bit spmv(matrix(), ...).
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y, memory::Arena& scratch,
             double alpha = 1.0, double beta = 0.0) const {
    AFEM_EXPECTS(a_->pattern_id() == pattern_,
                 "StencilOperator::apply: the matrix has another pattern than when its stencil "
                 "rows were found; rebuild the operator");
    detail::check_size(x.size(), a_->columns(), "StencilOperator::apply (x)");
    detail::check_size(y.size(), a_->rows(), "StencilOperator::apply (y)");
    if (has_cuda || 2 * (stencil_rows_ + repeated_rows_) < a_->rows()) {
      spmv(*a_, x, y, scratch, alpha, beta);
      return;
    }
    auto policy = memory::arena_policy(scratch, "StencilOperator.thrust");
    const std::int64_t lines = a_->rows() / rows_.vertices[0];
    if (dimension_ == 2) {
      thrust::for_each_n(policy, thrust::counting_iterator<std::int64_t>(0), lines,
                         detail::StencilLineProduct<2>{rows_, a_->view(), x, y, alpha, beta});
    } else {
      thrust::for_each_n(policy, thrust::counting_iterator<std::int64_t>(0), lines,
                         detail::StencilLineProduct<3>{rows_, a_->view(), x, y, alpha, beta});
    }
  }
  /// The rows where keep(i) is true, from the matrix (spmv_where).
  template <class Keep>
  void apply_where(Keep keep, memory::ArrayView<const double> x, memory::ArrayView<double> y,
                   memory::Arena& scratch) const {
    spmv_where(*a_, keep, x, y, scratch);
  }
  /// The matrix's diagonal.
  void diagonal(memory::ArrayView<double> d, memory::Arena& scratch) const {
    detail::check_size(d.size(), a_->rows(), "StencilOperator::diagonal");
    block_diagonal(*a_, d, scratch);
  }

private:
  /// Reads the centre vertex's row into rows.values; false unless its columns are the centre
  /// plus rows.offsets.
  template <int Taps>
  static bool reference_row(const BsrMatrix<1>& a, detail::StencilRows& rows,
                            memory::Arena& scratch) {
    std::int64_t centre = 0;
    for (int d = 2; d >= 0; --d) {
      centre = centre * rows.vertices[d] + rows.vertices[d] / 2;
    }
    const ConstBsrView<1> m = a.view();
    std::array<std::int32_t, 2> range{};
    memory::copy_to_host(std::span<std::int32_t>(range),
                         m.offsets.subview(static_cast<std::size_t>(centre), 2), scratch.stream());
    if (range[1] - range[0] != Taps) {
      return false;
    }
    std::array<std::int32_t, Taps> columns{};
    std::array<double, Taps> values{};
    const auto begin = static_cast<std::size_t>(range[0]);
    memory::copy_to_host(std::span<std::int32_t>(columns), m.columns.subview(begin, Taps),
                         scratch.stream());
    memory::copy_to_host(std::span<double>(values), m.values.subview(begin, Taps),
                         scratch.stream());
    for (int k = 0; k < Taps; ++k) {
      if (columns[static_cast<std::size_t>(k)] != centre + rows.offsets[k]) {
        return false;
      }
      rows.values[k] = values[static_cast<std::size_t>(k)];
    }
    return true;
  }

  const BsrMatrix<1>* a_;
  std::uint64_t pattern_ = 0;
  int dimension_ = 2;
  std::int64_t stencil_rows_ = 0;
  std::int64_t repeated_rows_ = 0;
  detail::StencilRows rows_;
  memory::Temporary<std::uint8_t> flags_;
};

}  // namespace afem::fem
