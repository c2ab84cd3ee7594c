#pragma once

/// @file
/// LinearOperator: what the solvers apply (rows, columns, y = A x), and operators built from
/// others: a BsrMatrix and its transpose as operators, a diagonal, products, sums, an operator
/// with fixed rows and columns, and one with a given diagonal for Jacobi. They hold views and
/// pointers only: the matrices and vectors they read must outlive them. Their intermediate
/// vectors are borrowed from the arena that apply() is given and given back before it returns.

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/detail/check_size.hpp"
#include "arenafem/fem/vector_ops.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::fem {

/// A linear operator: its number of rows, and y = A x (x: columns() entries, or rows() for an
/// operator without columns(), which is square). x and y must not overlap. The operator keeps
/// whatever it applies; apply borrows any scratch from the arena and gives it back.
template <class Op>
concept LinearOperator = requires(const Op& a, memory::ArrayView<const double> x,
                                  memory::ArrayView<double> y, memory::Arena& scratch) {
  { a.rows() } -> std::convertible_to<std::int64_t>;
  a.apply(x, y, scratch);
};

/// An operator that also gives its diagonal (one entry per row), which Jacobi preconditioning
/// needs.
template <class Op>
concept DiagonalOperator = LinearOperator<Op> &&
    requires(const Op& a, memory::ArrayView<double> d, memory::Arena& scratch) {
  a.diagonal(d, scratch);
};

/// An operator whose rows are distributed over processes (MPI ranks): global_sum(v) adds v over
/// them, so that the solvers' dot products and norms cover the whole vector.
template <class Op>
concept DistributedOperator = LinearOperator<Op> && requires(const Op& a, double value) {
  { a.global_sum(value) } -> std::convertible_to<double>;
};

/// An operator that can compute only some rows of y = A x: apply_where(keep, x, y, scratch)
/// writes the rows i where keep(i) is true (a device-callable predicate) and may skip the others,
/// reading nothing for them. Compositions use it to skip rows whose result is thrown away (the
/// fixed rows of with_fixed, the zero weights of a scaling).
template <class Op, class Keep>
concept RowSelectiveOperator = LinearOperator<Op> &&
    requires(const Op& a, Keep keep, memory::ArrayView<const double> x, memory::ArrayView<double> y,
             memory::Arena& scratch) {
  a.apply_where(keep, x, y, scratch);
};

/// The rows whose `fixed` entry is zero.
struct FreeRows {
  memory::ArrayView<const std::uint8_t> fixed;
  AFEM_HOST_DEVICE bool operator()(std::size_t i) const { return fixed[i] == 0; }
};

/// The entries where `w` is not zero.
struct NonzeroEntries {
  memory::ArrayView<const double> w;
  AFEM_HOST_DEVICE bool operator()(std::size_t i) const { return w[i] != 0.0; }
};

/// y = A x on (at least) the rows where keep(i) is true: apply_where when `a` has it, else apply.
template <LinearOperator Op, class Keep>
void apply_rows(const Op& a, Keep keep, memory::ArrayView<const double> x,
                memory::ArrayView<double> y, memory::Arena& scratch) {
  if constexpr (RowSelectiveOperator<Op, Keep>) {
    a.apply_where(keep, x, y, scratch);
  } else {
    a.apply(x, y, scratch);
  }
}

/// The columns of `a`: a.columns() where it has one, else a.rows().
template <LinearOperator Op>
std::int64_t operator_columns(const Op& a) {
  if constexpr (requires { a.columns(); }) {
    return static_cast<std::int64_t>(a.columns());
  } else {
    return static_cast<std::int64_t>(a.rows());
  }
}

/// A BsrMatrix read as an operator (y = A x by spmv; its diagonal when the blocks are square and
/// the matrix too).
template <int R, int C>
class MatrixOperator {
public:
  explicit MatrixOperator(const BsrMatrix<R, C>& a) : a_(&a) {}
  [[nodiscard]] std::int64_t rows() const { return a_->rows(); }
  [[nodiscard]] std::int64_t columns() const { return a_->columns(); }
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y,
             memory::Arena& scratch) const {
    spmv(*a_, x, y, scratch);
  }
  template <class Keep>
  void apply_where(Keep keep, memory::ArrayView<const double> x, memory::ArrayView<double> y,
                   memory::Arena& scratch) const {
    spmv_where(*a_, keep, x, y, scratch);
  }
  /// The scalar diagonal (the diagonal entries of the diagonal blocks).
  void diagonal(memory::ArrayView<double> d, memory::Arena& scratch) const requires(R == C) {
    AFEM_EXPECTS(a_->block_rows() == a_->block_columns(),
                 "MatrixOperator::diagonal: the matrix is not square");
    detail::check_size(d.size(), a_->rows(), "MatrixOperator::diagonal");
    auto blocks = memory::borrow_temporary<double>(
        scratch, static_cast<std::size_t>(a_->rows()) * R, "operator.diagonal_blocks");
    block_diagonal(*a_, blocks.view(), scratch);
    const memory::ArrayView<const double> b = blocks.view();
    auto policy = memory::arena_policy(scratch, "operator.thrust");
    thrust::for_each_n(
        policy, thrust::counting_iterator<std::size_t>(0), d.size(),
        [=] AFEM_HOST_DEVICE(std::size_t i) { d[i] = b[(i / R) * R * R + (i % R) * (R + 1)]; });
  }

private:
  const BsrMatrix<R, C>* a_;
};

/// `a` as an operator; the matrix must outlive it.
template <int R, int C>
MatrixOperator<R, C> as_operator(const BsrMatrix<R, C>& a) {
  return MatrixOperator<R, C>(a);
}
template <int R, int C>
void as_operator(const BsrMatrix<R, C>&& a) = delete;

/// A^T of a BsrMatrix, applied by spmv_transposed (no transposed copy; the matrix keeps a column
/// index of its pattern in its pool, built on the first product).
template <int R, int C>
class TransposedOperator {
public:
  explicit TransposedOperator(const BsrMatrix<R, C>& a) : a_(&a) {}
  [[nodiscard]] std::int64_t rows() const { return a_->columns(); }
  [[nodiscard]] std::int64_t columns() const { return a_->rows(); }
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y,
             memory::Arena& scratch) const {
    spmv_transposed(*a_, x, y, scratch);
  }
  template <class Keep>
  void apply_where(Keep keep, memory::ArrayView<const double> x, memory::ArrayView<double> y,
                   memory::Arena& scratch) const {
    spmv_transposed_where(*a_, keep, x, y, scratch);
  }

private:
  const BsrMatrix<R, C>* a_;
};

/// A^T as an operator; the matrix must outlive it.
template <int R, int C>
TransposedOperator<R, C> transposed(const BsrMatrix<R, C>& a) {
  return TransposedOperator<R, C>(a);
}
template <int R, int C>
void transposed(const BsrMatrix<R, C>&& a) = delete;

/// diag(w): y_i = w_i x_i, and y_i = 0 where w_i = 0 whatever x_i holds (a structural zero: a
/// product scaling(w) B computes B x only where w is not zero, when B can compute selected rows).
class ScalingOperator {
public:
  explicit ScalingOperator(memory::ArrayView<const double> w) : w_(w) {}
  [[nodiscard]] std::int64_t rows() const { return static_cast<std::int64_t>(w_.size()); }
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y,
             memory::Arena& scratch) const {
    apply_where(AllRows{}, x, y, scratch);
  }
  template <class Keep>
  void apply_where(Keep keep, memory::ArrayView<const double> x, memory::ArrayView<double> y,
                   memory::Arena& scratch) const {
    detail::check_size(x.size(), rows(), "ScalingOperator (x)");
    detail::check_size(y.size(), rows(), "ScalingOperator (y)");
    const memory::ArrayView<const double> w = w_;
    auto policy = memory::arena_policy(scratch, "operator.thrust");
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), w.size(),
                       [=] AFEM_HOST_DEVICE(std::size_t i) {
                         if (keep(i)) {
                           y[i] = w[i] == 0.0 ? 0.0 : w[i] * x[i];
                         }
                       });
  }
  void diagonal(memory::ArrayView<double> d, memory::Arena& scratch) const { copy(w_, d, scratch); }
  /// The entries of x that apply() reads.
  [[nodiscard]] NonzeroEntries read_entries() const { return {w_}; }

private:
  memory::ArrayView<const double> w_;
};

/// diag(w) as an operator; w must outlive it.
inline ScalingOperator scaling(memory::ArrayView<const double> w) {
  return ScalingOperator(w);
}

/// A B: y = A (B x), B x in the arena ("operator.product"). When A is a scaling, B x is computed
/// only where its weight is not zero.
template <LinearOperator A, LinearOperator B>
class ProductOperator {
public:
  ProductOperator(A a, B b) : a_(std::move(a)), b_(std::move(b)) {
    AFEM_EXPECTS(operator_columns(a_) == b_.rows(),
                 "product: the left operator has " + std::to_string(operator_columns(a_)) +
                     " columns and the right one " + std::to_string(b_.rows()) + " rows");
  }
  [[nodiscard]] std::int64_t rows() const { return a_.rows(); }
  [[nodiscard]] std::int64_t columns() const { return operator_columns(b_); }
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y,
             memory::Arena& scratch) const {
    apply_where(AllRows{}, x, y, scratch);
  }
  template <class Keep>
  void apply_where(Keep keep, memory::ArrayView<const double> x, memory::ArrayView<double> y,
                   memory::Arena& scratch) const {
    auto between = memory::borrow_temporary<double>(scratch, static_cast<std::size_t>(b_.rows()),
                                                    "operator.product");
    if constexpr (requires { a_.read_entries(); }) {
      apply_rows(b_, a_.read_entries(), x, between.view(), scratch);
    } else {
      b_.apply(x, between.view(), scratch);
    }
    apply_rows(a_, keep, memory::ArrayView<const double>(between.view()), y, scratch);
  }

private:
  A a_;
  B b_;
};

/// The product of the operators, applied right to left: product(a, b, c) x = a (b (c x)). The
/// operators are copied (they are views); sizes must chain, else afem::Error.
template <LinearOperator A, LinearOperator B>
ProductOperator<A, B> product(A a, B b) {
  return ProductOperator<A, B>(std::move(a), std::move(b));
}
template <LinearOperator A, LinearOperator B, LinearOperator... Rest>
requires(sizeof...(Rest) > 0) auto product(A a, B b, Rest... rest) {
  return product(std::move(a), product(std::move(b), std::move(rest)...));
}

/// A + B: y = A x + B x, B x in the arena ("operator.sum").
template <LinearOperator A, LinearOperator B>
class SumOperator {
public:
  SumOperator(A a, B b) : a_(std::move(a)), b_(std::move(b)) {
    AFEM_EXPECTS(a_.rows() == b_.rows() && operator_columns(a_) == operator_columns(b_),
                 "sum: operators of " + std::to_string(a_.rows()) + " x " +
                     std::to_string(operator_columns(a_)) + " and " + std::to_string(b_.rows()) +
                     " x " + std::to_string(operator_columns(b_)));
  }
  [[nodiscard]] std::int64_t rows() const { return a_.rows(); }
  [[nodiscard]] std::int64_t columns() const { return operator_columns(a_); }
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y,
             memory::Arena& scratch) const {
    apply_where(AllRows{}, x, y, scratch);
  }
  template <class Keep>
  void apply_where(Keep keep, memory::ArrayView<const double> x, memory::ArrayView<double> y,
                   memory::Arena& scratch) const {
    auto other = memory::borrow_temporary<double>(scratch, y.size(), "operator.sum");
    apply_rows(b_, keep, x, other.view(), scratch);
    apply_rows(a_, keep, x, y, scratch);
    const memory::ArrayView<const double> o = other.view();
    auto policy = memory::arena_policy(scratch, "operator.thrust");
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), y.size(),
                       [=] AFEM_HOST_DEVICE(std::size_t i) {
                         if (keep(i)) {
                           y[i] += o[i];
                         }
                       });
  }
  /// The sum of the diagonals, when both operators give theirs.
  void diagonal(memory::ArrayView<double> d, memory::Arena& scratch) const
      requires(DiagonalOperator<A>&& DiagonalOperator<B>) {
    auto other = memory::borrow_temporary<double>(scratch, d.size(), "operator.sum");
    b_.diagonal(other.view(), scratch);
    a_.diagonal(d, scratch);
    axpby(1.0, other.view(), 1.0, d, scratch);
  }

private:
  A a_;
  B b_;
};

/// a + b (copied; they are views).
template <LinearOperator A, LinearOperator B>
SumOperator<A, B> sum(A a, B b) {
  return SumOperator<A, B>(std::move(a), std::move(b));
}

/// A square operator with fixed dofs: on a fixed row y_i = x_i, and x is read as 0 on fixed
/// columns, so the free block of A stays as it was and the fixed one is the identity (symmetric
/// when A is). `fixed` has one entry per row, nonzero where fixed. x with its fixed entries zeroed
/// is in the arena ("operator.free_part"); A computes only the free rows where it can.
template <LinearOperator A>
class ConstrainedOperator {
public:
  ConstrainedOperator(A a, memory::ArrayView<const std::uint8_t> fixed)
      : a_(std::move(a)), fixed_(fixed) {
    AFEM_EXPECTS(operator_columns(a_) == a_.rows(), "with_fixed: the operator is not square (" +
                                                        std::to_string(a_.rows()) + " x " +
                                                        std::to_string(operator_columns(a_)) + ")");
    detail::check_size(fixed_.size(), a_.rows(), "with_fixed (fixed)");
  }
  [[nodiscard]] std::int64_t rows() const { return a_.rows(); }
  [[nodiscard]] std::int64_t columns() const { return a_.rows(); }
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y,
             memory::Arena& scratch) const {
    detail::check_size(x.size(), rows(), "ConstrainedOperator (x)");
    auto free_part = memory::borrow_temporary<double>(scratch, x.size(), "operator.free_part");
    const memory::ArrayView<double> f = free_part.view();
    const memory::ArrayView<const std::uint8_t> fixed = fixed_;
    auto policy = memory::arena_policy(scratch, "operator.thrust");
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), x.size(),
                       [=] AFEM_HOST_DEVICE(std::size_t i) { f[i] = fixed[i] != 0 ? 0.0 : x[i]; });
    apply_rows(a_, FreeRows{fixed}, memory::ArrayView<const double>(f), y, scratch);
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), x.size(),
                       [=] AFEM_HOST_DEVICE(std::size_t i) {
                         if (fixed[i] != 0) {
                           y[i] = x[i];
                         }
                       });
  }
  /// A's diagonal with 1 on the fixed rows.
  void diagonal(memory::ArrayView<double> d,
                memory::Arena& scratch) const requires DiagonalOperator<A> {
    a_.diagonal(d, scratch);
    const memory::ArrayView<const std::uint8_t> fixed = fixed_;
    auto policy = memory::arena_policy(scratch, "operator.thrust");
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), d.size(),
                       [=] AFEM_HOST_DEVICE(std::size_t i) {
                         if (fixed[i] != 0) {
                           d[i] = 1.0;
                         }
                       });
  }

private:
  A a_;
  memory::ArrayView<const std::uint8_t> fixed_;
};

/// `a` with the dofs where `fixed` is nonzero held (see ConstrainedOperator); `fixed` must outlive
/// it.
template <LinearOperator A>
ConstrainedOperator<A> with_fixed(A a, memory::ArrayView<const std::uint8_t> fixed) {
  return ConstrainedOperator<A>(std::move(a), fixed);
}

/// `a` with a diagonal computed apart (e.g. by weighted_gram_diagonal for a product whose
/// diagonal no operator gives), so that Jacobi can precondition it.
template <LinearOperator A>
class WithDiagonal {
public:
  WithDiagonal(A a, memory::ArrayView<const double> d) : a_(std::move(a)), d_(d) {
    detail::check_size(d_.size(), a_.rows(), "with_diagonal (d)");
  }
  [[nodiscard]] std::int64_t rows() const { return a_.rows(); }
  [[nodiscard]] std::int64_t columns() const { return operator_columns(a_); }
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y,
             memory::Arena& scratch) const {
    a_.apply(x, y, scratch);
  }
  void diagonal(memory::ArrayView<double> d, memory::Arena& scratch) const { copy(d_, d, scratch); }

private:
  A a_;
  memory::ArrayView<const double> d_;
};

/// `a` whose diagonal() is `d`; d must outlive it.
template <LinearOperator A>
WithDiagonal<A> with_diagonal(A a, memory::ArrayView<const double> d) {
  return WithDiagonal<A>(std::move(a), d);
}

}  // namespace afem::fem
