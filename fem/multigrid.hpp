#pragma once

/// @file
/// Multigrid<B>: a multigrid V-cycle preconditioner for a symmetric positive definite BsrMatrix
/// with B x B blocks, built from prolongations P (each level's operator is the Galerkin product
/// P^T A P of the finer one). Two ways to coarsen: geometric, for a matrix on the vertices of a
/// Grid2D/Grid3D (multilinear interpolation from the grid with half the cells per axis), and
/// algebraic by smoothed aggregation, for a matrix from any mesh. Each level smooths with a
/// Chebyshev polynomial in D^-1 A (symmetric, parallel, deterministic) and the coarsest level is
/// solved exactly by a dense Cholesky factor. The cycle is symmetric and positive definite, so cg
/// takes it as its preconditioner: cg(as_operator(a), b, x, scratch, options, multigrid).

#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/scan.h>
#include <thrust/transform_reduce.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <Eigen/Eigenvalues>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/detail/grid_levels.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/sparse_product.hpp"
#include "arenafem/fem/stencil_operator.hpp"
#include "arenafem/fem/vector_ops.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::fem {

/// How a Multigrid is built and cycled.
struct MultigridOptions {
  /// Degree of the Chebyshev smoother, before and after the coarse correction.
  int smoothing_degree = 2;
  /// The smoother damps the eigenvalues of D^-1 A in [upper / smoothing_range, upper], upper
  /// 1.1 times a Lanczos bound on the largest one.
  double smoothing_range = 15.0;
  /// Coarsening stops at a level with at most this many scalar rows, solved by dense Cholesky.
  std::int64_t coarse_rows = 150;
  int max_levels = 25;
  /// Geometric multigrid only: the first coarsening keeps the vertices of each parity class (even
  /// or odd index along each axis) apart, 2^D coarse lattices, then coarsens each. For operators
  /// that couple a vertex most strongly to the vertices two cells away, such as B M^-1 B^T of a
  /// divergence B between equal-order velocity and pressure on the same vertices: their
  /// near-null space holds the 2^D parity patterns times smooth functions, which the standard
  /// coarsening cannot represent.
  bool parity_coarsening = false;
  /// The operator may be only positive semidefinite (a singular system that is consistent, as a
  /// pressure known up to a constant): the coarsest solve then gives 0 along its null directions
  /// instead of throwing SolverError. Negative pivots still throw.
  bool semidefinite = false;
  /// Smoothed aggregation: a block a_ij (i != j) is a strong connection when it is not zero and
  /// ||a_ij|| >= strength * sqrt(||a_ii|| ||a_jj||) (Frobenius norms). 0 takes every nonzero
  /// block (right for isotropic problems; Q1 hexes have couplings of 1/32 of the diagonal).
  double strength = 0.0;
};

namespace detail {

/// Fills x with a fixed hash in [-1, 1]: every eigenvector has a share, the smooth ones no more
/// than others.
inline void fill_lanczos_start(memory::ArrayView<double> x, memory::Arena& scratch) {
  auto policy = memory::arena_policy(scratch, "multigrid.thrust");
  thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), x.size(),
                     [=] AFEM_HOST_DEVICE(std::size_t i) {
                       std::uint64_t h =
                           (static_cast<std::uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ULL;
                       h ^= h >> 29;
                       h *= 0xBF58476D1CE4E5B9ULL;
                       h ^= h >> 32;
                       x[i] = static_cast<double>(h % 2001) / 1000.0 - 1.0;
                     });
}

/// w_i = root_i w_i (D^-1/2 A D^-1/2 v from A D^-1/2 v); gives w_i v_i (summed: alpha). Like
/// LanczosOrthogonalize it updates w inside the reduction, which takes each element exactly once
/// (the OpenMP dispatch's fixed blocks, CUB's reduce).
struct LanczosScaleDot {
  memory::ArrayView<double> w;
  memory::ArrayView<const double> v;
  memory::ArrayView<const double> root;
  AFEM_HOST_DEVICE double operator()(std::size_t i) const {
    w[i] *= root[i];
    return w[i] * v[i];
  }
};

/// w_i -= alpha v_i + beta p_i; gives w_i^2 (summed: beta^2).
struct LanczosOrthogonalize {
  memory::ArrayView<double> w;
  memory::ArrayView<const double> v;
  memory::ArrayView<const double> p;
  double alpha = 0.0;
  double beta = 0.0;
  AFEM_HOST_DEVICE double operator()(std::size_t i) const {
    w[i] -= alpha * v[i] + beta * p[i];
    return w[i] * w[i];
  }
};

/// Steps of the Lanczos estimate of the largest eigenvalue of D^-1 A. The bound (largest Ritz
/// value plus its residual) has settled within a few percent by the fourth step on the grids'
/// and the aggregations' levels, and the smoother's interval reaches 10 % past it; 8 steps gave
/// the same CG iterations on every problem of the tests and bench_fem but one (the MAC pressure
/// at 64^2: 11 instead of 12).
inline constexpr int lanczos_steps = 4;

/// An upper estimate of the largest eigenvalue of D^-1 A (`inverse_diagonal`: one value per scalar
/// row) by `lanczos_steps` Lanczos steps on D^-1/2 A D^-1/2 from `start` (overwritten): the
/// largest Ritz value plus its residual bound. Deterministic: the same on every thread count, and
/// from a given start the same on every call.
/// Products with A go through `stencil` when given (the same bits as `a`'s).
template <int B>
double estimate_largest_eigenvalue(const BsrMatrix<B>& a, const StencilOperator* stencil,
                                   memory::ArrayView<const double> inverse_diagonal,
                                   memory::ArrayView<double> start, memory::Arena& scratch) {
  const auto n = static_cast<std::size_t>(a.rows());
  auto us = memory::borrow_temporary<double>(scratch, n, "multigrid.lanczos_u");
  auto ws = memory::borrow_temporary<double>(scratch, n, "multigrid.lanczos_w");
  auto previous = memory::borrow_temporary<double>(scratch, n, "multigrid.lanczos_previous");
  auto roots = memory::borrow_temporary<double>(scratch, n, "multigrid.lanczos_root");
  const memory::ArrayView<double> v = start;
  const memory::ArrayView<double> u = us.view();
  const memory::ArrayView<double> w = ws.view();
  const memory::ArrayView<double> p = previous.view();
  const memory::ArrayView<double> root = roots.view();
  auto policy = memory::arena_policy(scratch, "multigrid.thrust");
  const auto count = thrust::counting_iterator<std::size_t>(0);
  const double start_norm = norm(v, scratch);
  if (!(start_norm > 0.0)) {
    return 0.0;
  }
  // Each step is the product and three passes: w = D^-1/2 w with alpha = w . v, w minus its
  // projections with beta = |w|, and v = w / beta with u = D^-1/2 v for the next product.
  const double inverse_start = 1.0 / start_norm;
  thrust::for_each_n(policy, count, n, [=] AFEM_HOST_DEVICE(std::size_t i) {
    root[i] = std::sqrt(inverse_diagonal[i]);
    p[i] = 0.0;
    v[i] *= inverse_start;
    u[i] = root[i] * v[i];
  });
  Eigen::Matrix<double, lanczos_steps, lanczos_steps> t =
      Eigen::Matrix<double, lanczos_steps, lanczos_steps>::Zero();
  double beta = 0.0;
  int steps = 0;
  for (; steps < lanczos_steps; ++steps) {
    if (stencil != nullptr) {
      stencil->apply(u, w, scratch);
    } else {
      spmv(a, u, w, scratch);
    }
    const double alpha =
        thrust::transform_reduce(policy, count, count + static_cast<std::ptrdiff_t>(n),
                                 LanczosScaleDot{w, v, root}, 0.0, thrust::plus<double>());
    t(steps, steps) = alpha;
    const double beta_before = beta;
    beta = std::sqrt(thrust::transform_reduce(policy, count, count + static_cast<std::ptrdiff_t>(n),
                                              LanczosOrthogonalize{w, v, p, alpha, beta_before},
                                              0.0, thrust::plus<double>()));
    if (steps + 1 < lanczos_steps) {
      t(steps, steps + 1) = beta;
      t(steps + 1, steps) = beta;
    }
    if (!(beta > 1e-12 * std::abs(alpha))) {
      beta = 0.0;
      ++steps;
      break;
    }
    const double inverse_beta = 1.0 / beta;
    thrust::for_each_n(policy, count, n, [=] AFEM_HOST_DEVICE(std::size_t i) {
      p[i] = v[i];
      v[i] = w[i] * inverse_beta;
      u[i] = root[i] * v[i];
    });
  }
  // Unused rows of T (a Lanczos run that ended early) repeat its first Ritz value, which
  // changes nothing of the largest one.
  for (int i = steps; i < lanczos_steps; ++i) {
    t(i, i) = t(0, 0);
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix<double, lanczos_steps, lanczos_steps>> eigen(t);
  const int top = lanczos_steps - 1;
  const double ritz = eigen.eigenvalues()[top];
  const double residual = std::abs(beta * eigen.eigenvectors()(steps - 1, top));
  return ritz + residual;
}

/// out[i] = 1 / a_ii, the diagonal block found by bisection of its row's increasing columns (0
/// without one); gives n where a_ii > 0, else i (reduced by minimum: the first bad row).
template <int B>
struct InvertScalarDiagonal {
  ConstBsrView<B> m;
  memory::ArrayView<double> out;
  std::size_t n = 0;
  AFEM_HOST_DEVICE std::size_t operator()(std::size_t i) const {
    const std::size_t row = i / B;
    auto first = static_cast<std::size_t>(m.offsets[row]);
    auto last = static_cast<std::size_t>(m.offsets[row + 1]);
    while (first < last) {
      const std::size_t middle = first + (last - first) / 2;
      if (static_cast<std::size_t>(m.columns[middle]) < row) {
        first = middle + 1;
      } else {
        last = middle;
      }
    }
    const bool found = first < static_cast<std::size_t>(m.offsets[row + 1]) &&
                       static_cast<std::size_t>(m.columns[first]) == row;
    const double value = found ? m.values[first * B * B + (i % B) * (B + 1)] : 0.0;
    out[i] = value > 0.0 ? 1.0 / value : 0.0;
    return value > 0.0 ? n : i;
  }
};

/// Writes block row r of `m` into the dense row-major n x n matrix `dense`.
template <int B>
struct ScatterToDense {
  ConstBsrView<B> m;
  memory::ArrayView<double> dense;
  std::size_t n = 0;
  AFEM_HOST_DEVICE void operator()(std::size_t r) const {
    for (auto k = m.offsets[r]; k < m.offsets[r + 1]; ++k) {
      const auto c = static_cast<std::size_t>(m.columns[static_cast<std::size_t>(k)]);
      for (int i = 0; i < B; ++i) {
        for (int j = 0; j < B; ++j) {
          dense[(r * B + static_cast<std::size_t>(i)) * n + c * B + static_cast<std::size_t>(j)] =
              m.values[static_cast<std::size_t>(k) * B * B + static_cast<std::size_t>(i * B + j)];
        }
      }
    }
  }
};

/// One Chebyshev step: d = keep d + scale D^-1 r (d not read when keep is 0), x += d.
struct ChebyshevStep {
  memory::ArrayView<double> d;
  memory::ArrayView<double> x;
  memory::ArrayView<const double> r;
  memory::ArrayView<const double> inverse_diagonal;
  double keep = 0.0;
  double scale = 0.0;
  AFEM_HOST_DEVICE void operator()(std::size_t i) const {
    const double step = (keep != 0.0 ? keep * d[i] : 0.0) + scale * inverse_diagonal[i] * r[i];
    d[i] = step;
    x[i] += step;
  }
};

/// L L^T = A for the dense symmetric n x n matrix in `l` (row-major), in place on the backend in
/// one thread; `status` gets 0, or 1 + the first column whose pivot is not positive (relative to
/// its diagonal entry).
struct DenseCholesky {
  memory::ArrayView<double> l;
  memory::ArrayView<std::int32_t> status;
  std::size_t n = 0;
  bool semidefinite = false;
  AFEM_HOST_DEVICE void operator()(std::size_t) const {
    status[0] = 0;
    for (std::size_t j = 0; j < n; ++j) {
      double pivot = l[j * n + j];
      const double reference = std::abs(pivot);
      for (std::size_t k = 0; k < j; ++k) {
        pivot -= l[j * n + k] * l[j * n + k];
      }
      if (!(pivot > 1e-11 * reference)) {
        if (!semidefinite || pivot < -1e-8 * reference || !(reference > 0.0)) {
          status[0] = static_cast<std::int32_t>(j) + 1;
          return;
        }
        // A null direction of a semidefinite operator: its component of the solution is 0.
        for (std::size_t i = j; i < n; ++i) {
          l[i * n + j] = 0.0;
        }
        continue;
      }
      const double root = std::sqrt(pivot);
      l[j * n + j] = root;
      for (std::size_t i = j + 1; i < n; ++i) {
        double sum = l[i * n + j];
        for (std::size_t k = 0; k < j; ++k) {
          sum -= l[i * n + k] * l[j * n + k];
        }
        l[i * n + j] = sum / root;
      }
    }
  }
};

/// x = (L L^T)^-1 b in one thread (the coarsest level is small).
struct DenseCholeskySolve {
  memory::ArrayView<const double> l;
  memory::ArrayView<const double> b;
  memory::ArrayView<double> x;
  std::size_t n = 0;
  AFEM_HOST_DEVICE void operator()(std::size_t) const {
    for (std::size_t i = 0; i < n; ++i) {
      double sum = b[i];
      for (std::size_t k = 0; k < i; ++k) {
        sum -= l[i * n + k] * x[k];
      }
      x[i] = l[i * n + i] != 0.0 ? sum / l[i * n + i] : 0.0;
    }
    for (std::size_t i = n; i-- > 0;) {
      double sum = x[i];
      for (std::size_t k = i + 1; k < n; ++k) {
        sum -= l[k * n + i] * x[k];
      }
      x[i] = l[i * n + i] != 0.0 ? sum / l[i * n + i] : 0.0;
    }
  }
};

}  // namespace detail

/// A V-cycle preconditioner M^-1 ~ A^-1 for a symmetric positive definite BsrMatrix<B>. Owns its
/// hierarchy in the matrix's pool until destroyed or rebuilt: every coarse operator, the
/// prolongations and restrictions that are matrices (on the CPU a geometric level of one lattice
/// applies them line by line and keeps none) ("BsrMatrix.*"), the geometric levels' stencil rows
/// ("StencilOperator.flags"), the smoothers' inverse diagonals ("Multigrid.inverse_diagonal")
/// and the coarsest level's dense Cholesky factor ("Multigrid.coarse_factor"). It reads the finest
/// operator from the matrix it was built on, which must outlive it and keep its values until the
/// next rebuild. apply() borrows its vectors from the arena and gives them back: a solve takes
/// nothing from the pool.
template <int B>
class Multigrid {
public:
  /// Geometric multigrid for `a` on the vertices of a grid with `cells` cells per axis (the Q1
  /// nodes of Grid2D/Grid3D, numbered x fastest, B unknowns each): each coarser level has half the
  /// cells per axis, rounded up, and multilinear interpolation between them. Throws afem::Error
  /// when `a` has another size, and SolverError when a level's operator is not positive definite.
  template <std::size_t D>
  Multigrid(const BsrMatrix<B>& a, const std::array<std::int32_t, D>& cells, memory::Arena& scratch,
            const MultigridOptions& options = {})
      : options_(options), fine_(&a) {
    check_options(options_);
    rebuild(a, cells, scratch);
  }

  /// Algebraic multigrid by smoothed aggregation for `a` from any mesh (B unknowns per node; the
  /// near-null space is the constants of each unknown). Throws SolverError when a level's operator
  /// is not positive definite or the coarsest one is singular.
  Multigrid(const BsrMatrix<B>& a, memory::Arena& scratch, const MultigridOptions& options = {})
      : options_(options), fine_(&a) {
    check_options(options_);
    rebuild(a, scratch);
  }

  /// Rebuilds the geometric hierarchy for `a` (new values or a new pattern); the arrays of the
  /// levels whose sizes stay are reused through replace_owned. On an error the preconditioner must
  /// be rebuilt before its next use.
  template <std::size_t D>
  void rebuild(const BsrMatrix<B>& a, const std::array<std::int32_t, D>& cells,
               memory::Arena& scratch) {
    static_assert(D == 2 || D == 3, "Multigrid: grids of 2 or 3 axes");
    check_matrix(a);
    ready_ = false;
    std::int64_t vertices = 1;
    for (const std::int32_t n : cells) {
      AFEM_EXPECTS(n >= 1, "Multigrid: a grid axis has " + std::to_string(n) + " cells");
      vertices *= n + 1;
    }
    AFEM_EXPECTS(vertices == a.block_rows(),
                 "Multigrid: the matrix has " + std::to_string(a.block_rows()) +
                     " block rows and the grid " + std::to_string(vertices) + " vertices");
    fine_ = &a;
    detail::Lattices<D> fine;
    std::copy(cells.begin(), cells.end(), fine.cells[0]);
    std::size_t level = 0;
    const BsrMatrix<B>* current = &a;
    set_stencil<static_cast<int>(D)>(level, *current, fine, scratch);
    set_smoother(level, *current, scratch);
    while (level + 1 < static_cast<std::size_t>(options_.max_levels) &&
           current->rows() > options_.coarse_rows) {
      const bool split = level == 0 && options_.parity_coarsening;
      const detail::Lattices<D> coarse = detail::coarser_lattices(fine, split);
      if (!split && coarse.total() == fine.total()) {
        break;
      }
      set_transfers<static_cast<int>(D)>(level, fine, coarse, split, scratch);
      current =
          &coarsen_on_grid<static_cast<int>(D)>(level, *current, fine, coarse, split, scratch);
      fine = coarse;
      ++level;
      set_stencil<static_cast<int>(D)>(level, *current, fine, scratch);
      set_smoother(level, *current, scratch);
    }
    finish(level, *current, scratch);
  }

  /// Rebuilds the smoothed-aggregation hierarchy for `a`. The aggregation runs on the host (the
  /// matrix's pattern is copied there); the products on the backend.
  void rebuild(const BsrMatrix<B>& a, memory::Arena& scratch) {
    check_matrix(a);
    ready_ = false;
    fine_ = &a;
    std::size_t level = 0;
    const BsrMatrix<B>* current = &a;
    level_at(level).stencil.reset();
    level_at(level).transfer_dimension = 0;
    set_smoother(level, *current, scratch);
    while (level + 1 < static_cast<std::size_t>(options_.max_levels) &&
           current->rows() > options_.coarse_rows) {
      Level& l = level_at(level);
      if (!smoothed_aggregation(*current, l, scratch)) {
        break;
      }
      transpose(l.prolongation, l.restriction, scratch);
      current = &galerkin_product(level, *current, scratch);
      ++level;
      level_at(level).stencil.reset();
      level_at(level).transfer_dimension = 0;
      set_smoother(level, *current, scratch);
    }
    finish(level, *current, scratch);
  }

  /// The finest operator applied through its grid's stencil (geometric hierarchies of scalar
  /// rows), or null: cg can take it for its own products instead of finding the stencil rows
  /// again. Valid until the next rebuild.
  [[nodiscard]] const StencilOperator* fine_stencil() const {
    return levels_.empty() || !levels_[0].stencil ? nullptr : &*levels_[0].stencil;
  }

  /// Scalar rows (and columns) of the finest operator.
  [[nodiscard]] std::int64_t rows() const { return fine_->rows(); }
  /// Levels, the finest and the coarsest included.
  [[nodiscard]] int level_count() const { return static_cast<int>(depth_ + 1); }
  /// Scalar rows of level l (0: the finest).
  [[nodiscard]] std::int64_t level_rows(int l) const {
    AFEM_EXPECTS(l >= 0 && l < level_count(), "Multigrid::level_rows: level " + std::to_string(l) +
                                                  " of " + std::to_string(level_count()));
    return operator_at(l).rows();
  }
  /// Blocks of every level's operator over the finest one's.
  [[nodiscard]] double operator_complexity() const {
    double blocks = 0.0;
    for (int l = 0; l < level_count(); ++l) {
      blocks += static_cast<double>(operator_at(l).block_count());
    }
    return blocks / static_cast<double>(fine_->block_count());
  }

  /// z = M^-1 r: one V-cycle from z = 0.
  void apply(memory::ArrayView<const double> r, memory::ArrayView<double> z,
             memory::Arena& scratch) const {
    AFEM_EXPECTS(r.size() == static_cast<std::size_t>(rows()) && z.size() == r.size(),
                 "Multigrid::apply: r has " + std::to_string(r.size()) + " and z " +
                     std::to_string(z.size()) + " entries for " + std::to_string(rows()) + " rows");
    AFEM_EXPECTS(ready_, "Multigrid::apply: the last rebuild failed; rebuild before applying");
    cycle(0, r, z, scratch);
  }

private:
  struct Level {
    explicit Level(memory::Pool& pool) : operator_(pool), prolongation(pool), restriction(pool) {}
    BsrMatrix<B> operator_;  // unused on level 0 (the caller's matrix)
    BsrMatrix<B> prolongation;
    BsrMatrix<B> restriction;
    memory::Temporary<double> inverse_diagonal;
    double upper = 0.0;
    /// The operator applied through its interior stencil (scalar geometric levels of one
    /// lattice); empty on the others.
    std::optional<StencilOperator> stencil;
    /// 2 or 3 where R and P are applied line by line on the grid of `transfer_cells` cells per
    /// axis (geometric levels of one lattice on the CPU; the matrices are then empty), else 0.
    int transfer_dimension = 0;
    std::array<std::int32_t, 3> transfer_cells{};
  };

  /// b = R r from level l to level l + 1.
  void restrict_to_coarse(const Level& level, memory::ArrayView<const double> r,
                          memory::ArrayView<double> b, memory::Arena& scratch) const {
    auto policy = memory::arena_policy(scratch, "multigrid.thrust");
    const auto count = thrust::counting_iterator<std::int64_t>(0);
    const auto& cells = level.transfer_cells;
    const std::int64_t coarse_y = (cells[1] + 1) / 2 + 1;
    if (level.transfer_dimension == 2) {
      thrust::for_each_n(policy, count, coarse_y,
                         detail::GridRestrictLines<2, B>{{cells[0], cells[1]}, r, b});
    } else if (level.transfer_dimension == 3) {
      thrust::for_each_n(policy, count, coarse_y * ((cells[2] + 1) / 2 + 1),
                         detail::GridRestrictLines<3, B>{{cells[0], cells[1], cells[2]}, r, b});
    } else {
      spmv(level.restriction, r, b, scratch);
    }
  }

  /// x += P xc from level l + 1 to level l (`d`: scratch of level l's size).
  void prolong_add(const Level& level, memory::ArrayView<const double> xc,
                   memory::ArrayView<double> x, memory::ArrayView<double> d,
                   memory::Arena& scratch) const {
    auto policy = memory::arena_policy(scratch, "multigrid.thrust");
    const auto count = thrust::counting_iterator<std::int64_t>(0);
    const auto& cells = level.transfer_cells;
    const std::int64_t fine_y = cells[1] + 1;
    if (level.transfer_dimension == 2) {
      thrust::for_each_n(policy, count, fine_y,
                         detail::GridProlongAddLines<2, B>{{cells[0], cells[1]}, xc, x});
    } else if (level.transfer_dimension == 3) {
      thrust::for_each_n(policy, count, fine_y * (cells[2] + 1),
                         detail::GridProlongAddLines<3, B>{{cells[0], cells[1], cells[2]}, xc, x});
    } else {
      spmv(level.prolongation, xc, d, scratch);
      axpby(1.0, d, 1.0, x, scratch);
    }
  }

  /// Level l's transfers to the coarser lattices: line by line on one lattice on the CPU, else
  /// the matrices P and R.
  template <int D>
  void set_transfers(std::size_t l, const detail::Lattices<D>& fine,
                     const detail::Lattices<D>& coarse, bool split, memory::Arena& scratch) {
    Level& level = level_at(l);
    if (!has_cuda && !split && fine.count == 1) {
      level.transfer_dimension = D;
      std::copy_n(fine.cells[0], D, level.transfer_cells.begin());
      level.prolongation.set_pattern(0, 0, {}, {}, {});
      level.restriction.set_pattern(0, 0, {}, {}, {});
      return;
    }
    level.transfer_dimension = 0;
    fill_transfer_matrices(level, fine, coarse, split, scratch);
  }

  template <int D>
  static void fill_transfer_matrices(Level& level, const detail::Lattices<D>& fine,
                                     const detail::Lattices<D>& coarse, bool split,
                                     memory::Arena& scratch) {
    detail::fill_rows<B>(detail::GridProlongationRows<D>{fine, coarse, split}, fine.total(),
                         coarse.total(), level.prolongation, scratch);
    detail::fill_rows<B>(detail::GridRestrictionRows<D>{fine, coarse, split}, coarse.total(),
                         fine.total(), level.restriction, scratch);
  }

  /// y = alpha A_l x + beta y on level l: from the level's stencil where it has one (bit for bit
  /// the same as the matrix's product).
  static void apply_operator(const Level& level, const BsrMatrix<B>& a,
                             memory::ArrayView<const double> x, memory::ArrayView<double> y,
                             memory::Arena& scratch, double alpha = 1.0, double beta = 0.0) {
    if constexpr (B == 1) {
      if (level.stencil) {
        level.stencil->apply(x, y, scratch, alpha, beta);
        return;
      }
    }
    spmv(a, x, y, scratch, alpha, beta);
  }

  /// Level l's stencil for operator `a` on the vertices of `lattices` when they are one grid
  /// (scalar operators only), none otherwise.
  template <int D>
  void set_stencil(std::size_t l, const BsrMatrix<B>& a, const detail::Lattices<D>& lattices,
                   memory::Arena& scratch) {
    Level& level = level_at(l);
    if constexpr (B == 1) {
      if (lattices.count == 1) {
        std::array<std::int32_t, D> cells{};
        std::copy_n(lattices.cells[0], D, cells.begin());
        if (level.stencil) {
          level.stencil->rebuild(a, cells, scratch);
        } else {
          level.stencil.emplace(a, cells, scratch);
        }
        return;
      }
    }
    level.stencil.reset();
  }

  static void check_options(const MultigridOptions& o) {
    AFEM_EXPECTS(o.smoothing_degree >= 1 && o.smoothing_range > 1.0 && o.coarse_rows >= 1 &&
                     o.max_levels >= 1 && o.max_levels <= 64 && o.strength >= 0.0,
                 "Multigrid: options out of range (smoothing_degree " +
                     std::to_string(o.smoothing_degree) + ", expected >= 1; smoothing_range " +
                     std::to_string(o.smoothing_range) + ", expected > 1; coarse_rows " +
                     std::to_string(o.coarse_rows) + ", expected >= 1; max_levels " +
                     std::to_string(o.max_levels) + ", expected 1 to 64; strength " +
                     std::to_string(o.strength) + ", expected >= 0)");
  }

  static void check_matrix(const BsrMatrix<B>& a) {
    AFEM_EXPECTS(a.block_rows() == a.block_columns() && a.block_rows() > 0,
                 "Multigrid: the matrix is " + std::to_string(a.rows()) + " x " +
                     std::to_string(a.columns()) + "; it must be square and not empty");
  }

  /// Level l, created when missing (levels_ holds max_levels from the first rebuild on, so a
  /// reference to a level stays valid).
  Level& level_at(std::size_t l) {
    levels_.reserve(static_cast<std::size_t>(std::max(options_.max_levels, 1)));
    while (levels_.size() <= l) {
      levels_.emplace_back(fine_->pool());
    }
    return levels_[l];
  }
  [[nodiscard]] const BsrMatrix<B>& operator_at(int l) const {
    return l == 0 ? *fine_ : levels_[static_cast<std::size_t>(l)].operator_;
  }

  /// Level l + 1's operator R A P from level l's restriction and prolongation, by sparse
  /// products.
  const BsrMatrix<B>& galerkin_product(std::size_t l, const BsrMatrix<B>& a,
                                       memory::Arena& scratch) {
    Level& fine = level_at(l);
    // (R A) P: R A has the coarse level's rows, A P would have the fine level's (several times
    // the entries for the same result).
    const BsrMatrix<B> ra = sparse_product(fine.restriction, a, fine_->pool(), scratch);
    Level& coarse = level_at(l + 1);
    coarse.operator_.replace_with(sparse_product(ra, fine.prolongation, fine_->pool(), scratch));
    return coarse.operator_;
  }

  /// Level l + 1's operator R A P on a grid: for a scalar operator on one lattice row by row from
  /// its grid neighbourhood (the interior rows from level l's stencil), else (or when A couples
  /// vertices that are not neighbours) by sparse products.
  template <int D>
  const BsrMatrix<B>& coarsen_on_grid(std::size_t l, const BsrMatrix<B>& a,
                                      const detail::Lattices<D>& fine,
                                      const detail::Lattices<D>& coarse, bool split,
                                      memory::Arena& scratch) {
    if constexpr (B == 1) {
      if (!split && fine.count == 1) {
        detail::GridGalerkinRows<D> rows;
        std::copy_n(fine.cells[0], D, rows.fine_cells);
        rows.a = a.view();
        const Level& fine_level = level_at(l);
        constexpr auto taps = static_cast<std::size_t>(detail::stencil_taps<D>);
        auto table = memory::borrow_temporary<double>(scratch, taps * taps, "multigrid.galerkin");
        if (fine_level.stencil) {
          rows.flags = fine_level.stencil->stencil_flags();
        }
        if (fine_level.stencil && fine_level.stencil->stencil_rows() > 0) {
          const detail::GalerkinStencils<D> g =
              detail::galerkin_stencils<D>(fine_level.stencil->stencil());
          memory::copy_to_device(table.view(), std::span<const double>(g.rows), scratch.stream());
          rows.stencil_rows = table.view();
          rows.stencil = g.coarse;
        }
        BsrMatrix<B>& product = level_at(l + 1).operator_;
        if (detail::fill_galerkin_rows<D>(rows, product, scratch) == 0) {
          return product;
        }
      }
    }
    Level& level = level_at(l);
    if (level.transfer_dimension == 0) {
      return galerkin_product(l, a, scratch);
    }
    // The products need the matrices; the cycle keeps applying the transfers line by line.
    fill_transfer_matrices(level, fine, coarse, split, scratch);
    const BsrMatrix<B>& product = galerkin_product(l, a, scratch);
    level.prolongation.set_pattern(0, 0, {}, {}, {});
    level.restriction.set_pattern(0, 0, {}, {}, {});
    return product;
  }

  /// The inverse scalar diagonal of level l and the upper end of its smoothing interval.
  void set_smoother(std::size_t l, const BsrMatrix<B>& a, memory::Arena& scratch) {
    Level& level = level_at(l);
    const auto n = static_cast<std::size_t>(a.rows());
    auto inverse = memory::borrow_temporary<double>(fine_->pool(), n, "Multigrid.inverse_diagonal");
    auto policy = memory::arena_policy(scratch, "multigrid.thrust");
    const std::size_t bad =
        thrust::transform_reduce(policy, thrust::counting_iterator<std::size_t>(0),
                                 thrust::counting_iterator<std::size_t>(n),
                                 detail::InvertScalarDiagonal<B>{a.view(), inverse.view(), n}, n,
                                 thrust::minimum<std::size_t>());
    if (bad != n) {
      throw SolverError("Multigrid: the diagonal entry of row " + std::to_string(bad) +
                            " of level " + std::to_string(l) +
                            " is not positive; the operator is not positive definite",
                        {});
    }
    memory::replace_owned(level.inverse_diagonal, std::move(inverse));
    // From the same start on every build: a rebuild gives what a fresh build would (a restarted
    // simulation stays bitwise the uninterrupted one).
    auto start = memory::borrow_temporary<double>(scratch, n, "multigrid.lanczos_start");
    detail::fill_lanczos_start(start.view(), scratch);
    level.upper = 1.1 * detail::estimate_largest_eigenvalue(
                            a, level.stencil ? &*level.stencil : nullptr,
                            level.inverse_diagonal.view(), start.view(), scratch);
  }

  /// The coarsest level l: its dense Cholesky factor.
  void finish(std::size_t l, const BsrMatrix<B>& a, memory::Arena& scratch) {
    depth_ = l;
    const auto n = static_cast<std::size_t>(a.rows());
    AFEM_EXPECTS(n <= 4096, "Multigrid: the coarsest level has " + std::to_string(n) +
                                " rows, too many for its dense solve: max_levels is reached or "
                                "the coarsening stalled (smoothed aggregation stops when a level "
                                "keeps more than 90 % of its rows); raise max_levels");
    auto dense = memory::borrow_temporary<double>(fine_->pool(), n * n, "Multigrid.coarse_factor");
    auto status = memory::borrow_temporary<std::int32_t>(scratch, 1, "multigrid.status");
    const memory::ArrayView<double> l_view = dense.view();
    auto policy = memory::arena_policy(scratch, "multigrid.thrust");
    fill(l_view, 0.0, scratch);
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0),
                       static_cast<std::size_t>(a.block_rows()),
                       detail::ScatterToDense<B>{a.view(), l_view, n});
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), 1,
                       detail::DenseCholesky{l_view, status.view(), n, options_.semidefinite});
    std::int32_t failed = 0;
    memory::copy_to_host(std::span<std::int32_t>(&failed, 1),
                         memory::ArrayView<const std::int32_t>(status.view()), scratch.stream());
    if (failed != 0) {
      const std::string where = "Multigrid: the coarsest operator (level " + std::to_string(l) +
                                ", " + std::to_string(n) + " rows) ";
      throw SolverError(
          options_.semidefinite
              ? where + "has a negative pivot at row " + std::to_string(failed - 1) +
                    "; the matrix is not positive semidefinite"
              : where + "is singular or not positive definite at row " +
                    std::to_string(failed - 1) +
                    "; multigrid needs a symmetric positive definite matrix (fix some dofs of a "
                    "pure Neumann problem, or set semidefinite for a consistent singular system)",
          {});
    }
    memory::replace_owned(coarse_factor_, std::move(dense));
    ready_ = true;
  }

  /// Forms the smoothed-aggregation prolongation of `a` into l.prolongation; false when the
  /// aggregation no longer coarsens.
  bool smoothed_aggregation(const BsrMatrix<B>& a, Level& l, memory::Arena& scratch);

  /// x = M_l^-1 b on level l (x need not be zero on entry; it is overwritten).
  void cycle(std::size_t l, memory::ArrayView<const double> b, memory::ArrayView<double> x,
             memory::Arena& scratch) const {
    if (l == depth_) {
      auto policy = memory::arena_policy(scratch, "multigrid.thrust");
      thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), 1,
                         detail::DenseCholeskySolve{coarse_factor_.view(), b, x, b.size()});
      return;
    }
    const Level& level = levels_[l];
    const BsrMatrix<B>& a = operator_at(static_cast<int>(l));
    const auto n = b.size();
    auto rs = memory::borrow_temporary<double>(scratch, n, "multigrid.residual");
    auto ds = memory::borrow_temporary<double>(scratch, n, "multigrid.step");
    fill(x, 0.0, scratch);
    smooth(level, a, b, x, rs.view(), ds.view(), true, scratch);
    // r = b - A x, restricted
    copy(b, rs.view(), scratch);
    apply_operator(level, a, x, rs.view(), scratch, -1.0, 1.0);
    const auto coarse_n = static_cast<std::size_t>(operator_at(static_cast<int>(l) + 1).rows());
    auto bc = memory::borrow_temporary<double>(scratch, coarse_n, "multigrid.coarse_rhs");
    auto xc = memory::borrow_temporary<double>(scratch, coarse_n, "multigrid.coarse_x");
    restrict_to_coarse(level, rs.view(), bc.view(), scratch);
    cycle(l + 1, bc.view(), xc.view(), scratch);
    prolong_add(level, xc.view(), x, ds.view(), scratch);
    smooth(level, a, b, x, rs.view(), ds.view(), false, scratch);
  }

  /// `smoothing_degree` Chebyshev steps for A x = b on [upper / range, upper] of D^-1 A; `zero`:
  /// x is 0 on entry (the residual is b).
  void smooth(const Level& level, const BsrMatrix<B>& a, memory::ArrayView<const double> b,
              memory::ArrayView<double> x, memory::ArrayView<double> r, memory::ArrayView<double> d,
              bool zero, memory::Arena& scratch) const {
    const double upper = level.upper;
    const double lower = upper / options_.smoothing_range;
    const double theta = 0.5 * (upper + lower);
    const double delta = 0.5 * (upper - lower);
    const double sigma = theta / delta;
    double rho = 1.0 / sigma;
    const memory::ArrayView<const double> dinv = level.inverse_diagonal.view();
    auto policy = memory::arena_policy(scratch, "multigrid.thrust");
    const auto count = thrust::counting_iterator<std::size_t>(0);
    copy(b, r, scratch);
    if (!zero) {
      apply_operator(level, a, x, r, scratch, -1.0, 1.0);
    }
    for (int k = 0; k < options_.smoothing_degree; ++k) {
      double keep = 0.0;
      double step = 1.0 / theta;
      if (k > 0) {
        const double rho_next = 1.0 / (2.0 * sigma - rho);
        keep = rho_next * rho;
        step = 2.0 * rho_next / delta;
        rho = rho_next;
      }
      thrust::for_each_n(policy, count, x.size(), detail::ChebyshevStep{d, x, r, dinv, keep, step});
      if (k + 1 < options_.smoothing_degree) {
        copy(b, r, scratch);
        apply_operator(level, a, x, r, scratch, -1.0, 1.0);
      }
    }
  }

  MultigridOptions options_;
  const BsrMatrix<B>* fine_;
  std::vector<Level> levels_;
  std::size_t depth_ = 0;
  bool ready_ = false;
  memory::Temporary<double> coarse_factor_;
};

template <int B>
bool Multigrid<B>::smoothed_aggregation(const BsrMatrix<B>& a, Level& l, memory::Arena& scratch) {
  const memory::Stream& stream = scratch.stream();
  const ConstBsrView<B> m = a.view();
  const auto n = static_cast<std::size_t>(a.block_rows());
  constexpr int block = B * B;
  std::vector<std::int32_t> offsets(n + 1);
  std::vector<std::int32_t> columns(static_cast<std::size_t>(a.block_count()));
  std::vector<double> values(columns.size() * block);
  memory::copy_to_host(offsets, m.offsets, stream);
  memory::copy_to_host(columns, m.columns, stream);
  memory::copy_to_host(values, m.values, stream);
  auto block_norm = [&](std::size_t k) {
    double sum = 0.0;
    for (int q = 0; q < block; ++q) {
      sum += values[k * block + static_cast<std::size_t>(q)] *
             values[k * block + static_cast<std::size_t>(q)];
    }
    return std::sqrt(sum);
  };
  std::vector<double> diagonal(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (auto k = offsets[i]; k < offsets[i + 1]; ++k) {
      if (static_cast<std::size_t>(columns[static_cast<std::size_t>(k)]) == i) {
        diagonal[i] = block_norm(static_cast<std::size_t>(k));
      }
    }
  }
  // Strong connections, as a pattern of their own.
  std::vector<std::int32_t> strong_offsets(n + 1, 0);
  std::vector<std::int32_t> strong;
  strong.reserve(columns.size());
  const double theta = options_.strength;
  for (std::size_t i = 0; i < n; ++i) {
    for (auto k = offsets[i]; k < offsets[i + 1]; ++k) {
      const auto j = static_cast<std::size_t>(columns[static_cast<std::size_t>(k)]);
      // Scalar rows: only negative couplings are strong (a positive one, as in a wide-stencil
      // operator, joins nodes whose values the operator pulls apart).
      const double coupling =
          B == 1 ? -values[static_cast<std::size_t>(k)] : block_norm(static_cast<std::size_t>(k));
      if (j != i && coupling > 0.0 && coupling >= theta * std::sqrt(diagonal[i] * diagonal[j])) {
        strong.push_back(static_cast<std::int32_t>(j));
      }
    }
    strong_offsets[i + 1] = static_cast<std::int32_t>(strong.size());
  }
  // Aggregates: a node and its strong neighbours where none is taken (1), the rest join a
  // neighbouring aggregate (2) or group with their free neighbours (3). Nodes without strong
  // neighbours (held dofs) stay out: their rows of P are zero, the smoother solves them.
  constexpr std::int32_t free_node = -1;
  constexpr std::int32_t isolated = -2;
  std::vector<std::int32_t> aggregate(n, free_node);
  std::int32_t count = 0;
  // A new aggregate: node i and its strong neighbours not yet taken.
  auto start_aggregate = [&](std::size_t i) {
    aggregate[i] = count;
    for (auto k = strong_offsets[i]; k < strong_offsets[i + 1]; ++k) {
      const auto j = static_cast<std::size_t>(strong[static_cast<std::size_t>(k)]);
      if (aggregate[j] == free_node) {
        aggregate[j] = count;
      }
    }
    ++count;
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (strong_offsets[i] == strong_offsets[i + 1]) {
      aggregate[i] = isolated;
      continue;
    }
    if (aggregate[i] != free_node) {
      continue;
    }
    bool all_free = true;
    for (auto k = strong_offsets[i]; k < strong_offsets[i + 1] && all_free; ++k) {
      all_free = aggregate[static_cast<std::size_t>(strong[static_cast<std::size_t>(k)])] < 0;
    }
    if (!all_free) {
      continue;
    }
    start_aggregate(i);
  }
  const std::vector<std::int32_t> first_pass = aggregate;
  for (std::size_t i = 0; i < n; ++i) {
    if (aggregate[i] != free_node) {
      continue;
    }
    for (auto k = strong_offsets[i]; k < strong_offsets[i + 1]; ++k) {
      const std::int32_t joined =
          first_pass[static_cast<std::size_t>(strong[static_cast<std::size_t>(k)])];
      if (joined >= 0) {
        aggregate[i] = joined;
        break;
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (aggregate[i] != free_node) {
      continue;
    }
    start_aggregate(i);
  }
  if (count == 0 || static_cast<std::size_t>(count) * 10 > n * 9) {
    return false;
  }
  // Tentative prolongation T: I / sqrt(size) from each node to its aggregate.
  std::vector<std::int32_t> sizes(static_cast<std::size_t>(count), 0);
  for (const std::int32_t g : aggregate) {
    if (g >= 0) {
      ++sizes[static_cast<std::size_t>(g)];
    }
  }
  std::vector<std::int32_t> t_offsets(n + 1, 0);
  std::vector<std::int32_t> t_columns;
  std::vector<double> t_values;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t g = aggregate[i];
    if (g >= 0) {
      t_columns.push_back(g);
      const double w = 1.0 / std::sqrt(static_cast<double>(sizes[static_cast<std::size_t>(g)]));
      for (int q = 0; q < block; ++q) {
        t_values.push_back(q % (B + 1) == 0 ? w : 0.0);
      }
    }
    t_offsets[i + 1] = static_cast<std::int32_t>(t_columns.size());
  }
  memory::Pool& pool = fine_->pool();
  const BsrMatrix<B> tentative = BsrMatrix<B>::from_host(pool, static_cast<std::int32_t>(n), count,
                                                         t_offsets, t_columns, t_values);
  // P = T - omega D^-1 A T, omega = 4 / (3 lambda_max(D^-1 A)).
  const BsrMatrix<B> at = sparse_product(a, tentative, pool, scratch);
  const double omega = 4.0 / 3.0 / (l.upper / 1.1);
  const ConstBsrView<B> atv = at.view();
  std::vector<std::int32_t> p_offsets(n + 1);
  std::vector<std::int32_t> p_columns(static_cast<std::size_t>(at.block_count()));
  std::vector<double> p_values(p_columns.size() * block);
  std::vector<double> inverse_diagonal(n * B);
  memory::copy_to_host(p_offsets, atv.offsets, stream);
  memory::copy_to_host(p_columns, atv.columns, stream);
  memory::copy_to_host(p_values, atv.values, stream);
  memory::copy_to_host(inverse_diagonal, memory::ArrayView<const double>(l.inverse_diagonal.view()),
                       stream);
  for (std::size_t i = 0; i < n; ++i) {
    for (auto k = p_offsets[i]; k < p_offsets[i + 1]; ++k) {
      double* v = &p_values[static_cast<std::size_t>(k) * block];
      for (int r = 0; r < B; ++r) {
        for (int c = 0; c < B; ++c) {
          v[r * B + c] *= -omega * inverse_diagonal[i * B + static_cast<std::size_t>(r)];
        }
      }
      if (p_columns[static_cast<std::size_t>(k)] == aggregate[i]) {
        const double w =
            1.0 / std::sqrt(static_cast<double>(sizes[static_cast<std::size_t>(aggregate[i])]));
        for (int r = 0; r < B; ++r) {
          v[r * B + r] += w;
        }
      }
    }
  }
  l.prolongation.replace_with(BsrMatrix<B>::from_host(pool, static_cast<std::int32_t>(n), count,
                                                      p_offsets, p_columns, p_values));
  return true;
}

}  // namespace afem::fem
