// StencilOperator: a grid matrix applied through its interior stencil gives bit for bit the
// matrix's product, on 2D and 3D grids, with Dirichlet rows, varying rows and every alpha/beta;
// it finds the rows it should, and refuses a matrix of another size.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/multigrid.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/stencil_operator.hpp"
#include "arenafem/geometry/grid.hpp"
#include "poisson.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"
#include "support/thread_count.hpp"
#include "unit_box.hpp"

namespace afem::fem {
namespace {

class StencilOperatorTest : public test::BackendTest {
protected:
  /// x_i = sin(0.7 i) + 0.1 (i % 3): no two entries alike, no symmetry to hide a wrong column.
  std::vector<double> sample_vector(std::size_t n) {
    std::vector<double> host(n);
    for (std::size_t i = 0; i < n; ++i) {
      host[i] = std::sin(0.7 * static_cast<double>(i)) + 0.1 * static_cast<double>(i % 3);
    }
    return host;
  }

  /// The operator's product against the matrix's spmv for (alpha, beta) = (1, 0), (-1, 1) and
  /// (0.5, -2): equal bit for bit.
  void expect_same_products(const StencilOperator& op) {
    const auto n = static_cast<std::size_t>(op.rows());
    const std::vector<double> host_x = sample_vector(n);
    auto x = memory::borrow_temporary<double>(*pool_, n, "test.x");
    auto expected = memory::borrow_temporary<double>(*pool_, n, "test.expected");
    auto actual = memory::borrow_temporary<double>(*pool_, n, "test.actual");
    test::copy_to_device(x.view(), host_x);
    const memory::ArrayView<const double> xv = x.view();
    for (const auto& [alpha, beta] :
         std::vector<std::array<double, 2>>{{1.0, 0.0}, {-1.0, 1.0}, {0.5, -2.0}}) {
      const std::vector<double> start = sample_vector(n + 5);
      test::copy_to_device(expected.view(), std::vector<double>(start.begin() + 5, start.end()));
      test::copy_to_device(actual.view(), std::vector<double>(start.begin() + 5, start.end()));
      spmv(op.matrix(), xv, expected.view(), *arena_, alpha, beta);
      op.apply(xv, actual.view(), *arena_, alpha, beta);
      EXPECT_EQ(test::copy_to_host(memory::ArrayView<const double>(actual.view())),
                test::copy_to_host(memory::ArrayView<const double>(expected.view())))
          << "alpha " << alpha << ", beta " << beta;
    }
  }
};

TEST_F(StencilOperatorTest, Grid2DLaplacianIsAppliedFromItsStencilBitForBit) {
  const std::int32_t n = 20;
  const auto grid = test::UnitBox<geometry::Grid2D>::make(n, *pool_, *arena_);
  for (const bool dirichlet : {false, true}) {
    SCOPED_TRACE(dirichlet ? "Dirichlet rows" : "no Dirichlet rows");
    const test::Poisson p = test::assemble_poisson(*grid, dirichlet, *pool_, *arena_);
    const StencilOperator op(p.matrix, std::array<std::int32_t, 2>{n, n}, *arena_);
    // Every vertex one layer inside holds the stencil; with Dirichlet rows, the layer next to the
    // boundary lost its entries in the held columns.
    const std::int64_t inner = dirichlet ? n - 3 : n - 1;
    EXPECT_EQ(op.stencil_rows(), inner * inner);
    expect_same_products(op);
  }
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

TEST_F(StencilOperatorTest, Grid3DLaplacianOfUnequalAxesIsAppliedBitForBit) {
  const geometry::Grid3D grid({0.0, 0.0, 0.0}, {0.1, 0.1, 0.1}, {9, 6, 7});
  const test::Poisson p = test::assemble_poisson(grid, true, *pool_, *arena_);
  const StencilOperator op(p.matrix, std::array<std::int32_t, 3>{9, 6, 7}, *arena_);
  EXPECT_EQ(op.stencil_rows(), std::int64_t{6} * 3 * 4);
  expect_same_products(op);
  for (const int threads : {1, 2, 3}) {
    const test::ThreadCount scope(threads);
    expect_same_products(op);
  }
}

TEST_F(StencilOperatorTest, ARowThatDiffersFromTheStencilComesFromTheMatrix) {
  const std::int32_t n = 12;
  const auto grid = test::UnitBox<geometry::Grid2D>::make(n, *pool_, *arena_);
  test::Poisson p = test::assemble_poisson(*grid, false, *pool_, *arena_);
  const std::array<std::int32_t, 2> cells{n, n};
  const StencilOperator before(p.matrix, cells, *arena_);
  // One entry of the interior vertex (4, 5) scaled: a varying coefficient there.
  const std::size_t row = 4 + std::size_t{13} * 5;
  std::vector<std::int32_t> offsets = test::copy_to_host(p.matrix.view().offsets);
  std::vector<double> values =
      test::copy_to_host(memory::ArrayView<const double>(p.matrix.view().values));
  values[static_cast<std::size_t>(offsets[row]) + 2] *= 1.5;
  test::copy_to_device(p.matrix.view().values, values);
  const StencilOperator after(p.matrix, cells, *arena_);
  EXPECT_EQ(after.stencil_rows(), before.stencil_rows() - 1);
  expect_same_products(after);
  // A value of the centre vertex's row: then only the rows equal to the centre's use it.
  values[static_cast<std::size_t>(offsets[6 + std::size_t{13} * 6]) + 4] += 1.0;
  test::copy_to_device(p.matrix.view().values, values);
  const StencilOperator centre_changed(p.matrix, cells, *arena_);
  EXPECT_EQ(centre_changed.stencil_rows(), 1);
  expect_same_products(centre_changed);
}

TEST_F(StencilOperatorTest, SmallGridsAndOtherPatternsFallBackToTheMatrix) {
  // Two cells along y: no vertex has neighbours on both sides along every axis but the middle
  // layer; the centre row is then not interior along y? It is (vertex 1 of 3): 1 x (n - 1) rows.
  const geometry::Grid2D thin({0.0, 0.0}, {0.1, 0.1}, {8, 2});
  const test::Poisson p = test::assemble_poisson(thin, false, *pool_, *arena_);
  const StencilOperator op(p.matrix, std::array<std::int32_t, 2>{8, 2}, *arena_);
  EXPECT_EQ(op.stencil_rows(), 7);
  expect_same_products(op);
  const geometry::Grid2D line({0.0, 0.0}, {0.1, 0.1}, {8, 1});
  const test::Poisson q = test::assemble_poisson(line, false, *pool_, *arena_);
  const StencilOperator none(q.matrix, std::array<std::int32_t, 2>{8, 1}, *arena_);
  EXPECT_EQ(none.stencil_rows(), 0);
  expect_same_products(none);
  // The same matrix read as a grid of other axes: the centre row's columns are not a stencil.
  const StencilOperator transposed(q.matrix, std::array<std::int32_t, 2>{1, 8}, *arena_);
  EXPECT_EQ(transposed.stencil_rows(), 0);
  expect_same_products(transposed);
}

TEST_F(StencilOperatorTest, RefusesAMatrixOfAnotherSize) {
  const auto grid = test::UnitBox<geometry::Grid2D>::make(6, *pool_, *arena_);
  const test::Poisson p = test::assemble_poisson(*grid, false, *pool_, *arena_);
  try {
    const StencilOperator op(p.matrix, std::array<std::int32_t, 2>{6, 5}, *arena_);
    FAIL() << "a grid of 42 vertices for a matrix of 49 rows was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("49 rows and the grid 42 vertices"), std::string::npos)
        << e.what();
  }
  try {
    const StencilOperator op(p.matrix, std::array<std::int32_t, 2>{6, 0}, *arena_);
    FAIL() << "an axis of 0 cells was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("0 cells"), std::string::npos) << e.what();
  }
}

TEST_F(StencilOperatorTest, CgOnTheOperatorGivesTheMatrixesSolutionBitForBit) {
  const std::int32_t n = 24;
  const auto grid = test::UnitBox<geometry::Grid3D>::make(n, *pool_, *arena_);
  const test::Poisson p = test::assemble_poisson(*grid, true, *pool_, *arena_);
  const std::array<std::int32_t, 3> cells{n, n, n};
  const StencilOperator op(p.matrix, cells, *arena_);
  const Multigrid<1> mg(p.matrix, cells, *arena_);
  const auto size = static_cast<std::size_t>(p.dofs);
  std::vector<std::vector<double>> solutions;
  std::vector<int> iterations;
  for (const bool stencil : {false, true}) {
    auto x = memory::borrow_temporary<double>(*pool_, size, "test.x");
    fill(x.view(), 0.0, *arena_);
    const memory::ArrayView<const double> b = p.rhs.view();
    const SolveOptions options{.tolerance = 1e-10, .max_iterations = 200};
    const SolveResult result = stencil
                                   ? cg(op, b, x.view(), *arena_, options, mg)
                                   : cg(as_operator(p.matrix), b, x.view(), *arena_, options, mg);
    iterations.push_back(result.iterations);
    solutions.push_back(test::copy_to_host(memory::ArrayView<const double>(x.view())));
  }
  EXPECT_EQ(iterations[0], iterations[1]);
  EXPECT_EQ(solutions[0], solutions[1]);
  EXPECT_LE(iterations[0], 15);
}

}  // namespace
}  // namespace afem::fem
