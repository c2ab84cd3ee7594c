// BsrMatrix operations and the Krylov solvers against Eigen on random block-sparse systems.
#include <gtest/gtest.h>

#include <thrust/copy.h>
#include <Eigen/Sparse>
#include <Eigen/SparseCholesky>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/memory/thrust_allocator.hpp"
#include "random_bsr.hpp"
#include "reference_assembly.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"

namespace afem::fem {
namespace {

using test::HostBsr;
using test::random_bsr;

template <class T>
class SolverTest : public test::BackendTest {};
using BlockSizes = ::testing::Types<std::integral_constant<int, 1>, std::integral_constant<int, 2>,
                                    std::integral_constant<int, 3>>;
TYPED_TEST_SUITE(SolverTest, BlockSizes);

template <int B>
BsrMatrix<B> upload(const HostBsr& host, memory::Pool& pool) {
  return host.upload<B>(pool);
}

TYPED_TEST(SolverTest, ConjugateGradientsAgreeWithSimplicialLdlt) {
  constexpr int bs = TypeParam::value;
  const HostBsr host = random_bsr<bs>(200, true, 7);
  const BsrMatrix<bs> a = upload<bs>(host, *this->pool_);
  const Eigen::SparseMatrix<double> reference = test::to_eigen(a);
  std::mt19937 random(3);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  Eigen::VectorXd b(reference.rows());
  for (Eigen::Index i = 0; i < b.size(); ++i) {
    b[i] = value(random);
  }
  const Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> ldlt(reference);
  ASSERT_EQ(ldlt.info(), Eigen::Success);
  const Eigen::VectorXd expected = ldlt.solve(b);
  const auto n = static_cast<std::size_t>(b.size());
  auto rhs = memory::borrow_temporary<double>(*this->pool_, n, "test.b");
  auto x = memory::borrow_temporary<double>(*this->pool_, n, "test.x");
  test::copy_to_device(rhs.view(), std::vector<double>(b.data(), b.data() + b.size()));
  for (const Preconditioner preconditioner :
       {Preconditioner::none, Preconditioner::jacobi, Preconditioner::block_jacobi}) {
    test::copy_to_device(x.view(), std::vector<double>(n, 0.0));
    const SolveResult cg_result = cg(a, rhs.view(), x.view(), *this->arena_,
                                     {.tolerance = 1e-12, .preconditioner = preconditioner});
    EXPECT_LE(cg_result.residual, 1e-12);
    EXPECT_GT(cg_result.iterations, 0);
    auto actual = test::copy_to_host(memory::ArrayView<const double>(x.view()));
    EXPECT_LE((Eigen::Map<Eigen::VectorXd>(actual.data(), b.size()) - expected).norm(),
              1e-10 * expected.norm());
    test::copy_to_device(x.view(), std::vector<double>(n, 0.0));
    const SolveResult bicg_result =
        bicgstab(a, rhs.view(), x.view(), *this->arena_,
                 {.tolerance = 1e-12, .preconditioner = preconditioner});
    EXPECT_LE(bicg_result.residual, 1e-12);
    actual = test::copy_to_host(memory::ArrayView<const double>(x.view()));
    EXPECT_LE((Eigen::Map<Eigen::VectorXd>(actual.data(), b.size()) - expected).norm(),
              1e-10 * expected.norm());
  }
  EXPECT_EQ(this->arena_->stats().live_bytes, 0U);
}

TYPED_TEST(SolverTest, BiCgStabSolvesANonsymmetricSystem) {
  constexpr int bs = TypeParam::value;
  const HostBsr host = random_bsr<bs>(150, false, 11);
  const BsrMatrix<bs> a = upload<bs>(host, *this->pool_);
  const Eigen::SparseMatrix<double> reference = test::to_eigen(a);
  Eigen::VectorXd b = Eigen::VectorXd::LinSpaced(reference.rows(), -1.0, 2.0);
  const auto n = static_cast<std::size_t>(b.size());
  auto rhs = memory::borrow_temporary<double>(*this->pool_, n, "test.b");
  auto x = memory::borrow_temporary<double>(*this->pool_, n, "test.x");
  test::copy_to_device(rhs.view(), std::vector<double>(b.data(), b.data() + b.size()));
  test::copy_to_device(x.view(), std::vector<double>(n, 0.0));
  bicgstab(a, rhs.view(), x.view(), *this->arena_,
           {.tolerance = 1e-12, .preconditioner = Preconditioner::block_jacobi});
  auto actual = test::copy_to_host(memory::ArrayView<const double>(x.view()));
  // Checked by Eigen's own product: the residual is as small as asked.
  const Eigen::VectorXd residual =
      reference * Eigen::Map<Eigen::VectorXd>(actual.data(), b.size()) - b;
  EXPECT_LE(residual.norm(), 1.01e-12 * b.norm());
  EXPECT_GT(Eigen::Map<Eigen::VectorXd>(actual.data(), b.size()).norm(), 0.0);
}

TYPED_TEST(SolverTest, SpmvTransposeAndDiagonalMatchEigen) {
  constexpr int bs = TypeParam::value;
  const HostBsr host = random_bsr<bs>(60, false, 5);
  const BsrMatrix<bs> a = upload<bs>(host, *this->pool_);
  const Eigen::SparseMatrix<double> reference = test::to_eigen(a);
  const Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(reference.cols(), 0.5, -1.5);
  const auto n = static_cast<std::size_t>(x.size());
  auto xs = memory::borrow_temporary<double>(*this->pool_, n, "test.x");
  auto ys = memory::borrow_temporary<double>(*this->pool_, n, "test.y");
  test::copy_to_device(xs.view(), std::vector<double>(x.data(), x.data() + x.size()));
  test::copy_to_device(ys.view(), std::vector<double>(n, 1.0));
  spmv(a, xs.view(), ys.view(), *this->arena_, 2.0, -1.0);
  auto y = test::copy_to_host(memory::ArrayView<const double>(ys.view()));
  const Eigen::VectorXd expected = 2.0 * (reference * x) - Eigen::VectorXd::Ones(x.size());
  EXPECT_LE((Eigen::Map<Eigen::VectorXd>(y.data(), x.size()) - expected).norm(),
            1e-13 * expected.norm());

  const BsrMatrix<bs> t = transpose(a, *this->arena_);
  const Eigen::MatrixXd transposed = Eigen::MatrixXd(test::to_eigen(t));
  EXPECT_EQ((transposed - Eigen::MatrixXd(reference).transpose()).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ(t.block_count(), a.block_count());

  auto diagonal = memory::borrow_temporary<double>(*this->pool_, n * bs, "test.diagonal");
  block_diagonal(a, diagonal.view(), *this->arena_);
  const auto d = test::copy_to_host(memory::ArrayView<const double>(diagonal.view()));
  for (std::int32_t r = 0; r < a.block_rows(); ++r) {
    for (int i = 0; i < bs; ++i) {
      for (int j = 0; j < bs; ++j) {
        EXPECT_EQ(d[static_cast<std::size_t>(r * bs * bs + i * bs + j)],
                  reference.coeff(r * bs + i, r * bs + j));
      }
    }
  }
}

TYPED_TEST(SolverTest, DirichletProjectionKeepsTheSystemSymmetricAndImposesTheValues) {
  constexpr int bs = TypeParam::value;
  const HostBsr host = random_bsr<bs>(40, true, 9);
  BsrMatrix<bs> a = upload<bs>(host, *this->pool_);
  const Eigen::MatrixXd before(test::to_eigen(a));
  const auto n = static_cast<std::size_t>(before.rows());
  std::vector<std::uint8_t> mask(n, 0);
  std::vector<double> values(n, 0.0);
  for (std::size_t i = 0; i < n; i += 5) {
    mask[i] = 1;
    values[i] = 0.25 * static_cast<double>(i);
  }
  auto m = memory::borrow_temporary<std::uint8_t>(*this->pool_, n, "test.mask");
  auto g = memory::borrow_temporary<double>(*this->pool_, n, "test.values");
  auto b = memory::borrow_temporary<double>(*this->pool_, n, "test.b");
  auto x = memory::borrow_temporary<double>(*this->pool_, n, "test.x");
  test::copy_to_device(m.view(), mask);
  test::copy_to_device(g.view(), values);
  test::copy_to_device(b.view(), std::vector<double>(n, 1.0));
  test::copy_to_device(x.view(), std::vector<double>(n, 0.0));
  project_dirichlet(a, b.view(), m.view(), g.view(), *this->arena_);
  const Eigen::MatrixXd after(test::to_eigen(a));
  EXPECT_EQ((after - after.transpose()).cwiseAbs().maxCoeff(), 0.0);
  cg(a, b.view(), x.view(), *this->arena_, {.tolerance = 1e-13});
  const auto solution = test::copy_to_host(memory::ArrayView<const double>(x.view()));
  // The fixed dofs take their values; the free ones solve the original rows.
  const Eigen::Map<const Eigen::VectorXd> u(solution.data(), static_cast<Eigen::Index>(n));
  const Eigen::VectorXd residual = before * u - Eigen::VectorXd::Ones(static_cast<Eigen::Index>(n));
  for (std::size_t i = 0; i < n; ++i) {
    if (mask[i] != 0) {
      EXPECT_NEAR(solution[i], values[i], 1e-10);
    } else {
      EXPECT_NEAR(residual[static_cast<Eigen::Index>(i)], 0.0, 1e-9);
    }
  }
}

/// y = (A^T A + I) x applied through A and A^T, with its diagonal computed on the host.
struct NormalOperator {
  const BsrMatrix<1>* a = nullptr;
  const BsrMatrix<1>* at = nullptr;
  memory::ArrayView<double> work;
  memory::ArrayView<const double> diagonal_values;
  [[nodiscard]] std::int64_t rows() const { return a->columns(); }
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y,
             memory::Arena& scratch) const {
    spmv(*a, x, work, scratch);
    auto policy = memory::arena_policy(scratch, "test.thrust");
    thrust::copy(policy, x.begin(), x.end(), y.begin());
    spmv(*at, work, y, scratch, 1.0, 1.0);
  }
  void diagonal(memory::ArrayView<double> d, memory::Arena& scratch) const {
    auto policy = memory::arena_policy(scratch, "test.thrust");
    thrust::copy(policy, diagonal_values.begin(), diagonal_values.end(), d.begin());
  }
};
static_assert(LinearOperator<NormalOperator>);
static_assert(!LinearOperator<BsrMatrix<1>>);

class OperatorSolverTest : public test::BackendTest {};

// cg() on a matrix-free operator gives the solution of the assembled system.
TEST_F(OperatorSolverTest, ConjugateGradientsSolveAMatrixFreeOperator) {
  const HostBsr host = random_bsr<1>(150, false, 11);
  const BsrMatrix<1> a = upload<1>(host, *pool_);
  const BsrMatrix<1> at = transpose(a, *arena_);
  // A^T A + I by hand from the host arrays (Eigen's sparse product does not build under nvcc).
  const auto n = static_cast<std::size_t>(host.rows);
  std::vector<double> dense(n * n, 0.0);
  for (std::size_t r = 0; r < n; ++r) {
    for (auto k = host.offsets[r]; k < host.offsets[r + 1]; ++k) {
      const auto entry = static_cast<std::size_t>(k);
      dense[r * n + static_cast<std::size_t>(host.block_columns[entry])] = host.values[entry];
    }
  }
  std::vector<Eigen::Triplet<double>> triplets;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double sum = i == j ? 1.0 : 0.0;
      for (std::size_t k = 0; k < n; ++k) {
        sum += dense[k * n + i] * dense[k * n + j];
      }
      if (sum != 0.0) {
        triplets.emplace_back(static_cast<int>(i), static_cast<int>(j), sum);
      }
    }
  }
  Eigen::SparseMatrix<double> normal(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(n));
  normal.setFromTriplets(triplets.begin(), triplets.end());
  std::vector<double> diagonal(n);
  Eigen::VectorXd b(normal.rows());
  for (std::size_t i = 0; i < n; ++i) {
    diagonal[i] = normal.coeff(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(i));
    b[static_cast<Eigen::Index>(i)] = std::sin(static_cast<double>(i));
  }
  const Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> ldlt(normal);
  ASSERT_EQ(ldlt.info(), Eigen::Success);
  const Eigen::VectorXd expected = ldlt.solve(b);
  auto rhs = memory::borrow_temporary<double>(*pool_, n, "test.b");
  auto x = memory::borrow_temporary<double>(*pool_, n, "test.x");
  auto work = memory::borrow_temporary<double>(*pool_, n, "test.work");
  auto d = memory::borrow_temporary<double>(*pool_, n, "test.diagonal");
  test::copy_to_device(rhs.view(), std::vector<double>(b.data(), b.data() + b.size()));
  test::copy_to_device(d.view(), diagonal);
  const NormalOperator op{&a, &at, work.view(), d.view()};
  for (const Preconditioner preconditioner : {Preconditioner::none, Preconditioner::jacobi}) {
    test::copy_to_device(x.view(), std::vector<double>(n, 0.0));
    const SolveResult result = cg(op, rhs.view(), x.view(), *arena_,
                                  {.tolerance = 1e-12, .preconditioner = preconditioner});
    EXPECT_LE(result.residual, 1e-12);
    EXPECT_GT(result.iterations, 0);
    auto actual = test::copy_to_host(memory::ArrayView<const double>(x.view()));
    EXPECT_LE((Eigen::Map<Eigen::VectorXd>(actual.data(), b.size()) - expected).norm(),
              1e-10 * expected.norm());
  }
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

class SolverErrorTest : public test::BackendTest {};

TEST_F(SolverErrorTest, ConjugateGradientsRefuseAnIndefiniteMatrix) {
  // diag(1, -1): p.Ap <= 0 for the second direction.
  const std::vector<std::int32_t> offsets = {0, 1, 2};
  const std::vector<std::int32_t> columns = {0, 1};
  const std::vector<double> values = {1.0, -1.0};
  const BsrMatrix<1> a = BsrMatrix<1>::from_host(*pool_, 2, 2, offsets, columns, values);
  auto b = memory::borrow_temporary<double>(*pool_, 2, "test.b");
  auto x = memory::borrow_temporary<double>(*pool_, 2, "test.x");
  test::copy_to_device(b.view(), std::vector<double>{1.0, 1.0});
  test::copy_to_device(x.view(), std::vector<double>{0.0, 0.0});
  try {
    cg(a, b.view(), x.view(), *arena_, {.preconditioner = Preconditioner::none});
    FAIL() << "cg accepted an indefinite matrix";
  } catch (const SolverError& error) {
    EXPECT_NE(std::string(error.what()).find("not positive definite"), std::string::npos)
        << error.what();
    EXPECT_FALSE(error.history().empty());
  }
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

TEST_F(SolverErrorTest, NonConvergenceReportsTheResidualHistory) {
  const HostBsr host = random_bsr<1>(300, true, 1);
  const BsrMatrix<1> a = host.upload<1>(*pool_);
  auto b = memory::borrow_temporary<double>(*pool_, 300, "test.b");
  auto x = memory::borrow_temporary<double>(*pool_, 300, "test.x");
  test::copy_to_device(b.view(), std::vector<double>(300, 1.0));
  test::copy_to_device(x.view(), std::vector<double>(300, 0.0));
  try {
    cg(a, b.view(), x.view(), *arena_, {.tolerance = 1e-14, .max_iterations = 2});
    FAIL();
  } catch (const SolverError& error) {
    EXPECT_NE(std::string(error.what()).find("no convergence"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("residual history"), std::string::npos);
    EXPECT_EQ(error.history().size(), 3U);  // the initial residual and two iterations
    EXPECT_GT(error.history()[1], 1e-14);
  }
}

// A long solve keeps its last 64 residuals, oldest first: one more iteration shifts them by one.
TEST_F(SolverErrorTest, TheResidualHistoryKeepsTheLast64ResidualsOldestFirst) {
  const HostBsr host = random_bsr<1>(300, true, 1);
  const BsrMatrix<1> a = host.upload<1>(*pool_);
  auto b = memory::borrow_temporary<double>(*pool_, 300, "test.b");
  auto x = memory::borrow_temporary<double>(*pool_, 300, "test.x");
  const auto history_after = [&](int iterations) {
    test::copy_to_device(b.view(), std::vector<double>(300, 1.0));
    test::copy_to_device(x.view(), std::vector<double>(300, 0.0));
    try {
      cg(a, b.view(), x.view(), *arena_,
         {.tolerance = 1e-300,
          .max_iterations = iterations,
          .preconditioner = Preconditioner::none});
    } catch (const SolverError& error) {
      return error.history();
    }
    ADD_FAILURE() << "converged to 1e-300 in " << iterations << " iterations";
    return std::vector<double>{};
  };
  const std::vector<double> shorter = history_after(99);
  const std::vector<double> longer = history_after(100);
  ASSERT_EQ(shorter.size(), 64U);
  ASSERT_EQ(longer.size(), 64U);
  EXPECT_TRUE(std::equal(shorter.begin() + 1, shorter.end(), longer.begin()));
  EXPECT_NE(longer.back(), shorter.back());
}

TEST_F(SolverErrorTest, RefusesMalformedHostArraysAndMismatchedVectors) {
  const std::vector<std::int32_t> offsets = {0, 2, 3};
  const std::vector<std::int32_t> decreasing = {1, 0, 1};
  const std::vector<std::int32_t> columns = {0, 1, 1};
  const std::vector<double> values = {1.0, 2.0, 3.0};
  EXPECT_THROW(BsrMatrix<1>::from_host(*pool_, 2, 2, offsets, decreasing, values), Error);
  EXPECT_THROW(BsrMatrix<1>::from_host(*pool_, 2, 1, offsets, columns, values), Error);
  EXPECT_THROW(BsrMatrix<2>::from_host(*pool_, 2, 2, offsets, columns, values), Error);
  EXPECT_THROW(BsrMatrix<1>::from_host(*pool_, -1, 2, offsets, columns, values), Error);
  // Offsets that rise past the column count and then fall are refused before any column is read.
  const std::vector<std::int32_t> rise_and_fall = {0, 2, 1};
  const std::vector<std::int32_t> one_column = {0};
  const std::vector<double> one_value = {1.0};
  try {
    (void)BsrMatrix<1>::from_host(*pool_, 2, 2, rise_and_fall, one_column, one_value);
    FAIL() << "offsets 0, 2, 1 were accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("offsets decrease at row 1"), std::string::npos)
        << error.what();
  }
  const BsrMatrix<1> a = BsrMatrix<1>::from_host(*pool_, 2, 2, offsets, columns, values);
  auto b = memory::borrow_temporary<double>(*pool_, 3, "test.b");
  auto x = memory::borrow_temporary<double>(*pool_, 2, "test.x");
  EXPECT_THROW(cg(a, b.view(), x.view(), *arena_), Error);
  EXPECT_THROW(spmv(a, b.view(), x.view(), *arena_), Error);
}

// Work vectors come from the arena as the last user left them: a solve must not read them before
// writing them (0 * NaN is NaN), whatever they held.
TEST_F(SolverErrorTest, SolvesInAnArenaWhoseMemoryHeldNotANumbers) {
  const HostBsr host = random_bsr<1>(100, true, 2);
  const BsrMatrix<1> a = host.upload<1>(*pool_);
  auto b = memory::borrow_temporary<double>(*pool_, 100, "test.b");
  auto x = memory::borrow_temporary<double>(*pool_, 100, "test.x");
  test::copy_to_device(b.view(), std::vector<double>(100, 1.0));
  const auto poison_arena = [&] {
    auto junk = memory::borrow_temporary<double>(*arena_, 4000, "test.junk");
    test::copy_to_device(junk.view(), std::vector<double>(4000, std::nan("")));
  };
  for (const Preconditioner preconditioner : {Preconditioner::none, Preconditioner::jacobi}) {
    poison_arena();
    test::copy_to_device(x.view(), std::vector<double>(100, 0.0));
    EXPECT_LE(cg(a, b.view(), x.view(), *arena_, {.preconditioner = preconditioner}).residual,
              1e-10);
    poison_arena();
    test::copy_to_device(x.view(), std::vector<double>(100, 0.0));
    EXPECT_LE(bicgstab(a, b.view(), x.view(), *arena_, {.preconditioner = preconditioner}).residual,
              1e-10);
  }
  // b = 0 gives x = 0 even from a guess that is not a number.
  test::copy_to_device(b.view(), std::vector<double>(100, 0.0));
  test::copy_to_device(x.view(), std::vector<double>(100, std::nan("")));
  EXPECT_EQ(cg(a, b.view(), x.view(), *arena_).iterations, 0);
  EXPECT_EQ(test::copy_to_host(memory::ArrayView<const double>(x.view())),
            std::vector<double>(100, 0.0));
}

TEST_F(SolverErrorTest, BlockJacobiRefusesASingularDiagonalBlock) {
  const std::vector<std::int32_t> offsets = {0, 1};
  const std::vector<std::int32_t> columns = {0};
  const std::vector<double> values = {1.0, 2.0, 2.0, 4.0};  // rank 1
  const BsrMatrix<2> a = BsrMatrix<2>::from_host(*pool_, 1, 1, offsets, columns, values);
  auto b = memory::borrow_temporary<double>(*pool_, 2, "test.b");
  auto x = memory::borrow_temporary<double>(*pool_, 2, "test.x");
  test::copy_to_device(b.view(), std::vector<double>{1.0, 1.0});
  test::copy_to_device(x.view(), std::vector<double>{0.0, 0.0});
  try {
    cg(a, b.view(), x.view(), *arena_, {.preconditioner = Preconditioner::block_jacobi});
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("block row 0"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace afem::fem
