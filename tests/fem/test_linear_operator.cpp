// Rectangular BSR matrices (spmv, spmv_transposed, transpose, the diagonal of A W A^T), forms
// assembled into them, the operator algebra, the vector operations and the solvers on composed
// operators with the caller's preconditioners, all against Eigen on the host.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/component_restriction.hpp"
#include "arenafem/fem/field.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/interpolate.hpp"
#include "arenafem/fem/linear_operator.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/fem/vector_ops.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/quadrature.hpp"
#include "random_bsr.hpp"
#include "reference_assembly.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"
#include "unit_box.hpp"

namespace afem::fem {
namespace {

using ConstView = memory::ArrayView<const double>;

/// A vector in `pool` holding `values`.
memory::Temporary<double> device_vector(memory::Pool& pool, const Eigen::VectorXd& values,
                                        const char* label) {
  auto v = memory::borrow_temporary<double>(pool, static_cast<std::size_t>(values.size()), label);
  test::copy_to_device(v.view(), std::vector<double>(values.data(), values.data() + values.size()));
  return v;
}

Eigen::VectorXd host_vector(ConstView v) {
  const std::vector<double> values = test::copy_to_host(v);
  return Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(values.size()));
}

Eigen::VectorXd ramp(Eigen::Index n, double from, double to) {
  return Eigen::VectorXd::LinSpaced(n, from, to).array().sin();
}

template <int R, int C>
struct Blocks {
  static constexpr int rows = R;
  static constexpr int columns = C;
};

template <class T>
class RectangularBsrTest : public test::BackendTest {};
using BlockShapes = ::testing::Types<Blocks<1, 2>, Blocks<1, 3>, Blocks<2, 3>, Blocks<3, 1>,
                                     Blocks<2, 2>, Blocks<3, 3>>;
TYPED_TEST_SUITE(RectangularBsrTest, BlockShapes);

TYPED_TEST(RectangularBsrTest, ProductsTransposeAndGramDiagonalMatchEigen) {
  constexpr int r = TypeParam::rows;
  constexpr int c = TypeParam::columns;
  const test::HostBsr host = test::random_rectangular_bsr<r, c>(37, 23, 4);
  const BsrMatrix<r, c> a = host.upload<r, c>(*this->pool_);
  ASSERT_EQ(a.rows(), 37 * r);
  ASSERT_EQ(a.columns(), 23 * c);
  const Eigen::MatrixXd reference(test::to_eigen(a));
  memory::Pool& pool = *this->pool_;
  memory::Arena& arena = *this->arena_;

  const Eigen::VectorXd x = ramp(a.columns(), 0.3, 4.0);
  const Eigen::VectorXd y0 = ramp(a.rows(), -1.0, 2.0);
  auto xs = device_vector(pool, x, "test.x");
  auto ys = device_vector(pool, y0, "test.y");
  spmv(a, xs.view(), ys.view(), arena, 2.0, -0.5);
  const Eigen::VectorXd expected = 2.0 * reference * x - 0.5 * y0;
  EXPECT_LE((host_vector(ys.view()) - expected).norm(), 1e-14 * expected.norm());

  // A^T y without forming A^T; the column index is built once, in the matrix's pool.
  const Eigen::VectorXd z0 = ramp(a.columns(), 1.0, -3.0);
  auto zs = device_vector(pool, z0, "test.z");
  spmv_transposed(a, ys.view(), zs.view(), arena, -1.5, 2.0);
  const Eigen::VectorXd expected_t = -1.5 * reference.transpose() * expected + 2.0 * z0;
  EXPECT_LE((host_vector(zs.view()) - expected_t).norm(), 1e-14 * expected_t.norm());
  const memory::PoolStats before = pool.stats();
  spmv_transposed(a, ys.view(), zs.view(), arena);
  EXPECT_EQ(pool.stats().live_bytes, before.live_bytes);
  EXPECT_EQ(pool.stats().misses + pool.stats().hits, before.misses + before.hits);
  EXPECT_LE((host_vector(zs.view()) - reference.transpose() * expected).norm(),
            1e-14 * expected_t.norm());

  const BsrMatrix<c, r> t = transpose(a, arena);
  EXPECT_EQ((Eigen::MatrixXd(test::to_eigen(t)) - reference.transpose()).cwiseAbs().maxCoeff(),
            0.0);
  EXPECT_EQ(t.block_count(), a.block_count());

  const Eigen::VectorXd w = ramp(a.columns(), 0.1, 0.9).cwiseAbs();
  auto ws = device_vector(pool, w, "test.w");
  auto ds = memory::borrow_temporary<double>(pool, static_cast<std::size_t>(a.rows()), "test.d");
  weighted_gram_diagonal(a, ws.view(), ds.view(), arena);
  const Eigen::VectorXd gram = (reference * w.asDiagonal() * reference.transpose()).diagonal();
  EXPECT_LE((host_vector(ds.view()) - gram).cwiseAbs().maxCoeff(), 1e-14 * gram.maxCoeff());

  if constexpr (r == c) {
    // Square blocks (the matrix is not square): no diagonal; a square one gives its own.
    const test::HostBsr square_host = test::random_bsr<r>(19, false, 8);
    const BsrMatrix<r> square = square_host.upload<r>(pool);
    auto sd = memory::borrow_temporary<double>(pool, static_cast<std::size_t>(square.rows()),
                                               "test.square_diagonal");
    as_operator(square).diagonal(sd.view(), arena);
    EXPECT_EQ(host_vector(sd.view()), Eigen::MatrixXd(test::to_eigen(square)).diagonal());
    EXPECT_THROW(as_operator(a).diagonal(ds.view(), arena), Error);
  }

  EXPECT_THROW(spmv(a, ys.view(), xs.view(), arena), Error);
  EXPECT_THROW(spmv_transposed(a, xs.view(), ys.view(), arena), Error);
  EXPECT_THROW(weighted_gram_diagonal(a, ds.view(), ws.view(), arena), Error);
  EXPECT_EQ(arena.stats().live_bytes, 0U);
}

// Products on selected rows write those rows only; a transpose into a matrix that holds the
// transpose's pattern rewrites its values and takes nothing from the pool.
TYPED_TEST(RectangularBsrTest, SelectedRowsAndATransposeThatKeepsItsPattern) {
  constexpr int r = TypeParam::rows;
  constexpr int c = TypeParam::columns;
  memory::Pool& pool = *this->pool_;
  memory::Arena& arena = *this->arena_;
  const test::HostBsr host = test::random_rectangular_bsr<r, c>(31, 17, 6);
  BsrMatrix<r, c> a = host.upload<r, c>(pool);
  const Eigen::MatrixXd reference(test::to_eigen(a));
  const Eigen::VectorXd x = ramp(a.columns(), 0.3, 4.0);
  const Eigen::VectorXd xt = ramp(a.rows(), -2.0, 1.0);
  auto xs = device_vector(pool, x, "test.x");
  auto xts = device_vector(pool, xt, "test.xt");
  Eigen::VectorXd mask_values = ramp(a.rows(), 0.0, 9.0);
  std::vector<std::uint8_t> fixed(static_cast<std::size_t>(a.rows()));
  for (std::size_t i = 0; i < fixed.size(); ++i) {
    fixed[i] = i % 3 == 1 ? 1 : 0;
  }
  auto fixed_s = memory::borrow_temporary<std::uint8_t>(pool, fixed.size(), "test.fixed");
  test::copy_to_device(fixed_s.view(), fixed);
  auto ys = device_vector(pool, mask_values, "test.y");
  spmv_where(a, FreeRows{fixed_s.view()}, xs.view(), ys.view(), arena);
  const Eigen::VectorXd full = reference * x;
  const Eigen::VectorXd y = host_vector(ys.view());
  for (std::size_t i = 0; i < fixed.size(); ++i) {
    const auto k = static_cast<Eigen::Index>(i);
    if (fixed[i] != 0) {
      EXPECT_EQ(y[k], mask_values[k]);
    } else {
      EXPECT_NEAR(y[k], full[k], 1e-14 * full.norm());
    }
  }
  Eigen::VectorXd weights = ramp(a.columns(), -1.0, 1.0);
  for (Eigen::Index i = 0; i < weights.size(); i += 2) {
    weights[i] = 0.0;
  }
  auto ws = device_vector(pool, weights, "test.w");
  auto zs = device_vector(pool, Eigen::VectorXd::Constant(a.columns(), 7.0), "test.z");
  spmv_transposed_where(a, NonzeroEntries{ws.view()}, xts.view(), zs.view(), arena);
  const Eigen::VectorXd full_t = reference.transpose() * xt;
  const Eigen::VectorXd z = host_vector(zs.view());
  for (Eigen::Index i = 0; i < z.size(); ++i) {
    if (weights[i] == 0.0) {
      EXPECT_EQ(z[i], 7.0);
    } else {
      EXPECT_NEAR(z[i], full_t[i], 1e-14 * full_t.norm());
    }
  }

  BsrMatrix<c, r> at(pool);
  transpose(a, at, arena);
  EXPECT_EQ(Eigen::MatrixXd(test::to_eigen(at)), Eigen::MatrixXd(reference.transpose()));
  EXPECT_EQ(at.transposed_from(), a.pattern_id());
  // New values in the same pattern: rewritten in place.
  const auto doubled = test::copy_to_host(ConstView(a.view().values));
  std::vector<double> twice(doubled.size());
  for (std::size_t i = 0; i < twice.size(); ++i) {
    twice[i] = 2.0 * doubled[i];
  }
  test::copy_to_device(a.view().values, twice);
  const double* values_before = at.view().values.data();
  const memory::PoolStats before = pool.stats();
  transpose(a, at, arena);
  EXPECT_EQ(pool.stats().hits + pool.stats().misses, before.hits + before.misses);
  EXPECT_EQ(at.view().values.data(), values_before);
  EXPECT_EQ(Eigen::MatrixXd(test::to_eigen(at)), Eigen::MatrixXd(2.0 * reference.transpose()));
  // A moved-from matrix is empty, with no pattern: nothing takes it for a transpose.
  BsrMatrix<c, r> moved(std::move(at));
  EXPECT_EQ(at.pattern_id(), 0U);  // NOLINT(bugprone-use-after-move): left empty by contract
  EXPECT_EQ(at.transposed_from(), 0U);
  EXPECT_EQ(at.block_count(), 0);
  transpose(a, at, arena);
  EXPECT_EQ(Eigen::MatrixXd(test::to_eigen(at)), Eigen::MatrixXd(2.0 * reference.transpose()));
  if constexpr (r == c) {
    EXPECT_THROW(transpose(at, at, arena), Error);
  }

  // The transpose of another matrix: at takes its pattern.
  const test::HostBsr other_host = test::random_rectangular_bsr<r, c>(12, 40, 9);
  const BsrMatrix<r, c> other = other_host.upload<r, c>(pool);
  transpose(other, at, arena);
  EXPECT_EQ(at.block_rows(), 40);
  EXPECT_EQ(at.transposed_from(), other.pattern_id());
  EXPECT_EQ(Eigen::MatrixXd(test::to_eigen(at)),
            Eigen::MatrixXd(Eigen::MatrixXd(test::to_eigen(other)).transpose()));
  EXPECT_EQ(arena.stats().live_bytes, 0U);
}

/// scale theta q div(phi) with theta = 1 + x_0: test q scalar, trial phi with D components.
struct DivergenceForm {
  double scale = 1.0;
  template <int D>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s, const ShapeFunction<D, 1>& q,
                                     const ShapeFunction<D, D>& phi) const {
    return scale * (1.0 + s.x[0]) * q.basis_value * phi.div();
  }
};

/// The same form for one velocity component, both spaces scalar.
struct DivergenceComponentForm {
  int component = 0;
  template <int D>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s, const ShapeFunction<D, 1>& q,
                                     const ShapeFunction<D, 1>& phi) const {
    return (1.0 + s.x[0]) * q.basis_value * phi.basis_gradient[component];
  }
};

/// theta * (sum of the velocity's divergence) q: the load of B u for u = (x_0, 2 x_1, 3 x_2).
struct DivergenceLoad {
  double divergence = 0.0;
  template <int D>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s, const ShapeFunction<D, 1>& q) const {
    return (1.0 + s.x[0]) * divergence * q.basis_value;
  }
};

/// u = (x_0, 2 x_1, 3 x_2) (its first D components).
struct StretchingVelocity {
  template <int D>
  AFEM_HOST_DEVICE Eigen::Matrix<double, D, 1> operator()(const Sample<D>& s) const {
    Eigen::Matrix<double, D, 1> u;
    for (int d = 0; d < D; ++d) {
      u[d] = (d + 1.0) * s.x[d];
    }
    return u;
  }
};

template <class G>
class RectangularFormTest : public test::BackendTest {};
using FormGeometries = ::testing::Types<geometry::Grid2D, geometry::Tetmesh, geometry::Quadmesh>;
TYPED_TEST_SUITE(RectangularFormTest, FormGeometries);

// A scalar-test, vector-trial form assembles into 1 x D blocks: each block column component is
// the scalar matrix of that component bit for bit, and B u is the divergence's load.
TYPED_TEST(RectangularFormTest, TheDivergenceOfAVectorFieldTestedByAScalarAssemblesIntoOneByD) {
  using G = TypeParam;
  constexpr int dim = G::dimension;
  memory::Pool& pool = *this->pool_;
  memory::Arena& arena = *this->arena_;
  auto geometry = test::UnitBox<G>::make(4, pool, arena);
  const LagrangeSpace<G, 1> scalar_space(*geometry, pool, arena);
  const LagrangeSpace<G, 1, dim> vector_space(*geometry, pool, arena);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 3, pool);
  SpaceRestriction scalar(scalar_space, cells, arena);
  BsrMatrix<1, dim> b(pool);
  integrate(b, q, scalar, with_components<dim>(scalar), DivergenceForm{}, arena);
  ASSERT_EQ(b.rows(), scalar_space.dof_count());
  ASSERT_EQ(b.columns(), vector_space.dof_count());
  const Eigen::MatrixXd assembled(test::to_eigen(b));
  for (int d = 0; d < dim; ++d) {
    BsrMatrix<1> component(pool);
    integrate(component, q, scalar, scalar, DivergenceComponentForm{d}, arena);
    const Eigen::MatrixXd expected(test::to_eigen(component));
    const Eigen::Index n = expected.cols();
    EXPECT_EQ((assembled(Eigen::all, Eigen::seqN(d, n, dim)) - expected).cwiseAbs().maxCoeff(), 0.0)
        << "component " << d;
  }

  DiscreteField<LagrangeSpace<G, 1, dim>> u(vector_space);
  interpolate(u, StretchingVelocity{}, arena);
  auto bu = memory::borrow_temporary<double>(pool, static_cast<std::size_t>(b.rows()), "test.bu");
  spmv(b, ConstView(u.dofs()), bu.view(), arena);
  auto load =
      memory::borrow_temporary<double>(pool, static_cast<std::size_t>(b.rows()), "test.load");
  integrate(load.view(), q, scalar, DivergenceLoad{dim * (dim + 1) / 2.0}, arena);
  const Eigen::VectorXd expected = host_vector(load.view());
  EXPECT_LE((host_vector(bu.view()) - expected).cwiseAbs().maxCoeff(),
            1e-13 * expected.cwiseAbs().maxCoeff());

  // A re-assembly on the same plan keeps the pattern: the transpose rewrites its values in
  // place. A rebuilt restriction gives a new pattern: the transpose and the column index follow.
  BsrMatrix<dim, 1> bt(pool);
  transpose(b, bt, arena);
  const std::uint64_t pattern = b.pattern_id();
  const double* bt_values = bt.view().values.data();
  integrate(b, q, scalar, with_components<dim>(scalar), DivergenceForm{-2.0}, arena);
  EXPECT_EQ(b.pattern_id(), pattern);
  transpose(b, bt, arena);
  EXPECT_EQ(bt.view().values.data(), bt_values);
  EXPECT_EQ(Eigen::MatrixXd(test::to_eigen(bt)), Eigen::MatrixXd(-2.0 * assembled.transpose()));
  scalar.rebuild(arena);
  integrate(b, q, scalar, with_components<dim>(scalar), DivergenceForm{2.0}, arena);
  EXPECT_NE(b.pattern_id(), pattern);
  transpose(b, bt, arena);
  EXPECT_EQ(bt.transposed_from(), b.pattern_id());
  EXPECT_EQ(Eigen::MatrixXd(test::to_eigen(bt)), Eigen::MatrixXd(2.0 * assembled.transpose()));
  auto q_values = device_vector(pool, ramp(b.rows(), 0.0, 5.0), "test.q");
  auto bt_q =
      memory::borrow_temporary<double>(pool, static_cast<std::size_t>(b.columns()), "test.bt_q");
  spmv_transposed(b, ConstView(q_values.view()), bt_q.view(), arena);
  const Eigen::VectorXd expected_bt_q = 2.0 * assembled.transpose() * ramp(b.rows(), 0.0, 5.0);
  EXPECT_LE((host_vector(bt_q.view()) - expected_bt_q).norm(), 1e-13 * expected_bt_q.norm());
  EXPECT_EQ(arena.stats().live_bytes, 0U);
}

class OperatorTest : public test::BackendTest {};

TEST_F(OperatorTest, ComposedOperatorsApplyTheirAlgebra) {
  const test::HostBsr square_host = test::random_bsr<1>(40, false, 3);
  const test::HostBsr wide_host = test::random_rectangular_bsr<1, 2>(40, 25, 8);
  const BsrMatrix<1> a = square_host.upload<1>(*pool_);
  const BsrMatrix<1, 2> m = wide_host.upload<1, 2>(*pool_);
  const Eigen::MatrixXd ea(test::to_eigen(a));
  const Eigen::MatrixXd em(test::to_eigen(m));
  const Eigen::VectorXd w = ramp(50, 0.2, 1.1).cwiseAbs();
  const Eigen::VectorXd x = ramp(40, -2.0, 3.0);
  auto ws = device_vector(*pool_, w, "test.w");
  auto xs = device_vector(*pool_, x, "test.x");
  auto ys = memory::borrow_temporary<double>(*pool_, 40, "test.y");
  const auto close = [&](const Eigen::VectorXd& expected) {
    return (host_vector(ys.view()) - expected).norm() <= 1e-13 * expected.norm();
  };

  // M W M^T: rows, columns and product.
  const auto schur = product(as_operator(m), scaling(ws.view()), transposed(m));
  EXPECT_EQ(schur.rows(), 40);
  EXPECT_EQ(schur.columns(), 40);
  schur.apply(xs.view(), ys.view(), *arena_);
  EXPECT_TRUE(close(em * w.asDiagonal() * em.transpose() * x));

  // A + diag(d), its diagonal the sum of both.
  const Eigen::VectorXd shift = ramp(40, 0.5, 1.5);
  auto shift_s = device_vector(*pool_, shift, "test.shift");
  const auto shifted = sum(as_operator(a), scaling(shift_s.view()));
  shifted.apply(xs.view(), ys.view(), *arena_);
  EXPECT_TRUE(close(ea * x + shift.cwiseProduct(x)));
  shifted.diagonal(ys.view(), *arena_);
  EXPECT_TRUE(close(ea.diagonal() + shift));

  // Fixed rows are the identity, fixed columns read zero; the diagonal has 1 on fixed rows.
  std::vector<std::uint8_t> mask(40, 0);
  Eigen::VectorXd free_x = x;
  Eigen::VectorXd fixed_diagonal = ea.diagonal();
  for (std::size_t i = 0; i < 40; i += 3) {
    mask[i] = 1;
    free_x[static_cast<Eigen::Index>(i)] = 0.0;
    fixed_diagonal[static_cast<Eigen::Index>(i)] = 1.0;
  }
  auto fixed = memory::borrow_temporary<std::uint8_t>(*pool_, 40, "test.fixed");
  test::copy_to_device(fixed.view(), mask);
  const auto held = with_fixed(as_operator(a), fixed.view());
  held.apply(xs.view(), ys.view(), *arena_);
  Eigen::VectorXd expected_held = ea * free_x;
  for (std::size_t i = 0; i < 40; i += 3) {
    expected_held[static_cast<Eigen::Index>(i)] = x[static_cast<Eigen::Index>(i)];
  }
  EXPECT_TRUE(close(expected_held));
  held.diagonal(ys.view(), *arena_);
  EXPECT_TRUE(close(fixed_diagonal));

  // A zero weight gives zero whatever the input holds there.
  Eigen::VectorXd sparse_w = w.head(40);
  sparse_w[5] = 0.0;
  auto sparse_ws = device_vector(*pool_, sparse_w, "test.sparse_w");
  Eigen::VectorXd poisoned = x;
  poisoned[5] = std::nan("");
  auto poisoned_s = device_vector(*pool_, poisoned, "test.poisoned");
  scaling(sparse_ws.view()).apply(poisoned_s.view(), ys.view(), *arena_);
  EXPECT_TRUE(close(sparse_w.cwiseProduct(x)));

  // A diagonal given apart.
  const auto with_d = with_diagonal(schur, shift_s.view());
  with_d.diagonal(ys.view(), *arena_);
  EXPECT_TRUE(close(shift));
  static_assert(DiagonalOperator<decltype(with_d)>);
  static_assert(!DiagonalOperator<decltype(schur)>);
  static_assert(DiagonalOperator<MatrixOperator<2, 2>>);
  static_assert(!DiagonalOperator<MatrixOperator<1, 2>>);

  // Sizes that do not chain are refused by name.
  try {
    (void)product(as_operator(m), as_operator(a));
    FAIL() << "a 40 x 50 operator times a 40 x 40 one was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("product: the left operator has 50 columns"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)with_fixed(as_operator(m), fixed.view()), Error);
  EXPECT_THROW((void)sum(as_operator(a), scaling(ws.view())), Error);
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

// The rows a composition skips are never read: with an arena that held NaNs, the fixed rows of
// with_fixed and the rows a zero weight multiplies leave no trace in the product.
TEST_F(OperatorTest, SkippedRowsLeaveNoTraceInAnArenaThatHeldNotANumbers) {
  const BsrMatrix<1, 2> m = test::random_rectangular_bsr<1, 2>(40, 25, 8).upload<1, 2>(*pool_);
  const Eigen::MatrixXd em(test::to_eigen(m));
  Eigen::VectorXd w = ramp(50, 0.2, 1.1).cwiseAbs();
  for (Eigen::Index i = 0; i < w.size(); i += 3) {
    w[i] = 0.0;
  }
  std::vector<std::uint8_t> mask(40, 0);
  for (std::size_t i = 1; i < 40; i += 4) {
    mask[i] = 1;
  }
  const Eigen::VectorXd x = ramp(40, -2.0, 3.0);
  Eigen::VectorXd free_x = x;
  for (std::size_t i = 0; i < 40; ++i) {
    if (mask[i] != 0) {
      free_x[static_cast<Eigen::Index>(i)] = 0.0;
    }
  }
  Eigen::VectorXd expected = em * w.asDiagonal() * em.transpose() * free_x;
  for (std::size_t i = 0; i < 40; ++i) {
    if (mask[i] != 0) {
      expected[static_cast<Eigen::Index>(i)] = x[static_cast<Eigen::Index>(i)];
    }
  }
  auto ws = device_vector(*pool_, w, "test.w");
  auto xs = device_vector(*pool_, x, "test.x");
  auto ys = memory::borrow_temporary<double>(*pool_, 40, "test.y");
  auto fixed = memory::borrow_temporary<std::uint8_t>(*pool_, 40, "test.fixed");
  test::copy_to_device(fixed.view(), mask);
  {
    auto junk = memory::borrow_temporary<double>(*arena_, 1000, "test.junk");
    test::copy_to_device(junk.view(), std::vector<double>(1000, std::nan("")));
  }
  const auto op =
      sum(with_fixed(product(as_operator(m), scaling(ws.view()), transposed(m)), fixed.view()),
          scaling(ws.view().subview(0, 40)));
  op.apply(xs.view(), ys.view(), *arena_);
  const Eigen::VectorXd with_shift = expected + w.head(40).cwiseProduct(x);
  const Eigen::VectorXd y = host_vector(ys.view());
  EXPECT_TRUE(y.allFinite());
  EXPECT_LE((y - with_shift).norm(), 1e-13 * with_shift.norm());
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

TEST_F(OperatorTest, VectorOperationsMatchTheHost) {
  const Eigen::VectorXd x = ramp(1001, 0.0, 7.0);
  const Eigen::VectorXd y = ramp(1001, 3.0, -2.0);
  auto xs = device_vector(*pool_, x, "test.x");
  auto ys = device_vector(*pool_, y, "test.y");
  EXPECT_NEAR(dot(xs.view(), ys.view(), *arena_), x.dot(y), 1e-12);
  EXPECT_NEAR(norm(xs.view(), *arena_), x.norm(), 1e-12);
  axpby(2.0, xs.view(), -3.0, ys.view(), *arena_);
  EXPECT_LE((host_vector(ys.view()) - (2.0 * x - 3.0 * y)).cwiseAbs().maxCoeff(), 1e-14);
  scale(ys.view(), 0.5, *arena_);
  EXPECT_LE((host_vector(ys.view()) - (x - 1.5 * y)).cwiseAbs().maxCoeff(), 1e-14);
  copy(xs.view(), ys.view(), *arena_);
  EXPECT_EQ(host_vector(ys.view()), x);
  fill(ys.view(), 4.0, *arena_);
  EXPECT_EQ(host_vector(ys.view()), Eigen::VectorXd::Constant(1001, 4.0));
  auto shorter = memory::borrow_temporary<double>(*pool_, 1000, "test.shorter");
  EXPECT_THROW((void)dot(xs.view(), shorter.view(), *arena_), Error);
  EXPECT_THROW(axpby(1.0, xs.view(), 1.0, shorter.view(), *arena_), Error);
  EXPECT_THROW(copy(xs.view(), shorter.view(), *arena_), Error);
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

class ComposedSolveTest : public test::BackendTest {
protected:
  /// M W M^T + I for a random 1 x 2 block M: symmetric positive definite, matrix-free.
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    m_.emplace(test::random_rectangular_bsr<1, 2>(60, 40, 12).upload<1, 2>(*pool_));
    const Eigen::MatrixXd em(test::to_eigen(*m_));
    w_ = ramp(80, 0.3, 2.0).cwiseAbs();
    dense_ = em * w_.asDiagonal() * em.transpose() + Eigen::MatrixXd::Identity(60, 60);
    memory::replace_owned(ws_, device_vector(*pool_, w_, "test.w"));
    memory::replace_owned(ones_, device_vector(*pool_, Eigen::VectorXd::Ones(60), "test.ones"));
    b_ = ramp(60, 1.0, 9.0);
    memory::replace_owned(bs_, device_vector(*pool_, b_, "test.b"));
    memory::replace_owned(xs_, memory::borrow_temporary<double>(*pool_, 60, "test.x"));
    memory::replace_owned(inverse_diagonal_,
                          device_vector(*pool_, dense_.diagonal().cwiseInverse(), "test.inverse"));
    memory::replace_owned(diagonal_, device_vector(*pool_, dense_.diagonal(), "test.diagonal"));
  }
  void TearDown() override {
    for (auto* v : {&ws_, &ones_, &bs_, &xs_, &inverse_diagonal_, &diagonal_}) {
      memory::replace_owned(*v, memory::Temporary<double>{});
    }
    m_.reset();
    BackendTest::TearDown();
  }
  [[nodiscard]] auto op() const {
    return sum(product(as_operator(*m_), scaling(ws_.view()), transposed(*m_)),
               scaling(ones_.view()));
  }
  SolveResult solve_from_zero(const auto& solve) {
    test::copy_to_device(xs_.view(), std::vector<double>(60, 0.0));
    return solve();
  }
  [[nodiscard]] double error() const {
    const Eigen::VectorXd expected = dense_.ldlt().solve(b_);
    return (host_vector(xs_.view()) - expected).norm() / expected.norm();
  }

  std::optional<BsrMatrix<1, 2>> m_;
  Eigen::VectorXd w_;
  Eigen::MatrixXd dense_;
  Eigen::VectorXd b_;
  memory::Temporary<double> ws_, ones_, bs_, xs_, inverse_diagonal_, diagonal_;
};

// The caller's preconditioner: the inverse diagonal given as an operator is Jacobi, bit for bit.
TEST_F(ComposedSolveTest, ConjugateGradientsTakeTheCallersPreconditioner) {
  const auto a = op();
  const SolveResult mine = solve_from_zero([&] {
    return cg(a, bs_.view(), xs_.view(), *arena_, {.tolerance = 1e-12},
              scaling(inverse_diagonal_.view()));
  });
  EXPECT_LE(error(), 1e-10);
  const Eigen::VectorXd x_mine = host_vector(xs_.view());
  const SolveResult jacobi = solve_from_zero([&] {
    return cg(with_diagonal(a, diagonal_.view()), bs_.view(), xs_.view(), *arena_,
              {.tolerance = 1e-12, .preconditioner = Preconditioner::jacobi});
  });
  EXPECT_EQ(mine.iterations, jacobi.iterations);
  EXPECT_EQ(host_vector(xs_.view()), x_mine);
  const SolveResult plain = solve_from_zero([&] {
    return cg(a, bs_.view(), xs_.view(), *arena_,
              {.tolerance = 1e-12, .preconditioner = Preconditioner::none});
  });
  EXPECT_LE(error(), 1e-10);
  EXPECT_GT(plain.iterations, 0);
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

TEST_F(ComposedSolveTest, BiCgStabSolvesAMatrixFreeOperatorWithTheCallersPreconditioner) {
  const auto a = op();
  const SolveResult result = solve_from_zero([&] {
    return bicgstab(a, bs_.view(), xs_.view(), *arena_, {.tolerance = 1e-12},
                    scaling(inverse_diagonal_.view()));
  });
  EXPECT_GT(result.iterations, 0);
  EXPECT_LE(result.residual, 1e-12);
  EXPECT_LE(error(), 1e-10);
  solve_from_zero([&] {
    return bicgstab(a, bs_.view(), xs_.view(), *arena_,
                    {.tolerance = 1e-12, .preconditioner = Preconditioner::none});
  });
  EXPECT_LE(error(), 1e-10);
}

// The absolute tolerance stops the first iteration whose residual norm reaches it.
TEST_F(ComposedSolveTest, AnAbsoluteToleranceStopsAtTheFirstResidualBelowIt) {
  const auto a = op();
  const double goal = 1e-6 * b_.norm();
  const SolveOptions options{
      .tolerance = 0.0, .preconditioner = Preconditioner::none, .absolute_tolerance = goal};
  const SolveResult result =
      solve_from_zero([&] { return cg(a, bs_.view(), xs_.view(), *arena_, options); });
  EXPECT_LE(result.residual_norm, goal);
  EXPECT_DOUBLE_EQ(result.residual, result.residual_norm / b_.norm());
  EXPECT_LE((dense_ * host_vector(xs_.view()) - b_).norm(), 1.01 * goal);
  SolveOptions fewer = options;
  fewer.max_iterations = result.iterations - 1;
  EXPECT_THROW(solve_from_zero([&] { return cg(a, bs_.view(), xs_.view(), *arena_, fewer); }),
               SolverError);
}

TEST_F(ComposedSolveTest, RefusesAPreconditionerItCannotUse) {
  const auto a = op();
  // Jacobi on an operator without a diagonal.
  try {
    solve_from_zero([&] { return cg(a, bs_.view(), xs_.view(), *arena_); });
    FAIL() << "Jacobi ran without a diagonal";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("needs the operator's diagonal"), std::string::npos)
        << error.what();
  }
  // A preconditioner of another size.
  EXPECT_THROW(solve_from_zero(
                   [&] { return cg(a, bs_.view(), xs_.view(), *arena_, {}, scaling(ws_.view())); }),
               Error);
  // A negative definite preconditioner.
  scale(inverse_diagonal_.view(), -1.0, *arena_);
  try {
    solve_from_zero([&] {
      return cg(a, bs_.view(), xs_.view(), *arena_, {.tolerance = 1e-12},
                scaling(inverse_diagonal_.view()));
    });
    FAIL() << "cg accepted a negative definite preconditioner";
  } catch (const SolverError& error) {
    EXPECT_NE(std::string(error.what()).find("preconditioner is not positive definite"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(arena_->stats().live_bytes, 0U);
}

// After the first solve (which builds the column index), solving again takes nothing from the
// pool: the operators' intermediate vectors come from the arena.
TEST_F(ComposedSolveTest, RepeatedSolvesTakeNothingFromThePool) {
  const auto a = op();
  const auto run = [&] {
    return solve_from_zero([&] {
      return cg(a, bs_.view(), xs_.view(), *arena_, {.tolerance = 1e-10},
                scaling(inverse_diagonal_.view()));
    });
  };
  run();
  arena_->reset();
  const memory::PoolStats before = pool_->stats();
  for (int i = 0; i < 3; ++i) {
    run();
    arena_->reset();
  }
  EXPECT_EQ(pool_->stats().upstream_allocations, before.upstream_allocations);
  EXPECT_EQ(pool_->stats().hits + pool_->stats().misses, before.hits + before.misses);
}

}  // namespace
}  // namespace afem::fem
