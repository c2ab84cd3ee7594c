#pragma once

/// @file
/// Krylov solvers on BsrMatrix: conjugate gradients (symmetric positive definite) and BiCGStab
/// (general), with Jacobi or block-Jacobi preconditioning. Every work vector comes from the
/// arena and is given back before returning.

#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/inner_product.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform_reduce.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "fem/bsr_matrix.hpp"
#include "memory/arena.hpp"
#include "memory/error.hpp"
#include "memory/replace_owned.hpp"
#include "memory/thrust_allocator.hpp"

namespace afem::fem {

/// The preconditioner M^-1: identity, inverse diagonal, or inverse diagonal blocks.
enum class Preconditioner : std::uint8_t { none, jacobi, block_jacobi };

/// Stopping rule and preconditioner. The solve stops when ||b - A x|| <= tolerance * ||b||.
struct SolveOptions {
  double tolerance = 1e-10;
  int max_iterations = 1000;
  Preconditioner preconditioner = Preconditioner::jacobi;
};

/// Iterations taken and the final relative residual ||b - A x|| / ||b||.
struct SolveResult {
  int iterations = 0;
  double residual = 0.0;
};

/// A solve that broke down or did not converge; what() says which and lists the last 8 relative
/// residuals. history() keeps the last 64 (the initial residual first while there are at most 64),
/// oldest first: a solve keeps them in a fixed ring so that it takes no heap memory on its way.
class SolverError : public Error {
public:
  SolverError(const std::string& message, std::vector<double> history)
      : Error(message + format(history)), history_(std::move(history)) {}
  [[nodiscard]] const std::vector<double>& history() const { return history_; }

private:
  static std::string format(const std::vector<double>& history) {
    std::string text = "; residual history (relative, last " +
                       std::to_string(std::min<std::size_t>(history.size(), 8)) + " of the " +
                       std::to_string(history.size()) + " kept):";
    const std::size_t first = history.size() > 8 ? history.size() - 8 : 0;
    for (std::size_t i = first; i < history.size(); ++i) {
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), " %.3e", history[i]);
      text += buffer;
    }
    return text;
  }
  std::vector<double> history_;
};

namespace detail {

/// Relative residuals of one solve, kept in a fixed ring (no heap memory on the success path).
class ResidualHistory {
public:
  void push(double value) {
    ring_[count_ % ring_.size()] = value;
    ++count_;
  }
  [[nodiscard]] std::vector<double> values() const {
    std::vector<double> out;
    const std::size_t kept = std::min(count_, ring_.size());
    for (std::size_t i = count_ - kept; i < count_; ++i) {
      out.push_back(ring_[i % ring_.size()]);
    }
    return out;
  }

private:
  std::array<double, 64> ring_{};
  std::size_t count_ = 0;
};

/// Gauss-Jordan inversion with partial pivoting in place; false when singular.
template <int B>
AFEM_HOST_DEVICE bool invert_block(double* m) {
  double a[B][2 * B];
  for (int i = 0; i < B; ++i) {
    for (int j = 0; j < B; ++j) {
      a[i][j] = m[i * B + j];
      a[i][B + j] = i == j ? 1.0 : 0.0;
    }
  }
  for (int c = 0; c < B; ++c) {
    int pivot = c;
    for (int i = c + 1; i < B; ++i) {
      if (std::abs(a[i][c]) > std::abs(a[pivot][c])) {
        pivot = i;
      }
    }
    if (a[pivot][c] == 0.0) {
      return false;
    }
    for (int j = 0; j < 2 * B; ++j) {
      const double t = a[c][j];
      a[c][j] = a[pivot][j];
      a[pivot][j] = t;
    }
    const double inv = 1.0 / a[c][c];
    for (int j = 0; j < 2 * B; ++j) {
      a[c][j] *= inv;
    }
    for (int i = 0; i < B; ++i) {
      if (i != c) {
        const double f = a[i][c];
        for (int j = 0; j < 2 * B; ++j) {
          a[i][j] -= f * a[c][j];
        }
      }
    }
  }
  for (int i = 0; i < B; ++i) {
    for (int j = 0; j < B; ++j) {
      m[i * B + j] = a[i][B + j];
    }
  }
  return true;
}

/// Inverts each diagonal entry (Jacobi) or B x B diagonal block (block Jacobi) of `d` in place;
/// returns the first block row that could not be inverted, or `rows`.
template <int B>
std::int32_t invert_diagonal(memory::ArrayView<double> d, bool blocks, std::int32_t rows,
                             memory::Arena& scratch) {
  auto policy = memory::arena_policy(scratch, "solver.thrust");
  return thrust::transform_reduce(
      policy, thrust::counting_iterator<std::int32_t>(0),
      thrust::counting_iterator<std::int32_t>(rows),
      [=] AFEM_HOST_DEVICE(std::int32_t r) {
        double* m = &d[static_cast<std::size_t>(r) * B * B];
        if (!blocks) {
          for (int i = 0; i < B; ++i) {
            if (m[i * B + i] == 0.0) {
              return r;
            }
            m[i * B + i] = 1.0 / m[i * B + i];
          }
          return rows;
        }
        return invert_block<B>(m) ? rows : r;
      },
      rows, thrust::minimum<std::int32_t>());
}

/// A BsrMatrix seen as a linear operator with B x B diagonal blocks.
template <int B>
struct BsrOperator {
  const BsrMatrix<B>* matrix;
  [[nodiscard]] std::int64_t rows() const { return matrix->rows(); }
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y,
             memory::Arena& scratch) const {
    spmv(*matrix, x, y, scratch);
  }
  void diagonal(memory::ArrayView<double> d, memory::Arena& scratch) const {
    block_diagonal(*matrix, d, scratch);
  }
};

/// Work vectors and the preconditioner of one solve, all in the arena. `Op` gives rows(),
/// apply(x, y, scratch) and diagonal(d, scratch) (B * B values per block row).
template <int B, class Op>
class KrylovWorkspace {
public:
  KrylovWorkspace(const Op& a, Preconditioner kind, memory::Arena& scratch)
      : a_(&a),
        scratch_(&scratch),
        kind_(kind),
        n_(static_cast<std::size_t>(a.rows())),
        policy_(memory::arena_policy(scratch, "solver.thrust")) {
    if (kind_ == Preconditioner::none) {
      return;
    }
    memory::replace_owned(
        inverse_, memory::borrow_temporary<double>(scratch, n_ * B, "solver.preconditioner"));
    a.diagonal(inverse_.view(), scratch);
    const memory::ArrayView<double> d = inverse_.view();
    const bool blocks = kind_ == Preconditioner::block_jacobi;
    const auto rows = static_cast<std::int32_t>(n_ / B);
    const std::int32_t bad = invert_diagonal<B>(d, blocks, rows, scratch);
    AFEM_EXPECTS(bad == rows, "solver: the diagonal block of block row " + std::to_string(bad) +
                                  " is singular; the Jacobi preconditioner cannot invert it");
  }

  memory::ArrayView<double> vector(const char* label) {
    AFEM_ASSERT(used_ < vectors_.size(), "solver: more work vectors than the workspace holds");
    memory::replace_owned(vectors_[used_], memory::borrow_temporary<double>(*scratch_, n_, label));
    return vectors_[used_++].view();
  }

  double dot(memory::ArrayView<const double> x, memory::ArrayView<const double> y) {
    return thrust::inner_product(policy_, x.begin(), x.end(), y.begin(), 0.0);
  }
  double norm(memory::ArrayView<const double> x) { return std::sqrt(dot(x, x)); }

  /// y = a x + b y
  void axpby(double a, memory::ArrayView<const double> x, double b, memory::ArrayView<double> y) {
    thrust::for_each_n(policy_, thrust::counting_iterator<std::size_t>(0), n_,
                       [=] AFEM_HOST_DEVICE(std::size_t i) { y[i] = a * x[i] + b * y[i]; });
  }
  void copy(memory::ArrayView<const double> x, memory::ArrayView<double> y) {
    axpby(1.0, x, 0.0, y);
  }
  /// r = b - A x and its norm relative to ||b|| (`b_norm`); for b = 0, sets x = 0 and gives 0.
  double initial_residual(memory::ArrayView<const double> b, double b_norm,
                          memory::ArrayView<double> x, memory::ArrayView<double> r) {
    if (b_norm == 0.0) {
      axpby(0.0, b, 0.0, x);
      copy(b, r);
      return 0.0;
    }
    apply(x, r);
    axpby(1.0, b, -1.0, r);
    return norm(r) / b_norm;
  }
  /// y = A x
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y) {
    a_->apply(x, y, *scratch_);
  }
  /// z = M^-1 r
  void precondition(memory::ArrayView<const double> r, memory::ArrayView<double> z) {
    if (kind_ == Preconditioner::none) {
      copy(r, z);
      return;
    }
    const memory::ArrayView<const double> d = inverse_.view();
    const bool blocks = kind_ == Preconditioner::block_jacobi;
    thrust::for_each_n(policy_, thrust::counting_iterator<std::size_t>(0), n_ / B,
                       [=] AFEM_HOST_DEVICE(std::size_t row) {
                         const double* m = &d[row * B * B];
                         for (int i = 0; i < B; ++i) {
                           double sum = 0.0;
                           for (int j = 0; j < B; ++j) {
                             if (blocks || i == j) {
                               sum += m[i * B + j] * r[row * B + static_cast<std::size_t>(j)];
                             }
                           }
                           z[row * B + static_cast<std::size_t>(i)] = sum;
                         }
                       });
  }

private:
  const Op* a_;
  memory::Arena* scratch_;
  Preconditioner kind_;
  std::size_t n_;
  decltype(memory::arena_policy(std::declval<memory::Arena&>(), "")) policy_;
  memory::Temporary<double> inverse_;
  std::array<memory::Temporary<double>, 8> vectors_;
  std::size_t used_ = 0;
};

template <int B>
void check_square(const BsrMatrix<B>& a) {
  AFEM_EXPECTS(a.block_rows() == a.block_columns(), "solver: the matrix is not square (" +
                                                        std::to_string(a.rows()) + " x " +
                                                        std::to_string(a.columns()) + ")");
}

inline void check_vectors(std::size_t b, std::size_t x, std::int64_t rows, const char* solver) {
  AFEM_EXPECTS(b == static_cast<std::size_t>(rows) && x == static_cast<std::size_t>(rows),
               std::string(solver) + ": b has " + std::to_string(b) + " and x " +
                   std::to_string(x) + " entries; the matrix has " + std::to_string(rows) +
                   " rows");
}

/// The conjugate-gradient iteration of cg() on any operator with B x B diagonal blocks.
template <int B, class Op>
SolveResult conjugate_gradients(const Op& a, memory::ArrayView<const double> b,
                                memory::ArrayView<double> x, memory::Arena& scratch,
                                const SolveOptions& options) {
  check_vectors(b.size(), x.size(), a.rows(), "cg");
  KrylovWorkspace<B, Op> work(a, options.preconditioner, scratch);
  ResidualHistory history;
  const auto r = work.vector("cg.r");
  const auto z = work.vector("cg.z");
  const auto p = work.vector("cg.p");
  const auto ap = work.vector("cg.Ap");
  const double b_norm = work.norm(b);
  double residual = work.initial_residual(b, b_norm, x, r);
  history.push(residual);
  if (residual <= options.tolerance) {
    return {0, residual};
  }
  work.precondition(r, z);
  work.copy(z, p);
  double rz = work.dot(r, z);
  for (int iteration = 1; iteration <= options.max_iterations; ++iteration) {
    work.apply(p, ap);
    const double curvature = work.dot(p, ap);
    if (!(curvature > 0.0)) {
      throw SolverError("cg: breakdown at iteration " + std::to_string(iteration) + ": p.Ap = " +
                            std::to_string(curvature) + ", the matrix is not positive definite",
                        history.values());
    }
    const double alpha = rz / curvature;
    work.axpby(alpha, p, 1.0, x);
    work.axpby(-alpha, ap, 1.0, r);
    residual = work.norm(r) / b_norm;
    history.push(residual);
    if (residual <= options.tolerance) {
      return {iteration, residual};
    }
    work.precondition(r, z);
    const double rz_next = work.dot(r, z);
    work.axpby(1.0, z, rz_next / rz, p);
    rz = rz_next;
  }
  throw SolverError("cg: no convergence to " + std::to_string(options.tolerance) + " in " +
                        std::to_string(options.max_iterations) + " iterations",
                    history.values());
}

}  // namespace detail

/// A linear operator that the solvers can use in place of a BsrMatrix: its number of rows,
/// y = A x, and its diagonal (for Jacobi). The operator keeps whatever it applies; the solver
/// borrows only its work vectors.
template <class Op>
concept LinearOperator = requires(const Op& a, memory::ArrayView<const double> x,
                                  memory::ArrayView<double> y, memory::Arena& scratch) {
  { a.rows() } -> std::convertible_to<std::int64_t>;
  a.apply(x, y, scratch);
  a.diagonal(y, scratch);
};

/// Solves A x = b by preconditioned conjugate gradients from the initial guess in x. A must be
/// symmetric positive definite: a non-positive curvature p.Ap throws SolverError ("not positive
/// definite"), as does reaching max_iterations.
template <int B>
SolveResult cg(const BsrMatrix<B>& a, memory::ArrayView<const double> b,
               memory::ArrayView<double> x, memory::Arena& scratch,
               const SolveOptions& options = {}) {
  detail::check_square(a);
  return detail::conjugate_gradients<B>(detail::BsrOperator<B>{&a}, b, x, scratch, options);
}

/// cg() on a matrix-free symmetric positive definite operator (block Jacobi is Jacobi here).
template <LinearOperator Op>
SolveResult cg(const Op& a, memory::ArrayView<const double> b, memory::ArrayView<double> x,
               memory::Arena& scratch, const SolveOptions& options = {}) {
  return detail::conjugate_gradients<1>(a, b, x, scratch, options);
}

/// Solves A x = b by right-preconditioned BiCGStab from the initial guess in x. Throws
/// SolverError on breakdown (rho or omega vanishing) or after max_iterations.
template <int B>
SolveResult bicgstab(const BsrMatrix<B>& a, memory::ArrayView<const double> b,
                     memory::ArrayView<double> x, memory::Arena& scratch,
                     const SolveOptions& options = {}) {
  detail::check_square(a);
  detail::check_vectors(b.size(), x.size(), a.rows(), "bicgstab");
  const detail::BsrOperator<B> op{&a};
  detail::KrylovWorkspace<B, detail::BsrOperator<B>> work(op, options.preconditioner, scratch);
  detail::ResidualHistory history;
  const auto r = work.vector("bicgstab.r");
  const auto r0 = work.vector("bicgstab.r0");
  const auto p = work.vector("bicgstab.p");
  const auto v = work.vector("bicgstab.v");
  const auto s = work.vector("bicgstab.s");
  const auto t = work.vector("bicgstab.t");
  const auto p_hat = work.vector("bicgstab.p_hat");
  const auto s_hat = work.vector("bicgstab.s_hat");
  const double b_norm = work.norm(b);
  double residual = work.initial_residual(b, b_norm, x, r);
  history.push(residual);
  if (residual <= options.tolerance) {
    return {0, residual};
  }
  work.copy(r, r0);
  work.axpby(0.0, r, 0.0, p);
  work.axpby(0.0, r, 0.0, v);
  double rho = 1.0;
  double alpha = 1.0;
  double omega = 1.0;
  for (int iteration = 1; iteration <= options.max_iterations; ++iteration) {
    const double rho_next = work.dot(r0, r);
    if (rho_next == 0.0 || !std::isfinite(rho_next)) {
      throw SolverError("bicgstab: breakdown at iteration " + std::to_string(iteration) +
                            " (r0.r = " + std::to_string(rho_next) + ")",
                        history.values());
    }
    const double beta = rho_next / rho * (alpha / omega);
    work.axpby(-omega, v, 1.0, p);  // p - omega v
    work.axpby(1.0, r, beta, p);    // r + beta (p - omega v)
    work.precondition(p, p_hat);
    work.apply(p_hat, v);
    const double r0v = work.dot(r0, v);
    if (r0v == 0.0 || !std::isfinite(r0v)) {
      throw SolverError("bicgstab: breakdown at iteration " + std::to_string(iteration) +
                            " (r0.v = " + std::to_string(r0v) + ")",
                        history.values());
    }
    alpha = rho_next / r0v;
    work.copy(r, s);
    work.axpby(-alpha, v, 1.0, s);
    const double s_norm = work.norm(s) / b_norm;
    if (s_norm <= options.tolerance) {
      work.axpby(alpha, p_hat, 1.0, x);
      history.push(s_norm);
      return {iteration, s_norm};
    }
    work.precondition(s, s_hat);
    work.apply(s_hat, t);
    const double tt = work.dot(t, t);
    omega = tt > 0.0 ? work.dot(t, s) / tt : 0.0;
    if (omega == 0.0 || !std::isfinite(omega)) {
      throw SolverError("bicgstab: breakdown at iteration " + std::to_string(iteration) +
                            " (omega = " + std::to_string(omega) + ")",
                        history.values());
    }
    work.axpby(alpha, p_hat, 1.0, x);
    work.axpby(omega, s_hat, 1.0, x);
    work.copy(s, r);
    work.axpby(-omega, t, 1.0, r);
    residual = work.norm(r) / b_norm;
    history.push(residual);
    if (residual <= options.tolerance) {
      return {iteration, residual};
    }
    rho = rho_next;
  }
  throw SolverError("bicgstab: no convergence to " + std::to_string(options.tolerance) + " in " +
                        std::to_string(options.max_iterations) + " iterations",
                    history.values());
}

}  // namespace afem::fem
