#pragma once

/// @file
/// Krylov solvers on a BsrMatrix or any LinearOperator: conjugate gradients (symmetric positive
/// definite) and BiCGStab (general), preconditioned by Jacobi, block Jacobi or any operator the
/// caller gives. Every work vector comes from the arena and is given back before returning.

#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform_reduce.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/linear_operator.hpp"
#include "arenafem/fem/vector_ops.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::fem {

/// The preconditioner M^-1: identity, inverse diagonal, or inverse diagonal blocks.
enum class Preconditioner : std::uint8_t { none, jacobi, block_jacobi };

/// Stopping rule and preconditioner. The solve stops when ||b - A x|| <= tolerance * ||b|| or
/// ||b - A x|| <= absolute_tolerance (||.|| the Euclidean norm; for the residual the solver
/// updates, which differs from b - A x computed afresh by rounding only). `preconditioner` is not
/// read by the overloads that take a preconditioner operator.
struct SolveOptions {
  double tolerance = 1e-10;
  int max_iterations = 1000;
  Preconditioner preconditioner = Preconditioner::jacobi;
  double absolute_tolerance = 0.0;
};

/// Iterations taken and the final residual, relative (||b - A x|| / ||b||, 0 when b = 0) and
/// absolute.
struct SolveResult {
  int iterations = 0;
  double residual = 0.0;
  double residual_norm = 0.0;
};

/// A solve that broke down or did not converge; what() says which and lists the last 8 relative
/// residuals. history() holds the relative residual of the initial guess and of every iteration
/// that updated it, oldest first, the last 64 of them when there were more (a solve keeps them in
/// a fixed ring so that it takes no heap memory on its way).
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

/// The operator diagonal for a Jacobi preconditioner: BsrOperator<B> gives B * B values per block
/// row; any other operator gives its scalar diagonal (B = 1).
template <int B, class Op>
void preconditioner_diagonal(const Op& a, memory::ArrayView<double> d, memory::Arena& scratch,
                             const char* solver) {
  if constexpr (DiagonalOperator<Op>) {
    a.diagonal(d, scratch);
  } else {
    (void)a;
    (void)d;
    (void)scratch;
    throw Error(std::string(solver) +
                ": Jacobi preconditioning needs the operator's diagonal(d, scratch), which this "
                "operator does not give; use Preconditioner::none, with_diagonal(), or pass a "
                "preconditioner operator");
  }
}

/// M^-1 as the identity, the inverse diagonal (Jacobi) or the inverse B x B diagonal blocks (block
/// Jacobi) of an operator, kept in the arena ("solver.preconditioner") until destroyed.
template <int B>
class DiagonalPreconditioner {
public:
  template <class Op>
  DiagonalPreconditioner(const Op& a, Preconditioner kind, memory::Arena& scratch,
                         const char* solver)
      : kind_(kind), n_(static_cast<std::size_t>(a.rows())) {
    if (kind_ == Preconditioner::none) {
      return;
    }
    memory::replace_owned(
        inverse_, memory::borrow_temporary<double>(scratch, n_ * B, "solver.preconditioner"));
    preconditioner_diagonal<B>(a, inverse_.view(), scratch, solver);
    const memory::ArrayView<double> d = inverse_.view();
    const bool blocks = kind_ == Preconditioner::block_jacobi;
    const auto rows = static_cast<std::int32_t>(n_ / B);
    const std::int32_t bad = invert_diagonal<B>(d, blocks, rows, scratch);
    AFEM_EXPECTS(bad == rows, std::string(solver) + ": the diagonal block of block row " +
                                  std::to_string(bad) +
                                  " is singular; the Jacobi preconditioner cannot invert it");
  }

  /// z = M^-1 r
  void apply(memory::ArrayView<const double> r, memory::ArrayView<double> z,
             memory::Arena& scratch) const {
    if (kind_ == Preconditioner::none) {
      copy(r, z, scratch);
      return;
    }
    const memory::ArrayView<const double> d = inverse_.view();
    const bool blocks = kind_ == Preconditioner::block_jacobi;
    auto policy = memory::arena_policy(scratch, "solver.thrust");
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), n_ / B,
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
  Preconditioner kind_;
  std::size_t n_;
  memory::Temporary<double> inverse_;
};

/// A preconditioner operator the caller gives: z = M^-1 r is M.apply(r, z).
template <class M>
struct OperatorPreconditioner {
  const M* m;
  void apply(memory::ArrayView<const double> r, memory::ArrayView<double> z,
             memory::Arena& scratch) const {
    m->apply(r, z, scratch);
  }
};

template <class M>
OperatorPreconditioner<M> operator_preconditioner(const M& m, std::int64_t rows,
                                                  const char* solver) {
  AFEM_EXPECTS(m.rows() == rows && operator_columns(m) == rows,
               std::string(solver) + ": the preconditioner is " + std::to_string(m.rows()) + " x " +
                   std::to_string(operator_columns(m)) + " for an operator of " +
                   std::to_string(rows) + " rows");
  return OperatorPreconditioner<M>{&m};
}

/// Runs `setup` (a solver's local work that can fail: scratch borrows, checks). For an operator
/// spread over processes that offers collective(work), through it, so that a failure on one
/// process throws on all of them instead of leaving the others waiting in the first reduction.
template <class Op, class F>
void run_setup(const Op& a, F&& setup) {
  if constexpr (requires { a.collective(setup); }) {
    a.collective(setup);
  } else {
    setup();
  }
}

/// Work vectors of one solve, all in the arena, and the operator applied to them.
template <class Op>
class KrylovWorkspace {
public:
  KrylovWorkspace(const Op& a, memory::Arena& scratch)
      : a_(&a), scratch_(&scratch), n_(static_cast<std::size_t>(a.rows())) {}

  memory::ArrayView<double> vector(const char* label) {
    AFEM_ASSERT(used_ < vectors_.size(), "solver: more work vectors than the workspace holds");
    memory::replace_owned(vectors_[used_], memory::borrow_temporary<double>(*scratch_, n_, label));
    return vectors_[used_++].view();
  }

  /// x . y; over all ranks for an operator distributed over them (one with global_sum()).
  double dot(memory::ArrayView<const double> x, memory::ArrayView<const double> y) {
    const double local = fem::dot(x, y, *scratch_);
    if constexpr (DistributedOperator<Op>) {
      return a_->global_sum(local);
    } else {
      return local;
    }
  }
  double norm(memory::ArrayView<const double> x) {
    if constexpr (DistributedOperator<Op>) {
      return std::sqrt(dot(x, x));
    } else {
      return fem::norm(x, *scratch_);
    }
  }
  /// y = a x + b y
  void axpby(double a, memory::ArrayView<const double> x, double b, memory::ArrayView<double> y) {
    fem::axpby(a, x, b, y, *scratch_);
  }
  /// y = x; y may hold anything before (a fresh work vector: not read, unlike axpby).
  void copy(memory::ArrayView<const double> x, memory::ArrayView<double> y) {
    fem::copy(x, y, *scratch_);
  }
  void zero(memory::ArrayView<double> y) { fem::fill(y, 0.0, *scratch_); }
  /// r = b - A x, giving ||r||; for b = 0, sets x = 0 and gives 0.
  double initial_residual(memory::ArrayView<const double> b, double b_norm,
                          memory::ArrayView<double> x, memory::ArrayView<double> r) {
    if (b_norm == 0.0) {
      zero(x);
      zero(r);
      return 0.0;
    }
    apply(x, r);
    axpby(1.0, b, -1.0, r);
    return norm(r);
  }
  /// y = A x
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y) {
    a_->apply(x, y, *scratch_);
  }
  /// z = M^-1 r
  template <class M>
  void precondition(const M& m, memory::ArrayView<const double> r, memory::ArrayView<double> z) {
    m.apply(r, z, *scratch_);
  }

private:
  const Op* a_;
  memory::Arena* scratch_;
  std::size_t n_;
  std::array<memory::Temporary<double>, 8> vectors_;
  std::size_t used_ = 0;
};

/// The stopping rule of SolveOptions, with the figures a SolveResult reports.
struct Convergence {
  double b_norm = 0.0;
  double tolerance = 0.0;
  double absolute_tolerance = 0.0;
  [[nodiscard]] double relative(double r_norm) const {
    return b_norm == 0.0 ? 0.0 : r_norm / b_norm;
  }
  [[nodiscard]] bool reached(double r_norm) const {
    return relative(r_norm) <= tolerance || r_norm <= absolute_tolerance;
  }
  [[nodiscard]] SolveResult result(int iterations, double r_norm) const {
    return {iterations, relative(r_norm), r_norm};
  }
};

template <int B>
void check_square(const BsrMatrix<B>& a) {
  AFEM_EXPECTS(a.block_rows() == a.block_columns(), "solver: the matrix is not square (" +
                                                        std::to_string(a.rows()) + " x " +
                                                        std::to_string(a.columns()) + ")");
}

template <class Op>
void check_operator(const Op& a, std::size_t b, std::size_t x, const char* solver) {
  const std::int64_t rows = a.rows();
  AFEM_EXPECTS(operator_columns(a) == rows, std::string(solver) + ": the operator is not square (" +
                                                std::to_string(rows) + " x " +
                                                std::to_string(operator_columns(a)) + ")");
  AFEM_EXPECTS(b == static_cast<std::size_t>(rows) && x == static_cast<std::size_t>(rows),
               std::string(solver) + ": b has " + std::to_string(b) + " and x " +
                   std::to_string(x) + " entries; the operator has " + std::to_string(rows) +
                   " rows");
}

/// The conjugate-gradient iteration of cg() on any operator, preconditioned by `m`.
template <class Op, class M>
SolveResult conjugate_gradients(const Op& a, const M& m, memory::ArrayView<const double> b,
                                memory::ArrayView<double> x, memory::Arena& scratch,
                                const SolveOptions& options) {
  KrylovWorkspace<Op> work(a, scratch);
  ResidualHistory history;
  memory::ArrayView<double> r;
  memory::ArrayView<double> z;
  memory::ArrayView<double> p;
  memory::ArrayView<double> ap;
  run_setup(a, [&] {
    r = work.vector("cg.r");
    z = work.vector("cg.z");
    p = work.vector("cg.p");
    ap = work.vector("cg.Ap");
  });
  const Convergence rule{work.norm(b), options.tolerance, options.absolute_tolerance};
  double r_norm = work.initial_residual(b, rule.b_norm, x, r);
  history.push(rule.relative(r_norm));
  if (rule.reached(r_norm)) {
    return rule.result(0, r_norm);
  }
  work.precondition(m, r, z);
  work.copy(z, p);
  double rz = work.dot(r, z);
  if (!(rz > 0.0)) {
    throw SolverError("cg: breakdown before the first iteration: r.z = " + std::to_string(rz) +
                          ", the preconditioner is not positive definite",
                      history.values());
  }
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
    r_norm = work.norm(r);
    history.push(rule.relative(r_norm));
    if (rule.reached(r_norm)) {
      return rule.result(iteration, r_norm);
    }
    work.precondition(m, r, z);
    const double rz_next = work.dot(r, z);
    if (!(rz_next > 0.0)) {
      throw SolverError("cg: breakdown at iteration " + std::to_string(iteration) +
                            ": r.z = " + std::to_string(rz_next) +
                            ", the preconditioner is not positive definite",
                        history.values());
    }
    work.axpby(1.0, z, rz_next / rz, p);
    rz = rz_next;
  }
  throw SolverError("cg: no convergence to " + std::to_string(options.tolerance) + " in " +
                        std::to_string(options.max_iterations) + " iterations",
                    history.values());
}

/// The right-preconditioned BiCGStab iteration of bicgstab() on any operator.
template <class Op, class M>
SolveResult biconjugate_gradients_stabilized(const Op& a, const M& m,
                                             memory::ArrayView<const double> b,
                                             memory::ArrayView<double> x, memory::Arena& scratch,
                                             const SolveOptions& options) {
  KrylovWorkspace<Op> work(a, scratch);
  ResidualHistory history;
  std::array<memory::ArrayView<double>, 8> vectors;
  run_setup(a, [&] {
    static constexpr std::array<const char*, 8> labels = {
        "bicgstab.r", "bicgstab.r0", "bicgstab.p",     "bicgstab.v",
        "bicgstab.s", "bicgstab.t",  "bicgstab.p_hat", "bicgstab.s_hat"};
    for (std::size_t i = 0; i < vectors.size(); ++i) {
      vectors[i] = work.vector(labels[i]);
    }
  });
  const memory::ArrayView<double> r = vectors[0];
  const memory::ArrayView<double> r0 = vectors[1];
  const memory::ArrayView<double> p = vectors[2];
  const memory::ArrayView<double> v = vectors[3];
  const memory::ArrayView<double> s = vectors[4];
  const memory::ArrayView<double> t = vectors[5];
  const memory::ArrayView<double> p_hat = vectors[6];
  const memory::ArrayView<double> s_hat = vectors[7];
  const Convergence rule{work.norm(b), options.tolerance, options.absolute_tolerance};
  double r_norm = work.initial_residual(b, rule.b_norm, x, r);
  history.push(rule.relative(r_norm));
  if (rule.reached(r_norm)) {
    return rule.result(0, r_norm);
  }
  work.copy(r, r0);
  work.zero(p);
  work.zero(v);
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
    work.precondition(m, p, p_hat);
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
    const double s_norm = work.norm(s);
    if (rule.reached(s_norm)) {
      work.axpby(alpha, p_hat, 1.0, x);
      history.push(rule.relative(s_norm));
      return rule.result(iteration, s_norm);
    }
    work.precondition(m, s, s_hat);
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
    r_norm = work.norm(r);
    history.push(rule.relative(r_norm));
    if (rule.reached(r_norm)) {
      return rule.result(iteration, r_norm);
    }
    rho = rho_next;
  }
  throw SolverError("bicgstab: no convergence to " + std::to_string(options.tolerance) + " in " +
                        std::to_string(options.max_iterations) + " iterations",
                    history.values());
}

}  // namespace detail

/// Solves A x = b by preconditioned conjugate gradients from the initial guess in x. A must be
/// symmetric positive definite: a non-positive curvature p.Ap throws SolverError ("not positive
/// definite"), as does reaching max_iterations.
template <int B>
SolveResult cg(const BsrMatrix<B>& a, memory::ArrayView<const double> b,
               memory::ArrayView<double> x, memory::Arena& scratch,
               const SolveOptions& options = {}) {
  detail::check_square(a);
  const detail::BsrOperator<B> op{&a};
  detail::check_operator(op, b.size(), x.size(), "cg");
  const detail::DiagonalPreconditioner<B> m(op, options.preconditioner, scratch, "cg");
  return detail::conjugate_gradients(op, m, b, x, scratch, options);
}

/// cg() on a matrix-free symmetric positive definite operator (block Jacobi is Jacobi here;
/// either needs the operator's diagonal(), else afem::Error).
template <LinearOperator Op>
SolveResult cg(const Op& a, memory::ArrayView<const double> b, memory::ArrayView<double> x,
               memory::Arena& scratch, const SolveOptions& options = {}) {
  detail::check_operator(a, b.size(), x.size(), "cg");
  std::optional<detail::DiagonalPreconditioner<1>> m;
  detail::run_setup(a, [&] { m.emplace(a, options.preconditioner, scratch, "cg"); });
  return detail::conjugate_gradients(a, *m, b, x, scratch, options);
}

/// cg() preconditioned by the caller's symmetric positive definite operator: z = M^-1 r is
/// preconditioner.apply(r, z, scratch) (a multigrid cycle, an inverse, a polynomial...).
/// options.preconditioner is not read. A preconditioner that is not positive definite (r.z <= 0)
/// throws SolverError.
template <LinearOperator Op, LinearOperator M>
SolveResult cg(const Op& a, memory::ArrayView<const double> b, memory::ArrayView<double> x,
               memory::Arena& scratch, const SolveOptions& options, const M& preconditioner) {
  detail::check_operator(a, b.size(), x.size(), "cg");
  return detail::conjugate_gradients(
      a, detail::operator_preconditioner(preconditioner, a.rows(), "cg"), b, x, scratch, options);
}

/// Solves A x = b by right-preconditioned BiCGStab from the initial guess in x. Throws
/// SolverError on breakdown (rho or omega vanishing) or after max_iterations.
template <int B>
SolveResult bicgstab(const BsrMatrix<B>& a, memory::ArrayView<const double> b,
                     memory::ArrayView<double> x, memory::Arena& scratch,
                     const SolveOptions& options = {}) {
  detail::check_square(a);
  const detail::BsrOperator<B> op{&a};
  detail::check_operator(op, b.size(), x.size(), "bicgstab");
  const detail::DiagonalPreconditioner<B> m(op, options.preconditioner, scratch, "bicgstab");
  return detail::biconjugate_gradients_stabilized(op, m, b, x, scratch, options);
}

/// bicgstab() on a matrix-free operator (block Jacobi is Jacobi here; either needs the operator's
/// diagonal(), else afem::Error).
template <LinearOperator Op>
SolveResult bicgstab(const Op& a, memory::ArrayView<const double> b, memory::ArrayView<double> x,
                     memory::Arena& scratch, const SolveOptions& options = {}) {
  detail::check_operator(a, b.size(), x.size(), "bicgstab");
  std::optional<detail::DiagonalPreconditioner<1>> m;
  detail::run_setup(a, [&] { m.emplace(a, options.preconditioner, scratch, "bicgstab"); });
  return detail::biconjugate_gradients_stabilized(a, *m, b, x, scratch, options);
}

/// bicgstab() preconditioned by the caller's operator (z = M^-1 r is preconditioner.apply(r, z,
/// scratch)); options.preconditioner is not read.
template <LinearOperator Op, LinearOperator M>
SolveResult bicgstab(const Op& a, memory::ArrayView<const double> b, memory::ArrayView<double> x,
                     memory::Arena& scratch, const SolveOptions& options, const M& preconditioner) {
  detail::check_operator(a, b.size(), x.size(), "bicgstab");
  return detail::biconjugate_gradients_stabilized(
      a, detail::operator_preconditioner(preconditioner, a.rows(), "bicgstab"), b, x, scratch,
      options);
}

}  // namespace afem::fem
