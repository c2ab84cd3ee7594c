// The levels of geometric multigrid on grids: the closed-form restriction is the prolongation's
// transpose, the row-by-row Galerkin operator is the sparse product R A P (its interior rows from
// the stencil bit for bit what summing gives), and an operator that couples vertices that are not
// neighbours is refused there and coarsened by products instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/detail/grid_levels.hpp"
#include "arenafem/fem/multigrid.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/sparse_product.hpp"
#include "arenafem/fem/stencil_operator.hpp"
#include "arenafem/fem/vector_ops.hpp"
#include "arenafem/geometry/grid.hpp"
#include "line_coefficient_matrix.hpp"
#include "poisson.hpp"
#include "random_bsr.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"

namespace afem::fem {
namespace {

/// A scalar matrix's arrays on the host.
test::HostBsr to_host(const BsrMatrix<1>& a) {
  return {a.block_rows(), a.block_columns(), test::copy_to_host(a.view().offsets),
          test::copy_to_host(a.view().columns),
          test::copy_to_host(memory::ArrayView<const double>(a.view().values))};
}

template <int D>
std::string describe(const std::array<std::int32_t, D>& cells) {
  std::string text = std::to_string(cells[0]);
  for (std::size_t d = 1; d < D; ++d) {
    text += " x " + std::to_string(cells[d]);
  }
  return text;
}

template <int D>
detail::Lattices<D> one_lattice(const std::array<std::int32_t, D>& cells) {
  detail::Lattices<D> lattices;
  std::copy(cells.begin(), cells.end(), lattices.cells[0]);
  return lattices;
}

/// How many coarse rows of the Galerkin operator on `cells` the fine rows' `flags` let repeat the
/// row before them (GridGalerkinRows::repeats_previous, read on the host).
template <int D>
std::int64_t repeating_coarse_rows(const StencilOperator& fine,
                                   const std::array<std::int32_t, D>& cells) {
  const std::vector<std::uint8_t> flags = test::copy_to_host(fine.stencil_flags());
  detail::GridGalerkinRows<D> rows;
  std::copy(cells.begin(), cells.end(), rows.fine_cells);
  rows.flags = memory::ArrayView<const std::uint8_t>(flags.data(), flags.size());
  std::int32_t total = 1;
  for (int d = 0; d < D; ++d) {
    total *= rows.coarse_vertices(d);
  }
  std::int64_t repeating = 0;
  for (std::int32_t row = 0; row < total; ++row) {
    repeating += rows.repeats_previous(row, row % rows.coarse_vertices(0)) ? 1 : 0;
  }
  return repeating;
}

class GridLevelsTest : public test::BackendTest {
protected:
  /// R from its closed form against transpose(P): the same pattern and the same bits.
  template <int D>
  void expect_restriction_is_transpose(const std::array<std::int32_t, D>& cells, bool split) {
    SCOPED_TRACE("cells " + describe<D>(cells) + (split ? ", parity split" : ""));
    const detail::Lattices<D> fine = one_lattice<D>(cells);
    const detail::Lattices<D> coarse = detail::coarser_lattices(fine, split);
    BsrMatrix<1> p(*pool_);
    BsrMatrix<1> r(*pool_);
    BsrMatrix<1> transposed(*pool_);
    ASSERT_EQ(detail::fill_rows<1>(detail::GridProlongationRows<D>{fine, coarse, split},
                                   fine.total(), coarse.total(), p, *arena_),
              0);
    ASSERT_EQ(detail::fill_rows<1>(detail::GridRestrictionRows<D>{fine, coarse, split},
                                   coarse.total(), fine.total(), r, *arena_),
              0);
    transpose(p, transposed, *arena_);
    const test::HostBsr expected = to_host(transposed);
    const test::HostBsr actual = to_host(r);
    EXPECT_EQ(actual.rows, expected.rows);
    EXPECT_EQ(actual.offsets, expected.offsets);
    EXPECT_EQ(actual.block_columns, expected.block_columns);
    EXPECT_EQ(actual.values, expected.values);
  }

  /// R r and x + P xc line by line against the products with the matrices R and P (B unknowns
  /// per vertex): equal to rounding.
  template <int D, int B>
  void expect_lines_are_the_matrices(const std::array<std::int32_t, D>& cells) {
    SCOPED_TRACE("cells " + describe<D>(cells) + ", " + std::to_string(B) + " unknowns");
    const detail::Lattices<D> fine = one_lattice<D>(cells);
    const detail::Lattices<D> coarse = detail::coarser_lattices(fine, false);
    BsrMatrix<B> p(*pool_);
    BsrMatrix<B> r(*pool_);
    ASSERT_EQ(detail::fill_rows<B>(detail::GridProlongationRows<D>{fine, coarse, false},
                                   fine.total(), coarse.total(), p, *arena_),
              0);
    ASSERT_EQ(detail::fill_rows<B>(detail::GridRestrictionRows<D>{fine, coarse, false},
                                   coarse.total(), fine.total(), r, *arena_),
              0);
    const auto n = static_cast<std::size_t>(p.rows());
    const auto nc = static_cast<std::size_t>(r.rows());
    auto fine_x = memory::borrow_temporary<double>(*pool_, n, "test.fine");
    auto coarse_x = memory::borrow_temporary<double>(*pool_, nc, "test.coarse");
    auto expected = memory::borrow_temporary<double>(*pool_, std::max(n, nc), "test.expected");
    auto actual = memory::borrow_temporary<double>(*pool_, std::max(n, nc), "test.actual");
    std::vector<double> host_fine(n);
    std::vector<double> host_coarse(nc);
    for (std::size_t i = 0; i < n; ++i) {
      host_fine[i] = std::sin(0.7 * static_cast<double>(i)) + 0.1 * static_cast<double>(i % 3);
    }
    for (std::size_t i = 0; i < nc; ++i) {
      host_coarse[i] = std::cos(0.3 * static_cast<double>(i)) - 0.2 * static_cast<double>(i % 5);
    }
    test::copy_to_device(fine_x.view(), host_fine);
    test::copy_to_device(coarse_x.view(), host_coarse);
    auto policy = memory::arena_policy(*arena_, "test.thrust");
    const auto count = thrust::counting_iterator<std::int64_t>(0);
    detail::GridRestrictLines<D, B> restrict_lines;
    std::copy(cells.begin(), cells.end(), restrict_lines.fine_cells);
    restrict_lines.r = fine_x.view();
    restrict_lines.b = actual.view().subview(0, nc);
    std::int64_t coarse_lines = 1;
    std::int64_t fine_lines = 1;
    for (int d = 1; d < D; ++d) {
      coarse_lines *= (cells[static_cast<std::size_t>(d)] + 1) / 2 + 1;
      fine_lines *= cells[static_cast<std::size_t>(d)] + 1;
    }
    thrust::for_each_n(policy, count, coarse_lines, restrict_lines);
    spmv(r, memory::ArrayView<const double>(fine_x.view()), expected.view().subview(0, nc),
         *arena_);
    expect_near(actual.view().subview(0, nc), expected.view().subview(0, nc));

    detail::GridProlongAddLines<D, B> prolong_lines;
    std::copy(cells.begin(), cells.end(), prolong_lines.fine_cells);
    prolong_lines.xc = coarse_x.view();
    prolong_lines.x = actual.view().subview(0, n);
    copy(fine_x.view(), actual.view().subview(0, n), *arena_);
    copy(fine_x.view(), expected.view().subview(0, n), *arena_);
    thrust::for_each_n(policy, count, fine_lines, prolong_lines);
    spmv(p, memory::ArrayView<const double>(coarse_x.view()), expected.view().subview(0, n),
         *arena_, 1.0, 1.0);
    expect_near(actual.view().subview(0, n), expected.view().subview(0, n));
  }

  static void expect_near(memory::ArrayView<const double> actual,
                          memory::ArrayView<const double> expected) {
    const std::vector<double> a = test::copy_to_host(actual);
    const std::vector<double> e = test::copy_to_host(expected);
    for (std::size_t i = 0; i < e.size(); ++i) {
      EXPECT_NEAR(a[i], e[i], 1e-14 * (1.0 + std::abs(e[i]))) << "entry " << i;
    }
  }

  /// The Galerkin rows of `a` (with the stencil of `stencil` when given) against the products
  /// (R A) P: every product entry is in the rows' pattern with the same value to rounding, and
  /// the rows' other entries are 0.
  template <int D>
  test::HostBsr galerkin_against_products(const BsrMatrix<1>& a,
                                          const std::array<std::int32_t, D>& cells,
                                          const StencilOperator* stencil) {
    const detail::Lattices<D> fine = one_lattice<D>(cells);
    const detail::Lattices<D> coarse = detail::coarser_lattices(fine, false);
    BsrMatrix<1> p(*pool_);
    BsrMatrix<1> r(*pool_);
    detail::fill_rows<1>(detail::GridProlongationRows<D>{fine, coarse, false}, fine.total(),
                         coarse.total(), p, *arena_);
    detail::fill_rows<1>(detail::GridRestrictionRows<D>{fine, coarse, false}, coarse.total(),
                         fine.total(), r, *arena_);
    const BsrMatrix<1> ra = sparse_product(r, a, *pool_, *arena_);
    const BsrMatrix<1> rap = sparse_product(ra, p, *pool_, *arena_);

    detail::GridGalerkinRows<D> rows;
    std::copy(cells.begin(), cells.end(), rows.fine_cells);
    rows.a = a.view();
    constexpr auto taps = static_cast<std::size_t>(detail::stencil_taps<D>);
    auto table = memory::borrow_temporary<double>(*arena_, taps * taps, "test.galerkin");
    if (stencil != nullptr) {
      rows.flags = stencil->stencil_flags();
    }
    if (stencil != nullptr && stencil->stencil_rows() > 0) {
      const detail::GalerkinStencils<D> g = detail::galerkin_stencils<D>(stencil->stencil());
      test::copy_to_device(table.view(), std::vector<double>(g.rows.begin(), g.rows.end()));
      rows.stencil_rows = table.view();
      rows.stencil = g.coarse;
    }
    BsrMatrix<1> c(*pool_);
    const std::int64_t refused = detail::fill_galerkin_rows<D>(rows, c, *arena_);
    if (refused != 0) {
      ADD_FAILURE() << refused << " rows refused on the grid of " << describe<D>(cells);
      return {};
    }
    // One coarse plane at a time (the rows of A P of a few fine planes in scratch): the same bits.
    BsrMatrix<1> by_planes(*pool_);
    EXPECT_EQ(detail::fill_galerkin_rows<D>(rows, by_planes, *arena_, 1), 0);
    EXPECT_EQ(to_host(by_planes).values, to_host(c).values) << describe<D>(cells);
    const test::HostBsr expected = to_host(rap);
    test::HostBsr actual = to_host(c);
    EXPECT_EQ(actual.rows, expected.rows);
    double largest = 0.0;
    for (const double v : expected.values) {
      largest = std::max(largest, std::abs(v));
    }
    for (std::int32_t row = 0; row < expected.rows; ++row) {
      const auto i = static_cast<std::size_t>(row);
      auto e = static_cast<std::size_t>(expected.offsets[i]);
      for (auto k = static_cast<std::size_t>(actual.offsets[i]);
           k < static_cast<std::size_t>(actual.offsets[i + 1]); ++k) {
        const bool in_product = e < static_cast<std::size_t>(expected.offsets[i + 1]) &&
                                expected.block_columns[e] == actual.block_columns[k];
        const double want = in_product ? expected.values[e] : 0.0;
        EXPECT_NEAR(actual.values[k], want, 1e-13 * largest)
            << "row " << row << ", column " << actual.block_columns[k];
        e += in_product ? 1 : 0;
      }
      EXPECT_EQ(e, static_cast<std::size_t>(expected.offsets[i + 1]))
          << "row " << row << ": a product entry is missing from the rows' pattern";
    }
    return actual;
  }
};

TEST_F(GridLevelsTest, RestrictionIsTheProlongationTransposed) {
  for (const bool split : {false, true}) {
    expect_restriction_is_transpose<2>({6, 5}, split);
    expect_restriction_is_transpose<2>({7, 7}, split);
    expect_restriction_is_transpose<2>({1, 4}, split);
    expect_restriction_is_transpose<3>({5, 4, 3}, split);
    expect_restriction_is_transpose<3>({4, 4, 4}, split);
    expect_restriction_is_transpose<3>({2, 1, 7}, split);
  }
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

TEST_F(GridLevelsTest, TransfersLineByLineAreTheMatrices) {
  expect_lines_are_the_matrices<2, 1>({8, 6});
  expect_lines_are_the_matrices<2, 1>({7, 9});
  expect_lines_are_the_matrices<2, 2>({1, 5});
  expect_lines_are_the_matrices<2, 3>({2, 3});
  expect_lines_are_the_matrices<3, 1>({6, 5, 7});
  expect_lines_are_the_matrices<3, 1>({1, 1, 4});
  expect_lines_are_the_matrices<3, 3>({5, 4, 3});
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

TEST_F(GridLevelsTest, GalerkinRowsAreTheSparseProductOnGridsWithAndWithoutFlatAxes) {
  for (const bool dirichlet : {false, true}) {
    SCOPED_TRACE(dirichlet ? "Dirichlet rows" : "no Dirichlet rows");
    for (const std::array<std::int32_t, 2> cells :
         {std::array<std::int32_t, 2>{9, 7}, std::array<std::int32_t, 2>{12, 2},
          std::array<std::int32_t, 2>{1, 6}}) {
      const geometry::Grid2D grid({0.0, 0.0}, {0.1, 0.1}, cells);
      const test::Poisson p = test::assemble_poisson(grid, dirichlet, *pool_, *arena_);
      galerkin_against_products<2>(p.matrix, cells, nullptr);
    }
    for (const std::array<std::int32_t, 3> cells :
         {std::array<std::int32_t, 3>{7, 6, 5}, std::array<std::int32_t, 3>{4, 3, 1},
          std::array<std::int32_t, 3>{4, 1, 4}, std::array<std::int32_t, 3>{1, 4, 4}}) {
      const geometry::Grid3D grid({0.0, 0.0, 0.0}, {0.1, 0.1, 0.1}, cells);
      const test::Poisson p = test::assemble_poisson(grid, dirichlet, *pool_, *arena_);
      galerkin_against_products<3>(p.matrix, cells, nullptr);
    }
  }
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

TEST_F(GridLevelsTest, RowsFromTheFineStencilAreTheProductsAndShareTheCoarseStencil) {
  // Even and odd resolutions: at an odd one the last coarse cell is one fine cell wide, and
  // without Dirichlet rows the fine stencil rows reach the odd last vertex.
  for (const bool dirichlet : {false, true}) {
    SCOPED_TRACE(dirichlet ? "Dirichlet rows" : "no Dirichlet rows");
    for (const std::array<std::int32_t, 3>& cells :
         std::vector<std::array<std::int32_t, 3>>{{12, 12, 12}, {13, 11, 14}, {15, 9, 11}}) {
      SCOPED_TRACE("cells " + describe<3>(cells));
      const geometry::Grid3D grid({0.0, 0.0, 0.0}, {0.1, 0.1, 0.1}, cells);
      const test::Poisson p = test::assemble_poisson(grid, dirichlet, *pool_, *arena_);
      const StencilOperator fine(p.matrix, cells, *arena_);
      ASSERT_GT(fine.stencil_rows(), 0);
      const test::HostBsr from_stencil = galerkin_against_products<3>(p.matrix, cells, &fine);
      // Every coarse vertex whose fine neighbourhood holds the stencil (fine rows 2c - 1 to
      // 2c + 1 within first..n - first: past the boundary layer, and past its neighbours with
      // Dirichlet rows) takes the coarse stencil bit for bit, so the next level finds it there.
      const std::array<std::int32_t, 3> coarse_cells = {(cells[0] + 1) / 2, (cells[1] + 1) / 2,
                                                        (cells[2] + 1) / 2};
      const BsrMatrix<1> coarse = test::HostBsr(from_stencil).upload<1>(*pool_);
      const StencilOperator next(coarse, coarse_cells, *arena_);
      std::int64_t interior = 1;
      for (std::size_t d = 0; d < 3; ++d) {
        const std::int32_t first = dirichlet ? 2 : 1;          // the smallest c
        const std::int32_t last = (cells[d] - first - 1) / 2;  // 2c + 1 <= n - first
        interior *= std::max(last - first + 1, 0);
      }
      EXPECT_GT(interior, 0);
      EXPECT_GE(next.stencil_rows(), interior);
    }
  }
  for (const std::array<std::int32_t, 2>& cells :
       std::vector<std::array<std::int32_t, 2>>{{13, 11}, {7, 9}, {16, 10}}) {
    SCOPED_TRACE("cells " + describe<2>(cells));
    const geometry::Grid2D grid({0.0, 0.0}, {0.1, 0.1}, cells);
    const test::Poisson p = test::assemble_poisson(grid, false, *pool_, *arena_);
    const StencilOperator fine(p.matrix, cells, *arena_);
    ASSERT_GT(fine.stencil_rows(), 0);
    galerkin_against_products<2>(p.matrix, cells, &fine);
  }
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

TEST_F(GridLevelsTest, RowsOfAPThatRepeatTheTwoBeforeThemAreCopiesWithTheirBits) {
  // A (2D + 1)-point operator whose rows repeat along x within each line (the fluid's pressure
  // rows): the fine rows of A P the repeated rows copy, and the coarse rows copied from the row
  // before them where all their fine rows are such copies, give the Galerkin rows that forming
  // every row gives, bit for bit. Even and odd resolutions (the odd last vertex is formed).
  for (const std::array<std::int32_t, 2>& cells :
       std::vector<std::array<std::int32_t, 2>>{{12, 7}, {13, 6}, {20, 3}}) {
    SCOPED_TRACE("cells " + describe<2>(cells));
    const BsrMatrix<1> a =
        test::line_coefficient_matrix({cells[0] + 1, cells[1] + 1}, cells[0] + 7).upload<1>(*pool_);
    const StencilOperator fine(a, cells, *arena_);
    ASSERT_GT(fine.repeated_rows(), a.rows() / 2);
    // Along x, coarse rows 2 to n / 2 - 1 of the lines away from the varied row.
    const std::int64_t coarse_rows =
        std::int64_t{(cells[0] + 1) / 2 + 1} * ((cells[1] + 1) / 2 + 1);
    EXPECT_GT(repeating_coarse_rows<2>(fine, cells), coarse_rows / 5);
    const test::HostBsr copied = galerkin_against_products<2>(a, cells, &fine);
    const test::HostBsr formed = galerkin_against_products<2>(a, cells, nullptr);
    EXPECT_EQ(copied.values, formed.values);
  }
  for (const std::array<std::int32_t, 3>& cells :
       std::vector<std::array<std::int32_t, 3>>{{10, 5, 4}, {9, 4, 5}}) {
    SCOPED_TRACE("cells " + describe<3>(cells));
    const BsrMatrix<1> a = test::line_coefficient_matrix({cells[0] + 1, cells[1] + 1, cells[2] + 1},
                                                         3 * (cells[0] + 1) + 5)
                               .upload<1>(*pool_);
    const StencilOperator fine(a, cells, *arena_);
    ASSERT_GT(fine.repeated_rows(), a.rows() / 2);
    EXPECT_GT(repeating_coarse_rows<3>(fine, cells), 0);
    const test::HostBsr copied = galerkin_against_products<3>(a, cells, &fine);
    const test::HostBsr formed = galerkin_against_products<3>(a, cells, nullptr);
    EXPECT_EQ(copied.values, formed.values);
  }
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

TEST_F(GridLevelsTest, AnOperatorCouplingDistantVerticesIsCoarsenedByProducts) {
  const std::int32_t n = 12;
  const std::array<std::int32_t, 2> cells = {n, n};
  const geometry::Grid2D grid({0.0, 0.0}, {1.0 / n, 1.0 / n}, cells);
  const test::Poisson p = test::assemble_poisson(grid, false, *pool_, *arena_);
  // The Laplacian plus a mass, and vertex 0 coupled to the last vertex: still symmetric positive
  // definite, no longer a grid operator.
  test::HostBsr host = to_host(p.matrix);
  const std::int32_t last = host.rows - 1;
  test::HostBsr coupled{host.rows, host.columns, {0}, {}, {}};
  for (std::int32_t row = 0; row < host.rows; ++row) {
    const auto i = static_cast<std::size_t>(row);
    if (row == last) {
      coupled.block_columns.push_back(0);
      coupled.values.push_back(-0.1);
    }
    for (auto k = static_cast<std::size_t>(host.offsets[i]);
         k < static_cast<std::size_t>(host.offsets[i + 1]); ++k) {
      coupled.block_columns.push_back(host.block_columns[k]);
      coupled.values.push_back(host.values[k] + (host.block_columns[k] == row ? 0.5 : 0.0));
    }
    if (row == 0) {
      coupled.block_columns.push_back(last);
      coupled.values.push_back(-0.1);
    }
    coupled.offsets.push_back(static_cast<std::int32_t>(coupled.block_columns.size()));
  }
  const BsrMatrix<1> a = coupled.upload<1>(*pool_);
  detail::GridGalerkinRows<2> rows;
  std::copy(cells.begin(), cells.end(), rows.fine_cells);
  rows.a = a.view();
  BsrMatrix<1> c(*pool_);
  const std::uint64_t before = c.pattern_id();
  EXPECT_GT(detail::fill_galerkin_rows<2>(rows, c, *arena_), 0);
  EXPECT_EQ(c.pattern_id(), before);
  EXPECT_EQ(c.rows(), 0);

  // The multigrid coarsens it by products and still converges.
  const Multigrid<1> mg(a, cells, *arena_);
  auto x = memory::borrow_temporary<double>(*pool_, static_cast<std::size_t>(a.rows()), "test.x");
  fill(x.view(), 0.0, *arena_);
  const SolveResult result = cg(as_operator(a), memory::ArrayView<const double>(p.rhs.view()),
                                x.view(), *arena_, {.tolerance = 1e-8, .max_iterations = 200}, mg);
  EXPECT_LE(result.residual, 1e-8);
  EXPECT_LE(result.iterations, 15);
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

}  // namespace
}  // namespace afem::fem
