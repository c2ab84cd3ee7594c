// sparse_product against Eigen, and the multigrid preconditioners: CG iterations that stay bounded
// as the mesh is refined (geometric on grids, smoothed aggregation on unstructured meshes), block
// systems, refused operators, no pool traffic on repeated solves, one result for every thread
// count.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "arenafem/fem/boundary.hpp"
#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/component_restriction.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/linear_operator.hpp"
#include "arenafem/fem/multigrid.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/fem/sparse_product.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/quadrature.hpp"
#include "poisson.hpp"
#include "random_bsr.hpp"
#include "reference_assembly.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"
#include "support/thread_count.hpp"
#include "unit_box.hpp"

namespace afem::fem {
namespace {

using test::assemble_poisson;
using test::Poisson;

/// A random R x C block matrix (not square in general) as host arrays.
template <int R, int C>
test::HostBsr random_rectangular(std::int32_t rows, std::int32_t columns, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::uniform_int_distribution<std::int32_t> column(0, columns - 1);
  test::HostBsr host;
  host.rows = rows;
  host.columns = columns;
  host.offsets.push_back(0);
  for (std::int32_t r = 0; r < rows; ++r) {
    std::vector<std::int32_t> picked(4);
    for (std::int32_t& c : picked) {
      c = column(random);
    }
    std::sort(picked.begin(), picked.end());
    picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    for (const std::int32_t c : picked) {
      host.block_columns.push_back(c);
      for (int q = 0; q < R * C; ++q) {
        host.values.push_back(value(random));
      }
    }
    host.offsets.push_back(static_cast<std::int32_t>(host.block_columns.size()));
  }
  return host;
}

template <int R, int K, int C>
struct Shape {
  static constexpr int r = R;
  static constexpr int k = K;
  static constexpr int c = C;
};

template <class T>
class SparseProductTest : public test::BackendTest {};
using Shapes = ::testing::Types<Shape<1, 1, 1>, Shape<1, 2, 1>, Shape<2, 2, 2>, Shape<3, 3, 3>,
                                Shape<2, 1, 3>, Shape<3, 2, 1>>;
TYPED_TEST_SUITE(SparseProductTest, Shapes);

TYPED_TEST(SparseProductTest, MatchesEigenWithAndWithoutWeights) {
  constexpr int r = TypeParam::r;
  constexpr int k = TypeParam::k;
  constexpr int c = TypeParam::c;
  const test::HostBsr ha = random_rectangular<r, k>(70, 50, 1);
  const test::HostBsr hb = random_rectangular<k, c>(50, 60, 2);
  const BsrMatrix<r, k> a = ha.upload<r, k>(*this->pool_);
  const BsrMatrix<k, c> b = hb.upload<k, c>(*this->pool_);
  const Eigen::MatrixXd ea = Eigen::MatrixXd(test::to_eigen(a));
  const Eigen::MatrixXd eb = Eigen::MatrixXd(test::to_eigen(b));
  std::vector<double> weights(static_cast<std::size_t>(a.columns()));
  for (std::size_t i = 0; i < weights.size(); ++i) {
    weights[i] = i % 5 == 0 ? 0.0 : 0.5 + static_cast<double>(i % 7);
  }
  auto w = memory::borrow_temporary<double>(*this->pool_, weights.size(), "test.w");
  test::copy_to_device(w.view(), weights);
  for (const bool weighted : {false, true}) {
    const BsrMatrix<r, c> product =
        weighted ? sparse_product(a, memory::ArrayView<const double>(w.view()), b, *this->pool_,
                                  *this->arena_)
                 : sparse_product(a, b, *this->pool_, *this->arena_);
    Eigen::VectorXd diagonal = Eigen::VectorXd::Ones(a.columns());
    if (weighted) {
      diagonal = Eigen::Map<const Eigen::VectorXd>(weights.data(), a.columns());
    }
    const Eigen::MatrixXd expected = ea * diagonal.asDiagonal() * eb;
    const Eigen::MatrixXd actual = Eigen::MatrixXd(test::to_eigen(product));
    ASSERT_EQ(actual.rows(), expected.rows());
    ASSERT_EQ(actual.cols(), expected.cols());
    EXPECT_LE((actual - expected).cwiseAbs().maxCoeff(), 1e-12 * expected.cwiseAbs().maxCoeff());
    // Every reachable block is in the pattern, and no other.
    std::int64_t reachable = 0;
    const Eigen::MatrixXd pattern = ea.cwiseAbs() * eb.cwiseAbs();
    for (Eigen::Index i = 0; i < pattern.rows() / r; ++i) {
      for (Eigen::Index j = 0; j < pattern.cols() / c; ++j) {
        reachable += pattern.block(i * r, j * c, r, c).maxCoeff() > 0.0 ? 1 : 0;
      }
    }
    EXPECT_EQ(product.block_count(), reachable);
  }
  EXPECT_EQ(this->arena_->stats().live_bytes, 0U);
}

/// Products of given matrices, on the backend's pool and a step arena.
class SparseProductShapes : public test::BackendTest {};

TEST_F(SparseProductShapes, RefusesSizesThatDoNotChain) {
  memory::Pool& pool = *pool_;
  memory::Arena& arena = *arena_;
  const BsrMatrix<1> a = random_rectangular<1, 1>(5, 4, 1).upload<1, 1>(pool);
  const BsrMatrix<1> b = random_rectangular<1, 1>(5, 3, 2).upload<1, 1>(pool);
  try {
    (void)sparse_product(a, b, pool, arena);
    FAIL() << "expected afem::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the left matrix has 4 columns and the right one 5 rows"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(SparseProductShapes, IsTheSameOnAnyThreadCountAndHandlesEmptyProducts) {
  memory::Pool& pool = *pool_;
  memory::Arena& arena = *arena_;
  // Rows enough for the CPU product to cut them into parts.
  const BsrMatrix<1> a = random_rectangular<1, 1>(30000, 20000, 3).upload<1, 1>(pool);
  const BsrMatrix<1> b = random_rectangular<1, 1>(20000, 25000, 4).upload<1, 1>(pool);
  std::vector<std::vector<double>> values;
  std::vector<std::vector<std::int32_t>> columns;
  for (const int threads : {1, 2, 3}) {
    const test::ThreadCount scope(threads);
    const BsrMatrix<1> c = sparse_product(a, b, pool, arena);
    values.push_back(test::copy_to_host(memory::ArrayView<const double>(c.view().values)));
    columns.push_back(test::copy_to_host(c.view().columns));
  }
  EXPECT_EQ(values[1], values[0]);
  EXPECT_EQ(values[2], values[0]);
  EXPECT_EQ(columns[1], columns[0]);
  // A matrix without blocks: the product has none, and its offsets are all 0.
  test::HostBsr none;
  none.rows = 5;
  none.columns = 20000;
  none.offsets.assign(6, 0);
  const BsrMatrix<1> empty = sparse_product(none.upload<1, 1>(pool), b, pool, arena);
  EXPECT_EQ(empty.block_rows(), 5);
  EXPECT_EQ(empty.block_count(), 0);
  EXPECT_EQ(test::copy_to_host(empty.view().offsets), std::vector<std::int32_t>(6, 0));
  EXPECT_EQ(arena.stats().live_bytes, 0U);
}

/// CG iterations to 1e-8 with the preconditioner `m` (from x = 0).
template <class M>
int cg_iterations(const Poisson& p, const M& m, memory::Pool& pool, memory::Arena& scratch,
                  std::vector<double>* solution = nullptr) {
  auto x = memory::borrow_temporary<double>(pool, static_cast<std::size_t>(p.dofs), "test.x");
  fill(x.view(), 0.0, scratch);
  const SolveResult result =
      cg(as_operator(p.matrix), memory::ArrayView<const double>(p.rhs.view()), x.view(), scratch,
         {.tolerance = 1e-8, .max_iterations = 2000}, m);
  EXPECT_LE(result.residual, 1e-8);
  if (solution != nullptr) {
    *solution = test::copy_to_host(memory::ArrayView<const double>(x.view()));
  }
  return result.iterations;
}

int jacobi_iterations(const Poisson& p, memory::Pool& pool, memory::Arena& scratch) {
  auto x = memory::borrow_temporary<double>(pool, static_cast<std::size_t>(p.dofs), "test.x");
  fill(x.view(), 0.0, scratch);
  return cg(p.matrix, memory::ArrayView<const double>(p.rhs.view()), x.view(), scratch,
            {.tolerance = 1e-8, .max_iterations = 5000})
      .iterations;
}

class MultigridTest : public test::BackendTest {};

TEST_F(MultigridTest, GeometricIterationsStayBoundedOnGrid2D) {
  std::vector<int> iterations;
  std::vector<int> jacobi;
  for (const std::int32_t n : {16, 32, 64, 128}) {
    const auto grid = test::UnitBox<geometry::Grid2D>::make(n, *pool_, *arena_);
    const Poisson p = assemble_poisson(*grid, true, *pool_, *arena_);
    const Multigrid<1> mg(p.matrix, std::array<std::int32_t, 2>{n, n}, *arena_);
    EXPECT_GE(mg.level_count(), 2);
    EXPECT_LE(mg.level_rows(mg.level_count() - 1), 150);
    iterations.push_back(cg_iterations(p, mg, *pool_, *arena_));
    jacobi.push_back(jacobi_iterations(p, *pool_, *arena_));
  }
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    SCOPED_TRACE("refinement " + std::to_string(i));
    EXPECT_LE(iterations[i], 15);
    EXPECT_LE(iterations[i], (3 * iterations[0] + 1) / 2);
  }
  // Jacobi's count grows like 1/h; the cycle's does not.
  EXPECT_GE(jacobi.back(), 4 * iterations.back());
  EXPECT_GE(jacobi.back(), 3 * jacobi.front());
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

TEST_F(MultigridTest, GeometricIterationsStayBoundedOnGrid3DOfOddResolution) {
  std::vector<int> iterations;
  for (const std::int32_t n : {7, 13, 25}) {
    const auto grid = test::UnitBox<geometry::Grid3D>::make(n, *pool_, *arena_);
    const Poisson p = assemble_poisson(*grid, true, *pool_, *arena_);
    const Multigrid<1> mg(p.matrix, std::array<std::int32_t, 3>{n, n, n}, *arena_);
    iterations.push_back(cg_iterations(p, mg, *pool_, *arena_));
  }
  for (const int count : iterations) {
    EXPECT_LE(count, 15);
    EXPECT_LE(count, (3 * iterations[0] + 1) / 2);
  }
}

template <class G>
std::vector<int> aggregation_iterations(const std::vector<std::int32_t>& sizes, memory::Pool& pool,
                                        memory::Arena& scratch) {
  std::vector<int> iterations;
  for (const std::int32_t n : sizes) {
    const auto mesh = test::UnitBox<G>::make(n, pool, scratch);
    const Poisson p = assemble_poisson(*mesh, true, pool, scratch);
    const Multigrid<1> mg(p.matrix, scratch);
    EXPECT_GE(mg.level_count(), 2);
    EXPECT_LT(mg.operator_complexity(), 2.0);
    iterations.push_back(cg_iterations(p, mg, pool, scratch));
  }
  return iterations;
}

TEST_F(MultigridTest, SmoothedAggregationIterationsStayBoundedOnTets) {
  const std::vector<int> iterations =
      aggregation_iterations<geometry::Tetmesh>({6, 12, 20}, *pool_, *arena_);
  for (const int count : iterations) {
    EXPECT_LE(count, 30);
    EXPECT_LE(count, (3 * iterations[0] + 1) / 2);
  }
}

TEST_F(MultigridTest, SmoothedAggregationIterationsStayBoundedOnHexes) {
  const std::vector<int> iterations =
      aggregation_iterations<geometry::Hexmesh>({6, 12, 20}, *pool_, *arena_);
  for (const int count : iterations) {
    EXPECT_LE(count, 30);
    EXPECT_LE(count, (3 * iterations[0] + 1) / 2);
  }
}

TEST_F(MultigridTest, SmoothedAggregationSolvesACoupledBlockSystem) {
  // A (x) K with A the Dirichlet Laplacian and K a 2 x 2 or 3 x 3 SPD coupling: B x B blocks.
  const auto grid = test::UnitBox<geometry::Grid2D>::make(40, *pool_, *arena_);
  const Poisson p = assemble_poisson(*grid, true, *pool_, *arena_);
  const std::vector<std::int32_t> offsets =
      test::copy_to_host(memory::ArrayView<const std::int32_t>(p.matrix.view().offsets));
  const std::vector<std::int32_t> columns =
      test::copy_to_host(memory::ArrayView<const std::int32_t>(p.matrix.view().columns));
  const std::vector<double> values =
      test::copy_to_host(memory::ArrayView<const double>(p.matrix.view().values));
  auto check = [&]<int B>(std::integral_constant<int, B>) {
    std::vector<double> blocks;
    for (const double v : values) {
      for (int i = 0; i < B; ++i) {
        for (int j = 0; j < B; ++j) {
          blocks.push_back(v * (i == j ? 2.0 : 0.5));
        }
      }
    }
    const BsrMatrix<B> a = BsrMatrix<B>::from_host(
        *pool_, p.matrix.block_rows(), p.matrix.block_columns(), offsets, columns, blocks);
    const Multigrid<B> mg(a, *arena_);
    EXPECT_GE(mg.level_count(), 2);
    const auto n = static_cast<std::size_t>(a.rows());
    auto b = memory::borrow_temporary<double>(*pool_, n, "test.b");
    auto x = memory::borrow_temporary<double>(*pool_, n, "test.x");
    fill(b.view(), 1.0, *arena_);
    fill(x.view(), 0.0, *arena_);
    const SolveResult result = cg(as_operator(a), memory::ArrayView<const double>(b.view()),
                                  x.view(), *arena_, {.tolerance = 1e-8}, mg);
    EXPECT_LE(result.iterations, 25) << "B = " << B;
    // The residual, checked apart from the solver.
    auto r = memory::borrow_temporary<double>(*pool_, n, "test.r");
    spmv(a, memory::ArrayView<const double>(x.view()), r.view(), *arena_);
    axpby(-1.0, memory::ArrayView<const double>(b.view()), 1.0, r.view(), *arena_);
    EXPECT_LE(norm(r.view(), *arena_), 1.01e-8 * norm(b.view(), *arena_));
  };
  check(std::integral_constant<int, 2>{});
  check(std::integral_constant<int, 3>{});
}

TEST_F(MultigridTest, RefusesASingularOperator) {
  // The Laplacian without any held dof: its constants are a null space.
  const auto grid = test::UnitBox<geometry::Grid2D>::make(16, *pool_, *arena_);
  const Poisson p = assemble_poisson(*grid, false, *pool_, *arena_);
  for (const bool geometric : {true, false}) {
    try {
      if (geometric) {
        const Multigrid<1> mg(p.matrix, std::array<std::int32_t, 2>{16, 16}, *arena_);
      } else {
        const Multigrid<1> mg(p.matrix, *arena_);
      }
      FAIL() << "expected SolverError";
    } catch (const SolverError& e) {
      EXPECT_NE(std::string(e.what()).find("is singular or not positive definite"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST_F(MultigridTest, RefusesAnIndefiniteOperatorAndAMismatchedGrid) {
  const auto grid = test::UnitBox<geometry::Grid2D>::make(16, *pool_, *arena_);
  Poisson p = assemble_poisson(*grid, true, *pool_, *arena_);
  const std::vector<double> values =
      test::copy_to_host(memory::ArrayView<const double>(p.matrix.view().values));
  std::vector<double> negated(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    negated[i] = -values[i];
  }
  test::copy_to_device(p.matrix.view().values, negated);
  try {
    const Multigrid<1> mg(p.matrix, *arena_);
    FAIL() << "expected SolverError";
  } catch (const SolverError& e) {
    EXPECT_NE(std::string(e.what()).find("the diagonal entry of row 0 of level 0 is not positive"),
              std::string::npos)
        << e.what();
  }
  try {
    const Multigrid<1> mg(p.matrix, std::array<std::int32_t, 2>{16, 15}, *arena_);
    FAIL() << "expected afem::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the matrix has 289 block rows and the grid 272 vertices"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

TEST_F(MultigridTest, RefusesARowWithoutADiagonalEntry) {
  // Row 40 of a grid Laplacian loses its diagonal entry from the pattern: the bisection for the
  // diagonal finds none, and both kinds of multigrid name the row.
  const std::int32_t n = 16;
  const auto grid = test::UnitBox<geometry::Grid2D>::make(n, *pool_, *arena_);
  const Poisson p = assemble_poisson(*grid, false, *pool_, *arena_);
  const auto offsets = test::copy_to_host(p.matrix.view().offsets);
  const auto columns = test::copy_to_host(p.matrix.view().columns);
  const auto values = test::copy_to_host(memory::ArrayView<const double>(p.matrix.view().values));
  const std::int32_t missing = 40;
  test::HostBsr host{p.matrix.block_rows(), p.matrix.block_columns(), {0}, {}, {}};
  for (std::int32_t row = 0; row < host.rows; ++row) {
    const auto r = static_cast<std::size_t>(row);
    for (auto k = static_cast<std::size_t>(offsets[r]);
         k < static_cast<std::size_t>(offsets[r + 1]); ++k) {
      if (row == missing && columns[k] == row) {
        continue;
      }
      host.block_columns.push_back(columns[k]);
      host.values.push_back(values[k] + 1.0);  // every entry positive: no neighbour passes for it
    }
    host.offsets.push_back(static_cast<std::int32_t>(host.block_columns.size()));
  }
  const BsrMatrix<1> a = host.upload<1>(*pool_);
  const std::string expected = "the diagonal entry of row 40 of level 0 is not positive";
  try {
    const Multigrid<1> mg(a, std::array<std::int32_t, 2>{n, n}, *arena_);
    FAIL() << "expected SolverError";
  } catch (const SolverError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  try {
    const Multigrid<1> mg(a, *arena_);
    FAIL() << "expected SolverError";
  } catch (const SolverError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

/// q div(phi) and the lumped mass phi: a divergence between equal-order Q1 pressure and velocity
/// on the same vertices.
struct DivergenceForm {
  template <class S, class Q, class Phi>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const Q& q, const Phi& phi) const {
    return q.basis_value * phi.basis_gradient[phi.component];
  }
};
struct LumpedMassForm {
  static constexpr bool reads_gradients = false;
  template <class S, class V>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const V& v) const {
    return v.basis_value;
  }
};

/// S = B M^-1 B^T on an n x n grid: it couples each vertex most to those two cells away, and its
/// null space holds the four parity patterns of the vertices. With `held`, the boundary vertices
/// are held (project_dirichlet), which leaves S definite.
BsrMatrix<1> wide_laplacian(std::int32_t n, bool held, memory::Pool& pool, memory::Arena& scratch) {
  const auto grid = test::UnitBox<geometry::Grid2D>::make(n, pool, scratch);
  const LagrangeSpace<geometry::Grid2D, 1> space(*grid, pool, scratch);
  const quadrature::Cells cells(*grid);
  const quadrature::RegularQuadrature quadrature(cells, 2, pool);
  const SpaceRestriction restriction(space, cells, scratch);
  BsrMatrix<1, 2> divergence(pool);
  integrate(divergence, quadrature, restriction, with_components<2>(restriction), DivergenceForm{},
            scratch);
  const BsrMatrix<2, 1> gradient = transpose(divergence, scratch);
  const auto nodes = static_cast<std::size_t>(space.node_count());
  auto mass = memory::borrow_temporary<double>(scratch, nodes, "test.mass");
  integrate(mass.view(), quadrature, restriction, LumpedMassForm{}, scratch);
  const std::vector<double> host_mass =
      test::copy_to_host(memory::ArrayView<const double>(mass.view()));
  std::vector<double> inverse(2 * nodes);
  for (std::size_t i = 0; i < inverse.size(); ++i) {
    inverse[i] = 1.0 / host_mass[i / 2];
  }
  auto w = memory::borrow_temporary<double>(scratch, inverse.size(), "test.w");
  test::copy_to_device(w.view(), inverse);
  BsrMatrix<1> s = sparse_product(divergence, memory::ArrayView<const double>(w.view()), gradient,
                                  pool, scratch);
  if (held) {
    auto fixed = memory::borrow_temporary<std::uint8_t>(scratch, nodes, "test.fixed");
    auto zero = memory::borrow_temporary<double>(scratch, nodes, "test.zero");
    auto rhs = memory::borrow_temporary<double>(scratch, nodes, "test.rhs");
    boundary_dofs(space, fixed.view(), scratch);
    fill(zero.view(), 0.0, scratch);
    fill(rhs.view(), 0.0, scratch);
    project_dirichlet(s, rhs.view(), fixed.view(), zero.view(), scratch);
  }
  return s;
}

/// CG iterations to 1e-8 on s x = s x0 (a consistent right-hand side), x0 a fixed hash.
int consistent_iterations(const BsrMatrix<1>& s, const Multigrid<1>& mg, memory::Pool& pool,
                          memory::Arena& scratch) {
  const auto n = static_cast<std::size_t>(s.rows());
  std::vector<double> x0(n);
  for (std::size_t i = 0; i < n; ++i) {
    x0[i] = std::sin(1.7 * static_cast<double>(i)) + std::cos(0.013 * static_cast<double>(i));
  }
  auto xs = memory::borrow_temporary<double>(pool, n, "test.x0");
  auto b = memory::borrow_temporary<double>(pool, n, "test.b");
  auto x = memory::borrow_temporary<double>(pool, n, "test.x");
  test::copy_to_device(xs.view(), x0);
  spmv(s, memory::ArrayView<const double>(xs.view()), b.view(), scratch);
  fill(x.view(), 0.0, scratch);
  return cg(as_operator(s), memory::ArrayView<const double>(b.view()), x.view(), scratch,
            {.tolerance = 1e-8, .max_iterations = 3000}, mg)
      .iterations;
}

TEST_F(MultigridTest, ParityCoarseningKeepsAWideStencilBounded) {
  std::vector<int> parity;
  for (const std::int32_t n : {32, 64, 128}) {
    const BsrMatrix<1> s = wide_laplacian(n, true, *pool_, *arena_);
    const std::array<std::int32_t, 2> cells{n, n};
    const Multigrid<1> split(s, cells, *arena_, {.parity_coarsening = true});
    const Multigrid<1> standard(s, cells, *arena_);
    parity.push_back(consistent_iterations(s, split, *pool_, *arena_));
    const int plain = consistent_iterations(s, standard, *pool_, *arena_);
    SCOPED_TRACE("n = " + std::to_string(n));
    // The standard coarsening misses the parity modes; the split one represents them.
    EXPECT_GE(plain, 2 * parity.back());
  }
  for (const int count : parity) {
    EXPECT_LE(count, 25);
    EXPECT_LE(count, (3 * parity[0] + 1) / 2);
  }
}

TEST_F(MultigridTest, SemidefiniteSolvesAConsistentSingularSystem) {
  // Nothing held: S has the four parity patterns as its null space.
  const BsrMatrix<1> s = wide_laplacian(32, false, *pool_, *arena_);
  const std::array<std::int32_t, 2> cells{32, 32};
  EXPECT_THROW(Multigrid<1>(s, cells, *arena_, {.parity_coarsening = true}), SolverError);
  const Multigrid<1> mg(s, cells, *arena_, {.parity_coarsening = true, .semidefinite = true});
  EXPECT_LE(consistent_iterations(s, mg, *pool_, *arena_), 40);
}

TEST_F(MultigridTest, ParityCoarseningHandlesOddResolutions) {
  for (const std::int32_t n : {33, 35}) {
    const BsrMatrix<1> s = wide_laplacian(n, true, *pool_, *arena_);
    const Multigrid<1> split(s, std::array<std::int32_t, 2>{n, n}, *arena_,
                             {.parity_coarsening = true});
    EXPECT_LE(consistent_iterations(s, split, *pool_, *arena_), 25) << "n = " << n;
  }
}

TEST_F(MultigridTest, GeometricHandlesAFlatGridAndBlocks) {
  // Two cells across: the short axis stops coarsening long before the long one.
  const geometry::Grid2D flat({0.0, 0.0}, {1.0 / 200, 1.0 / 200}, {200, 2});
  const Poisson p = assemble_poisson(flat, true, *pool_, *arena_);
  const Multigrid<1> mg(p.matrix, std::array<std::int32_t, 2>{200, 2}, *arena_);
  EXPECT_GE(mg.level_count(), 2);
  EXPECT_LE(cg_iterations(p, mg, *pool_, *arena_), 15);
  // Two unknowns per vertex, coupled: the same Laplacian times a 2 x 2 block.
  const auto grid = test::UnitBox<geometry::Grid2D>::make(40, *pool_, *arena_);
  const Poisson q = assemble_poisson(*grid, true, *pool_, *arena_);
  std::vector<double> blocks;
  for (const double v :
       test::copy_to_host(memory::ArrayView<const double>(q.matrix.view().values))) {
    blocks.insert(blocks.end(), {2.0 * v, 0.5 * v, 0.5 * v, 2.0 * v});
  }
  const BsrMatrix<2> a =
      BsrMatrix<2>::from_host(*pool_, q.matrix.block_rows(), q.matrix.block_columns(),
                              test::copy_to_host(q.matrix.view().offsets),
                              test::copy_to_host(q.matrix.view().columns), blocks);
  const Multigrid<2> geometric(a, std::array<std::int32_t, 2>{40, 40}, *arena_);
  auto b = memory::borrow_temporary<double>(*pool_, static_cast<std::size_t>(a.rows()), "test.b");
  auto x = memory::borrow_temporary<double>(*pool_, static_cast<std::size_t>(a.rows()), "test.x");
  fill(b.view(), 1.0, *arena_);
  fill(x.view(), 0.0, *arena_);
  EXPECT_LE(cg(as_operator(a), memory::ArrayView<const double>(b.view()), x.view(), *arena_,
               {.tolerance = 1e-8}, geometric)
                .iterations,
            15);
}

TEST_F(MultigridTest, ARebuildGivesWhatAFreshBuildGivesAndAFailedOneIsRefused) {
  const auto grid = test::UnitBox<geometry::Grid2D>::make(48, *pool_, *arena_);
  Poisson p = assemble_poisson(*grid, true, *pool_, *arena_);
  const std::array<std::int32_t, 2> cells{48, 48};
  Multigrid<1> rebuilt(p.matrix, cells, *arena_);
  Multigrid<1> algebraic(p.matrix, *arena_);
  // New values on the same pattern: twice the matrix plus 0.1 on its diagonal.
  const std::vector<double> values =
      test::copy_to_host(memory::ArrayView<const double>(p.matrix.view().values));
  const std::vector<std::int32_t> offsets = test::copy_to_host(p.matrix.view().offsets);
  const std::vector<std::int32_t> columns = test::copy_to_host(p.matrix.view().columns);
  std::vector<double> changed(values.size());
  for (std::size_t r = 0; r + 1 < offsets.size(); ++r) {
    for (auto k = offsets[r]; k < offsets[r + 1]; ++k) {
      const auto c = static_cast<std::size_t>(columns[static_cast<std::size_t>(k)]);
      changed[static_cast<std::size_t>(k)] =
          2.0 * values[static_cast<std::size_t>(k)] + (r == c ? 0.1 : 0.0);
    }
  }
  test::copy_to_device(p.matrix.view().values, changed);
  rebuilt.rebuild(p.matrix, cells, *arena_);
  algebraic.rebuild(p.matrix, *arena_);
  const Multigrid<1> fresh(p.matrix, cells, *arena_);
  const Multigrid<1> fresh_algebraic(p.matrix, *arena_);
  std::vector<double> from_rebuilt;
  std::vector<double> from_fresh;
  cg_iterations(p, rebuilt, *pool_, *arena_, &from_rebuilt);
  cg_iterations(p, fresh, *pool_, *arena_, &from_fresh);
  EXPECT_EQ(from_rebuilt, from_fresh);
  cg_iterations(p, algebraic, *pool_, *arena_, &from_rebuilt);
  cg_iterations(p, fresh_algebraic, *pool_, *arena_, &from_fresh);
  EXPECT_EQ(from_rebuilt, from_fresh);
  // A rebuild that fails leaves a preconditioner that refuses to be applied.
  const Poisson singular = assemble_poisson(*grid, false, *pool_, *arena_);
  EXPECT_THROW(rebuilt.rebuild(singular.matrix, cells, *arena_), SolverError);
  auto r = memory::borrow_temporary<double>(*pool_, static_cast<std::size_t>(p.dofs), "test.r");
  auto z = memory::borrow_temporary<double>(*pool_, static_cast<std::size_t>(p.dofs), "test.z");
  fill(r.view(), 1.0, *arena_);
  try {
    rebuilt.apply(memory::ArrayView<const double>(r.view()), z.view(), *arena_);
    FAIL() << "expected afem::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the last rebuild failed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Multigrid<1>(p.matrix, cells, *arena_, {.smoothing_range = 1.0}), Error);
  EXPECT_THROW(Multigrid<1>(p.matrix, *arena_, {.max_levels = -1}), Error);
}

TEST_F(MultigridTest, RepeatedSolvesTakeNothingFromThePool) {
  const auto grid = test::UnitBox<geometry::Grid2D>::make(48, *pool_, *arena_);
  const Poisson p = assemble_poisson(*grid, true, *pool_, *arena_);
  const Multigrid<1> geometric(p.matrix, std::array<std::int32_t, 2>{48, 48}, *arena_);
  const Multigrid<1> algebraic(p.matrix, *arena_);
  cg_iterations(p, geometric, *pool_, *arena_);
  cg_iterations(p, algebraic, *pool_, *arena_);
  const auto before = pool_->stats();
  const auto arena_before = arena_->stats().reserved_bytes;
  cg_iterations(p, geometric, *pool_, *arena_);
  cg_iterations(p, algebraic, *pool_, *arena_);
  const auto after = pool_->stats();
  EXPECT_EQ(after.upstream_allocations, before.upstream_allocations);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(arena_->stats().reserved_bytes, arena_before);
  // The hierarchy is named in the ledger by its owner.
  const auto ledger = pool_->ledger();
  EXPECT_NE(ledger.find("Multigrid.coarse_factor"), nullptr);
  EXPECT_NE(ledger.find("Multigrid.inverse_diagonal"), nullptr);
}

TEST_F(MultigridTest, GivesTheSameSolutionOnAnyThreadCount) {
  const auto grid = test::UnitBox<geometry::Grid2D>::make(160, *pool_, *arena_);
  const Poisson p = assemble_poisson(*grid, true, *pool_, *arena_);
  std::vector<std::vector<double>> solutions;
  for (const int threads : {1, 2, 3}) {
    const test::ThreadCount scope(threads);
    const Multigrid<1> geometric(p.matrix, std::array<std::int32_t, 2>{160, 160}, *arena_);
    const Multigrid<1> algebraic(p.matrix, *arena_);
    solutions.emplace_back();
    cg_iterations(p, geometric, *pool_, *arena_, &solutions.back());
    solutions.emplace_back();
    cg_iterations(p, algebraic, *pool_, *arena_, &solutions.back());
  }
  for (std::size_t i = 2; i < solutions.size(); ++i) {
    EXPECT_EQ(solutions[i], solutions[i % 2]) << "run " << i;
  }
}

}  // namespace
}  // namespace afem::fem
