// StencilOperator: a grid matrix applied through its interior stencil gives bit for bit the
// matrix's product, on 2D and 3D grids, with Dirichlet rows, varying rows and every alpha/beta;
// it finds the rows it should, and refuses a matrix of another size.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/multigrid.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/stencil_operator.hpp"
#include "arenafem/geometry/grid.hpp"
#include "line_coefficient_matrix.hpp"
#include "poisson.hpp"
#include "random_bsr.hpp"
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

TEST_F(StencilOperatorTest, RowsThatRepeatTheRowBeforeThemAreAppliedFromTheirRunBitForBit) {
  // Lines of 41 and 14 vertices: runs of 38 and 11 repeated rows (blocks of 8 and 4 and single
  // rows), broken in one line by a row of its own and the row after it.
  const std::vector<std::vector<std::int32_t>> grids{{41, 9}, {14, 5, 6}};
  for (const auto& vertices : grids) {
    SCOPED_TRACE(std::to_string(vertices.size()) + "D");
    const std::int32_t n = vertices[0];
    const std::int32_t varied = 2 * n + 7;
    const BsrMatrix<1> a = test::line_coefficient_matrix(vertices, varied).upload<1>(*pool_);
    const std::int64_t lines = a.rows() / n;
    std::int64_t stencil_rows = 0;
    std::int64_t repeated_rows = 0;
    if (vertices.size() == 2) {
      const StencilOperator op(a, std::array<std::int32_t, 2>{vertices[0] - 1, vertices[1] - 1},
                               *arena_);
      stencil_rows = op.stencil_rows();
      repeated_rows = op.repeated_rows();
      const std::vector<std::uint8_t> flags = test::copy_to_host(op.stencil_flags());
      EXPECT_EQ(flags[static_cast<std::size_t>(varied)], detail::matrix_row);
      EXPECT_EQ(flags[static_cast<std::size_t>(varied) + 1], detail::matrix_row);
      EXPECT_EQ(flags[static_cast<std::size_t>(varied) + 2], detail::repeated_row);
      expect_same_products(op);
    } else {
      const StencilOperator op(
          a, std::array<std::int32_t, 3>{vertices[0] - 1, vertices[1] - 1, vertices[2] - 1},
          *arena_);
      stencil_rows = op.stencil_rows();
      repeated_rows = op.repeated_rows();
      for (const int threads : {1, 2, 3}) {
        const test::ThreadCount scope(threads);
        expect_same_products(op);
      }
    }
    EXPECT_EQ(stencil_rows, 0);
    // Rows 2 to n - 2 of each line repeat the row before them (row 1 follows a boundary row with
    // an entry fewer), but for the varied row and the one after it.
    EXPECT_EQ(repeated_rows, lines * (n - 3) - 2);
  }
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

TEST_F(StencilOperatorTest, SmallGridsAndOtherPatternsFallBackToTheMatrix) {
  // Two cells along y: only the middle layer of vertices has neighbours on both sides of every
  // axis, 7 rows (too few for the stencil product; apply() is then spmv, the same bits anyway).
  const geometry::Grid2D thin({0.0, 0.0}, {0.1, 0.1}, {8, 2});
  const test::Poisson p = test::assemble_poisson(thin, false, *pool_, *arena_);
  const StencilOperator op(p.matrix, std::array<std::int32_t, 2>{8, 2}, *arena_);
  EXPECT_EQ(op.stencil_rows(), 7);
  expect_same_products(op);
  // One cell along y: no vertex is inside, no stencil.
  const geometry::Grid2D line({0.0, 0.0}, {0.1, 0.1}, {8, 1});
  const test::Poisson q = test::assemble_poisson(line, false, *pool_, *arena_);
  const StencilOperator none(q.matrix, std::array<std::int32_t, 2>{8, 1}, *arena_);
  EXPECT_EQ(none.stencil_rows(), 0);
  expect_same_products(none);
  // A tridiagonal matrix of a 7 x 7 grid's size: the centre row holds 3 entries, not a stencil.
  test::HostBsr tridiagonal;
  tridiagonal.rows = tridiagonal.columns = 49;
  tridiagonal.offsets.push_back(0);
  for (std::int32_t r = 0; r < 49; ++r) {
    for (std::int32_t c = r - 1; c <= r + 1; ++c) {
      if (c >= 0 && c < 49) {
        tridiagonal.block_columns.push_back(c);
        tridiagonal.values.push_back(c == r ? 2.0 : -1.0);
      }
    }
    tridiagonal.offsets.push_back(static_cast<std::int32_t>(tridiagonal.block_columns.size()));
  }
  const BsrMatrix<1> chain = tridiagonal.upload<1>(*pool_);
  const StencilOperator not_a_stencil(chain, std::array<std::int32_t, 2>{6, 6}, *arena_);
  EXPECT_EQ(not_a_stencil.stencil_rows(), 0);
  expect_same_products(not_a_stencil);
}

TEST_F(StencilOperatorTest, RefusesAMatrixWhosePatternChanged) {
  const auto grid = test::UnitBox<geometry::Grid2D>::make(6, *pool_, *arena_);
  test::Poisson p = test::assemble_poisson(*grid, false, *pool_, *arena_);
  const StencilOperator op(p.matrix, std::array<std::int32_t, 2>{6, 6}, *arena_);
  test::Poisson other = test::assemble_poisson(*grid, false, *pool_, *arena_);
  p.matrix.replace_with(std::move(other.matrix));
  auto x = memory::borrow_temporary<double>(*pool_, 49, "test.x");
  auto y = memory::borrow_temporary<double>(*pool_, 49, "test.y");
  fill(x.view(), 1.0, *arena_);
  try {
    op.apply(x.view(), y.view(), *arena_);
    FAIL() << "a matrix with a new pattern was applied through the old stencil rows";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rebuild the operator"), std::string::npos) << e.what();
  }
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
  // A refused rebuild leaves the operator as it was.
  StencilOperator op(p.matrix, std::array<std::int32_t, 2>{6, 6}, *arena_);
  const std::int64_t rows = op.stencil_rows();
  EXPECT_THROW(op.rebuild(p.matrix, std::array<std::int32_t, 2>{6, 5}, *arena_), Error);
  EXPECT_EQ(op.stencil_rows(), rows);
  expect_same_products(op);
}

TEST_F(StencilOperatorTest, MultigridHandsItsFinestStencilToCg) {
  const std::int32_t n = 16;
  const auto grid = test::UnitBox<geometry::Grid2D>::make(n, *pool_, *arena_);
  const test::Poisson p = test::assemble_poisson(*grid, true, *pool_, *arena_);
  const Multigrid<1> geometric(p.matrix, std::array<std::int32_t, 2>{n, n}, *arena_);
  ASSERT_NE(geometric.fine_stencil(), nullptr);
  EXPECT_EQ(geometric.fine_stencil()->stencil_rows(), std::int64_t{n - 3} * (n - 3));
  expect_same_products(*geometric.fine_stencil());
  const Multigrid<1> algebraic(p.matrix, *arena_);
  EXPECT_EQ(algebraic.fine_stencil(), nullptr);
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
