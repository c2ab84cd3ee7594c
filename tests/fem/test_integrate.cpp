// integrate(): measures, the divergence theorem on boundary sides, matrices equal to an
// element-by-element Eigen reference, linear forms, partitions, thread-count independence,
// steady-state memory and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "arenafem/fem/boundary.hpp"
#include "arenafem/fem/component_restriction.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/interpolate.hpp"
#include "arenafem/fem/nodal_quadrature.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_partition.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/geometry/partition.hpp"
#include "arenafem/geometry/tagged_boundary.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/quadrature.hpp"
#include "reference_assembly.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"
#include "support/bounded_arena.hpp"
#include "unit_box.hpp"

#if !AFEM_HAS_CUDA && defined(_OPENMP)
#include <omp.h>
#endif

namespace afem::fem {
namespace {

struct One {
  template <int D>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& /*s*/) const {
    return 1.0;
  }
};

struct FirstCoordinate {
  template <int D>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s) const {
    return s.x[0];
  }
};
struct UnitLoad {
  template <class Sample, class Test>
  AFEM_HOST_DEVICE double operator()(const Sample& /*s*/, const Test& v) const {
    return v.value();
  }
};
struct Divergence {
  template <int D, class Field>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s, const Field& u) const {
    return u.div(s);
  }
};

struct Flux {
  template <int D, class Field>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s, const Field& u) const {
    return u.value(s).dot(s.normal);
  }
};

/// A quadratic vector field (reproduced exactly by degree-2 spaces).
struct Quadratic {
  template <int D>
  AFEM_HOST_DEVICE Eigen::Matrix<double, D, 1> operator()(const Sample<D>& s) const {
    Eigen::Matrix<double, D, 1> u;
    for (int d = 0; d < D; ++d) {
      u[d] = 0.3 + s.x[d] * s.x[(d + 1) % D] + 0.7 * s.x[d] * s.x[d] - 0.2 * s.x[(d + 1) % D];
    }
    return u;
  }
};

/// nu grad u : grad v + lambda div u div v + u . v (see test::ReferenceForm).
struct ElasticMassForm {
  double nu = 1.0;
  double lambda = 0.0;
  template <int D, int C>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& /*s*/, const ShapeFunction<D, C>& v,
                                     const ShapeFunction<D, C>& u) const {
    double value = nu * ddot(u.grad(), v.grad()) + dot(u.value(), v.value());
    if constexpr (C == D) {
      value += lambda * u.div() * v.div();
    }
    return value;
  }
};

/// The same form, declared symmetric: integrate() evaluates half of each element matrix.
struct SymmetricElasticMassForm : ElasticMassForm {
  static constexpr bool symmetric = true;
};

struct LaplaceForm {
  template <class S, class V, class U>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const V& v, const U& u) const {
    return dot(u.grad(), v.grad());
  }
};

/// f v with f(x) = 1 + x_0
struct LoadForm {
  template <int D, class V>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s, const V& v) const {
    return (1.0 + s.x[0]) * v.value();
  }
};

/// f . v with f = (1, 0, ..)
struct LoadVectorForm {
  template <int D, int C>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& /*s*/, const ShapeFunction<D, C>& v) const {
    return v.value()[0];
  }
};

struct Load {
  template <int D>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s) const {
    return 1.0 + s.x[0];
  }
};

struct Zero {
  template <int D>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& /*s*/) const {
    return 0.0;
  }
};

template <class G>
class GeometryIntegrateTest : public test::BackendTest {};
using Geometries = ::testing::Types<geometry::Grid2D, geometry::Grid3D, geometry::Trimesh,
                                    geometry::Quadmesh, geometry::Tetmesh, geometry::Hexmesh>;
TYPED_TEST_SUITE(GeometryIntegrateTest, Geometries);

TYPED_TEST(GeometryIntegrateTest, MeasuresTheBoxAndItsBoundary) {
  auto geometry = test::UnitBox<TypeParam>::make(3, *this->pool_, *this->arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::BoundarySides boundary(*geometry);
  const quadrature::Sides sides(*geometry);
  const quadrature::RegularQuadrature q_cells(cells, 1, *this->pool_);
  const quadrature::RegularQuadrature q_boundary(boundary, 1, *this->pool_);
  const quadrature::RegularQuadrature q_sides(sides, 1, *this->pool_);
  EXPECT_NEAR(integrate(q_cells, One{}, *this->arena_), 1.0, 1e-13);
  EXPECT_NEAR(integrate(q_boundary, One{}, *this->arena_), 2.0 * TypeParam::dimension, 1e-13);
  // Interior sides add up to more than the boundary; exactly for grids: (n - 1) planes per axis.
  if constexpr (std::is_same_v<TypeParam, geometry::Grid2D> ||
                std::is_same_v<TypeParam, geometry::Grid3D>) {
    EXPECT_NEAR(integrate(q_sides, One{}, *this->arena_), 4.0 * TypeParam::dimension, 1e-12);
  }
}

// Sides selected by tag: the measure of two faces of the unit box, and a load over them whose
// entries sum to that measure (the basis sums to one).
TYPED_TEST(GeometryIntegrateTest, TaggedBoundarySidesCoverTheirFaces) {
  // Only BoundarySides takes a TaggedBoundary, and not a temporary one (it keeps a pointer).
  static_assert(std::is_constructible_v<quadrature::BoundarySides<TypeParam>,
                                        const geometry::TaggedBoundary<TypeParam>&>);
  static_assert(!std::is_constructible_v<quadrature::BoundarySides<TypeParam>,
                                         geometry::TaggedBoundary<TypeParam>&&>);
  static_assert(!std::is_constructible_v<quadrature::Sides<TypeParam>,
                                         const geometry::TaggedBoundary<TypeParam>&>);
  static_assert(!std::is_constructible_v<quadrature::Cells<TypeParam>,
                                         const geometry::TaggedBoundary<TypeParam>&>);
  auto geometry = test::UnitBox<TypeParam>::make(3, *this->pool_, *this->arena_);
  const geometry::TaggedBoundary<TypeParam> faces(
      *geometry, {geometry::box_side_tag(0, true), geometry::box_side_tag(1, false)}, *this->pool_,
      *this->arena_);
  const quadrature::BoundarySides domain(faces);
  const quadrature::RegularQuadrature q(domain, 2, *this->pool_);
  EXPECT_NEAR(integrate(q, One{}, *this->arena_), 2.0, 1e-13);
  EXPECT_NEAR(integrate(q, FirstCoordinate{}, *this->arena_), 1.0 + 0.5, 1e-13);

  const LagrangeSpace<TypeParam, 2> space(*geometry, *this->pool_, *this->arena_);
  const SpaceRestriction restriction(space, domain, *this->arena_);
  auto load = memory::borrow_temporary<double>(
      *this->pool_, static_cast<std::size_t>(space.dof_count()), "test.load");
  integrate(load.view(), q, restriction, UnitLoad{}, *this->arena_);
  const auto values = test::copy_to_host(memory::ArrayView<const double>(load.view()));
  double sum = 0.0;
  int touched = 0;
  for (const double v : values) {
    sum += v;
    touched += v != 0.0 ? 1 : 0;
  }
  EXPECT_NEAR(sum, 2.0, 1e-12);
  EXPECT_GT(touched, 0);
  EXPECT_LT(touched, static_cast<int>(values.size()) / 2);
}

TYPED_TEST(GeometryIntegrateTest, DivergenceTheoremHoldsOnTheBoundarySides) {
  constexpr int dim = TypeParam::dimension;
  auto geometry = test::UnitBox<TypeParam>::make(3, *this->pool_, *this->arena_);
  const LagrangeSpace<TypeParam, 2, dim> space(*geometry, *this->pool_, *this->arena_);
  DiscreteField u(space);
  interpolate(u, Quadratic{}, *this->arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::BoundarySides boundary(*geometry);
  const quadrature::RegularQuadrature q_cells(cells, 4, *this->pool_);
  const quadrature::RegularQuadrature q_boundary(boundary, 4, *this->pool_);
  const double inside = integrate(q_cells, Divergence{}, *this->arena_, u);
  const double outside = integrate(q_boundary, Flux{}, *this->arena_, u);
  EXPECT_GT(std::abs(inside), 0.1);
  EXPECT_NEAR(inside, outside, 1e-12);
}

TYPED_TEST(GeometryIntegrateTest, LinearFormSumsToTheIntegralOfItsLoad) {
  auto geometry = test::UnitBox<TypeParam>::make(3, *this->pool_, *this->arena_);
  const LagrangeSpace<TypeParam, 2> space(*geometry, *this->pool_, *this->arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 4, *this->pool_);
  const SpaceRestriction restriction(space, cells, *this->arena_);
  auto b = memory::borrow_temporary<double>(*this->pool_,
                                            static_cast<std::size_t>(space.dof_count()), "test.b");
  integrate(b.view(), q, restriction, LoadForm{}, *this->arena_);
  double sum = 0.0;
  for (const double v : test::copy_to_host(memory::ArrayView<const double>(b.view()))) {
    sum += v;  // the basis is a partition of unity
  }
  EXPECT_NEAR(sum, 1.5, 1e-13);
  EXPECT_NEAR(integrate(q, Load{}, *this->arena_), 1.5, 1e-13);
}

TYPED_TEST(GeometryIntegrateTest, NodalQuadratureIntegratesTheSpacesBasis) {
  auto geometry = test::UnitBox<TypeParam>::make(2, *this->pool_, *this->arena_);
  const LagrangeSpace<TypeParam, 1> space(*geometry, *this->pool_, *this->arena_);
  const quadrature::Cells cells(*geometry);
  const NodalQuadrature q(cells, space, *this->pool_);
  EXPECT_EQ(q.points_per_element(), decltype(space)::Element::node_count);
  EXPECT_NEAR(integrate(q, Load{}, *this->arena_), 1.5, 1e-13);  // exact for linear loads
}

/// A space and form for the matrix comparisons: geometry, degree, components.
template <class G, int Degree, int C>
struct MatrixCase {
  using Geometry = G;
  static constexpr int degree = Degree;
  static constexpr int components = C;
};

template <class M>
class MatrixTest : public test::BackendTest {};
using MatrixCases =
    ::testing::Types<MatrixCase<geometry::Grid2D, 1, 1>, MatrixCase<geometry::Trimesh, 2, 2>,
                     MatrixCase<geometry::Quadmesh, 2, 2>, MatrixCase<geometry::Tetmesh, 1, 3>,
                     MatrixCase<geometry::Tetmesh, 2, 1>, MatrixCase<geometry::Hexmesh, 2, 1>,
                     MatrixCase<geometry::Grid3D, 1, 3>, MatrixCase<geometry::Hexmesh, 1, 3>>;
TYPED_TEST_SUITE(MatrixTest, MatrixCases);

TYPED_TEST(MatrixTest, EqualsAnElementByElementReference) {
  using G = typename TypeParam::Geometry;
  constexpr int nc = TypeParam::components;
  auto geometry = test::UnitBox<G>::make(3, *this->pool_, *this->arena_);
  const LagrangeSpace<G, TypeParam::degree, nc> space(*geometry, *this->pool_, *this->arena_);
  const quadrature::Cells cells(*geometry);
  const int order = 2 * TypeParam::degree;
  const quadrature::RegularQuadrature q(cells, order, *this->pool_);
  const SpaceRestriction restriction(space, cells, *this->arena_);
  BsrMatrix<nc> matrix(*this->pool_);
  const ElasticMassForm form{0.7, 1.3};
  integrate(matrix, q, restriction, restriction, form, *this->arena_);
  const Eigen::SparseMatrix<double> actual = test::to_eigen(matrix);
  const Eigen::SparseMatrix<double> expected =
      test::reference_matrix(space, {form.nu, form.lambda}, order);
  const double scale = Eigen::MatrixXd(expected).cwiseAbs().maxCoeff();
  const Eigen::MatrixXd difference = Eigen::MatrixXd(actual) - Eigen::MatrixXd(expected);
  EXPECT_LE(difference.cwiseAbs().maxCoeff(), 1e-12 * scale);
  const Eigen::MatrixXd dense(actual);
  EXPECT_LE((dense - dense.transpose()).cwiseAbs().maxCoeff(), 1e-14 * scale);
  // Every block of the pattern couples two nodes of one cell; the diagonal is present.
  for (Eigen::Index i = 0; i < dense.rows(); ++i) {
    EXPECT_GT(dense(i, i), 0.0);
  }

  // Assembling again reuses the plan and gives the same matrix bit for bit.
  const auto plan = matrix.triplet_order().data();
  integrate(matrix, q, restriction, restriction, form, *this->arena_);
  EXPECT_EQ(matrix.triplet_order().data(), plan);
  EXPECT_EQ((Eigen::MatrixXd(test::to_eigen(matrix)) - dense).cwiseAbs().maxCoeff(), 0.0);

  // Declared symmetric, the form is evaluated on half of each element matrix and mirrored: the
  // same matrix (up to the rounding of lambda u.div v.div, whose factors swap), exactly symmetric.
  BsrMatrix<nc> mirrored(*this->pool_);
  integrate(mirrored, q, restriction, restriction, SymmetricElasticMassForm{form}, *this->arena_);
  const Eigen::MatrixXd from_half(test::to_eigen(mirrored));
  EXPECT_LE((from_half - dense).cwiseAbs().maxCoeff(), 1e-15 * scale);
  EXPECT_EQ((from_half - from_half.transpose()).cwiseAbs().maxCoeff(), 0.0);
}

class IntegrateTest : public test::BackendTest {};

/// x_0^2 + x_1 as a function of the position.
struct Paraboloid {
  AFEM_HOST_DEVICE double operator()(const Eigen::Vector2d& x) const { return x[0] * x[0] + x[1]; }
};

struct Evaluate {
  template <int D, class Field>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s, const Field& f) const {
    return f(s);
  }
};

TEST_F(IntegrateTest, AnalyticFieldsAreEvaluatedAtTheSamplePosition) {
  auto geometry = test::UnitBox<geometry::Trimesh>::make(4, *pool_, *arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 2, *pool_);
  EXPECT_NEAR(integrate(q, Evaluate{}, *arena_, AnalyticField{Paraboloid{}}), 1.0 / 3.0 + 0.5,
              1e-14);
}

/// x² + y at the sample.
struct ParaboloidAt {
  AFEM_HOST_DEVICE double operator()(const Sample<2>& s) const { return s.x[0] * s.x[0] + s.x[1]; }
};

/// The value of a field at the sample.
struct FieldValue {
  template <int D, class Field>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s, const Field& f) const {
    return f.value(s);
  }
};

/// The field's value times the test function (a linear form).
struct CopyField {
  template <int D, class Field, class V>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s, const V& v, const Field& f) const {
    return f.value(s) * v.value();
  }
};

TEST_F(IntegrateTest, AFieldOnAnotherGeometryIsRefusedByName) {
  // Two meshes of the same shape: a field of one integrated over the other's cells would read
  // its dofs at cells it does not own.
  auto geometry = test::UnitBox<geometry::Trimesh>::make(4, *pool_, *arena_);
  auto other = test::UnitBox<geometry::Trimesh>::make(4, *pool_, *arena_);
  const LagrangeSpace<geometry::Trimesh, 1> space(*geometry, *pool_, *arena_);
  const LagrangeSpace<geometry::Trimesh, 1> other_space(*other, *pool_, *arena_);
  DiscreteField u(other_space);
  interpolate(u, ParaboloidAt{}, *arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 2, *pool_);
  const SpaceRestriction restriction(space, cells, *arena_);
  const auto expect_refused = [](auto&& call, const char* what) {
    try {
      call();
      FAIL() << what << " took a field of another geometry";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what())
                    .find(std::string(what) + ": field argument 0 lives on "
                                              "another geometry"),
                std::string::npos)
          << error.what();
    }
  };
  expect_refused([&] { (void)integrate(q, FieldValue{}, *arena_, u); }, "integrate");
  auto b = memory::borrow_temporary<double>(*pool_, static_cast<std::size_t>(space.dof_count()),
                                            "test.b");
  expect_refused([&] { integrate(b.view(), q, restriction, CopyField{}, *arena_, u); },
                 "integrate");
  auto values = memory::borrow_temporary<double>(*pool_, static_cast<std::size_t>(q.sample_count()),
                                                 "test.values");
  expect_refused([&] { interpolate(values.view(), q, FieldValue{}, *arena_, u); }, "interpolate");
  DiscreteField v(space);
  expect_refused([&] { interpolate(v, FieldValue{}, *arena_, u); }, "interpolate");
  // On its own geometry the same field is taken.
  const quadrature::Cells other_cells(*other);
  const quadrature::RegularQuadrature other_q(other_cells, 2, *pool_);
  EXPECT_NEAR(integrate(other_q, FieldValue{}, *arena_, u), 1.0 / 3.0 + 0.5, 0.05);
}

TEST_F(IntegrateTest, AFieldIsRefusedOnceItsSpaceWasRebuilt) {
  auto geometry = test::UnitBox<geometry::Trimesh>::make(4, *pool_, *arena_);
  LagrangeSpace<geometry::Trimesh, 2> space(*geometry, *pool_, *arena_);
  EXPECT_EQ(space.version(), 1U);
  DiscreteField u(space);
  interpolate(u, ParaboloidAt{}, *arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 4, *pool_);
  const double before = integrate(q, FieldValue{}, *arena_, u);
  space.rebuild(*arena_);
  EXPECT_EQ(space.version(), 2U);
  try {
    (void)integrate(q, FieldValue{}, *arena_, u);
    FAIL() << "a field of the old numbering was read";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("DiscreteField: its space was rebuilt"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)std::as_const(u).dofs(), Error);
  DiscreteField fresh(space);
  interpolate(fresh, ParaboloidAt{}, *arena_);
  EXPECT_NEAR(integrate(q, FieldValue{}, *arena_, fresh), before, 1e-14);
}

TEST_F(IntegrateTest, ExplicitQuadratureUsesTheCallersPointsAndChecksTheirSizes) {
  auto geometry = test::UnitBox<geometry::Quadmesh>::make(4, *pool_, *arena_);
  const quadrature::Cells cells(*geometry);
  const std::vector<double> midpoint = {0.5, 0.5};
  const std::vector<double> weight = {1.0};
  const quadrature::ExplicitQuadrature q(cells, midpoint, weight, *pool_);
  EXPECT_EQ(q.points_per_element(), 1);
  EXPECT_NEAR(integrate(q, Load{}, *arena_), 1.5, 1e-14);  // the midpoint rule is exact here
  // x^2 is not integrated exactly by one point per cell (1/3 exactly; 21/64 by midpoints).
  EXPECT_NEAR(integrate(q, Evaluate{}, *arena_, AnalyticField{Paraboloid{}}), 21.0 / 64.0 + 0.5,
              1e-14);
  const std::vector<double> three = {0.5, 0.5, 0.5};
  EXPECT_THROW(quadrature::ExplicitQuadrature(cells, three, weight, *pool_), Error);
  EXPECT_THROW(quadrature::RegularQuadrature(cells, 11, *pool_), Error);
}

/// LoadForm declaring that it reads no gradients.
struct ValuesOnlyLoadForm {
  static constexpr bool reads_gradients = false;
  template <int D, class V>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s, const V& v) const {
    return (1.0 + s.x[0]) * v.value();
  }
};

/// The x-derivative of the test function, with and without declaring that no gradient is read.
struct SlopeForm {
  template <int D, class V>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& /*s*/, const V& v) const {
    return v.grad()[0];
  }
};
struct GradientBlindSlopeForm {
  static constexpr bool reads_gradients = false;
  template <int D, class V>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& /*s*/, const V& v) const {
    return v.grad()[0];
  }
};

/// LoadForm with its load prepared once per sample; counts the preparations in the sample's slot.
struct PreparedLoadForm {
  memory::ArrayView<double> preparations;
  template <int D>
  AFEM_HOST_DEVICE double prepare(const Sample<D>& s) const {
    preparations[s.index] += 1.0;
    return 1.0 + s.x[0];
  }
  template <class V>
  AFEM_HOST_DEVICE double operator()(double load, const V& v) const {
    return load * v.value();
  }
};

/// f u v with f a field argument.
struct WeightedMassForm {
  template <int D, class V, class U, class Field>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s, const V& v, const U& u,
                                     const Field& f) const {
    return f(s) * u.value() * v.value();
  }
};

/// The same with f read once per sample by prepare(), which is handed the field, and no basis
/// gradients; counts the preparations in the sample's slot.
struct PreparedWeightedMassForm {
  static constexpr bool reads_gradients = false;
  memory::ArrayView<double> preparations;
  template <int D, class Field>
  AFEM_HOST_DEVICE double prepare(const Sample<D>& s, const Field& f) const {
    preparations[s.index] += 1.0;
    return f(s);
  }
  template <class V, class U>
  AFEM_HOST_DEVICE double operator()(double weight, const V& v, const U& u) const {
    return weight * u.value() * v.value();
  }
};

TEST_F(IntegrateTest, IntegrandsThatPrepareOrReadNoGradientsGiveTheSameForms) {
  auto geometry = test::UnitBox<geometry::Quadmesh>::make(5, *pool_, *arena_);
  const LagrangeSpace<geometry::Quadmesh, 2> space(*geometry, *pool_, *arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 3, *pool_);
  const SpaceRestriction restriction(space, cells, *arena_);
  const auto samples = static_cast<std::size_t>(q.sample_count());
  const auto dofs = static_cast<std::size_t>(space.dof_count());
  auto preparations = memory::borrow_temporary<double>(*pool_, samples, "test.preparations");
  auto once = [&] {
    for (const double count :
         test::copy_to_host(memory::ArrayView<const double>(preparations.view()))) {
      if (count != 1.0) {
        return false;
      }
    }
    return true;
  };

  test::copy_to_device(preparations.view(), std::vector<double>(samples, 0.0));
  auto plain = memory::borrow_temporary<double>(*pool_, dofs, "test.plain");
  auto prepared = memory::borrow_temporary<double>(*pool_, dofs, "test.prepared");
  auto values_only = memory::borrow_temporary<double>(*pool_, dofs, "test.values_only");
  integrate(plain.view(), q, restriction, LoadForm{}, *arena_);
  integrate(prepared.view(), q, restriction, PreparedLoadForm{preparations.view()}, *arena_);
  integrate(values_only.view(), q, restriction, ValuesOnlyLoadForm{}, *arena_);
  EXPECT_TRUE(once()) << "linear form";
  const auto b = test::copy_to_host(memory::ArrayView<const double>(plain.view()));
  const auto b_prepared = test::copy_to_host(memory::ArrayView<const double>(prepared.view()));
  const auto b_values = test::copy_to_host(memory::ArrayView<const double>(values_only.view()));
  ASSERT_EQ(b.size(), b_prepared.size());
  EXPECT_GT(*std::max_element(b.begin(), b.end()), 0.0);
  for (std::size_t i = 0; i < b.size(); ++i) {
    EXPECT_NEAR(b_prepared[i], b[i], 1e-15) << "dof " << i;
    EXPECT_NEAR(b_values[i], b[i], 1e-15) << "dof " << i;
  }

  // Declaring that no gradient is read is what skips them: such a form sees zero gradients.
  integrate(plain.view(), q, restriction, SlopeForm{}, *arena_);
  integrate(values_only.view(), q, restriction, GradientBlindSlopeForm{}, *arena_);
  const auto slopes = test::copy_to_host(memory::ArrayView<const double>(plain.view()));
  EXPECT_GT(*std::max_element(slopes.begin(), slopes.end()), 0.1);
  for (const double slope :
       test::copy_to_host(memory::ArrayView<const double>(values_only.view()))) {
    EXPECT_EQ(slope, 0.0);
  }

  test::copy_to_device(preparations.view(), std::vector<double>(samples, 0.0));
  const AnalyticField weight{Paraboloid{}};
  BsrMatrix<1> matrix(*pool_);
  BsrMatrix<1> matrix_prepared(*pool_);
  integrate(matrix, q, restriction, restriction, WeightedMassForm{}, *arena_, weight);
  integrate(matrix_prepared, q, restriction, restriction,
            PreparedWeightedMassForm{preparations.view()}, *arena_, weight);
  EXPECT_TRUE(once()) << "bilinear form";
  const Eigen::MatrixXd a = Eigen::MatrixXd(test::to_eigen(matrix));
  EXPECT_GT(a.cwiseAbs().maxCoeff(), 0.0);
  EXPECT_LE((Eigen::MatrixXd(test::to_eigen(matrix_prepared)) - a).cwiseAbs().maxCoeff(), 1e-15);
}

// Grid cells map reference gradients axis by axis (a diagonal inverse Jacobian): cells of unequal
// sides give the element-by-element reference matrix.
TEST_F(IntegrateTest, GridCellsOfUnequalSidesGiveTheReferenceMatrix) {
  const ElasticMassForm form{0.7, 1.3};
  auto check = [&](const auto& grid, auto space_tag) {
    using Space = typename decltype(space_tag)::type;
    constexpr int nc = Space::components;
    const Space space(grid, *pool_, *arena_);
    const quadrature::Cells cells(grid);
    const quadrature::RegularQuadrature q(cells, 2, *pool_);
    const SpaceRestriction restriction(space, cells, *arena_);
    BsrMatrix<nc> matrix(*pool_);
    integrate(matrix, q, restriction, restriction, form, *arena_);
    const Eigen::MatrixXd expected(test::reference_matrix(space, {form.nu, form.lambda}, 2));
    const double scale = expected.cwiseAbs().maxCoeff();
    EXPECT_LE((Eigen::MatrixXd(test::to_eigen(matrix)) - expected).cwiseAbs().maxCoeff(),
              1e-12 * scale)
        << Space::dimension << "D";
  };
  const geometry::Grid2D flat({0.0, 0.0}, {0.25, 0.1}, {3, 4});
  check(flat, std::type_identity<LagrangeSpace<geometry::Grid2D, 1, 2>>{});
  const geometry::Grid3D brick({0.0, 0.0, 0.0}, {0.2, 0.3, 0.5}, {2, 3, 2});
  check(brick, std::type_identity<LagrangeSpace<geometry::Grid3D, 1, 3>>{});
}

TEST_F(IntegrateTest, AScalarRestrictionReadWithComponentsAssemblesAsTheVectorSpacesOwn) {
  auto geometry = test::UnitBox<geometry::Trimesh>::make(4, *pool_, *arena_);
  const LagrangeSpace<geometry::Trimesh, 2> scalar_space(*geometry, *pool_, *arena_);
  const LagrangeSpace<geometry::Trimesh, 2, 2> vector_space(*geometry, *pool_, *arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 4, *pool_);
  SpaceRestriction scalar(scalar_space, cells, *arena_);
  const SpaceRestriction own(vector_space, cells, *arena_);
  const auto read = with_components<2>(scalar);
  EXPECT_EQ(read.node_count(), own.node_count());
  EXPECT_EQ(read.element_count(), own.element_count());

  const auto dofs = static_cast<std::size_t>(vector_space.dof_count());
  auto b_own = memory::borrow_temporary<double>(*pool_, dofs, "test.b_own");
  auto b_read = memory::borrow_temporary<double>(*pool_, dofs, "test.b_read");
  integrate(b_own.view(), q, own, LoadVectorForm{}, *arena_);
  integrate(b_read.view(), q, read, LoadVectorForm{}, *arena_);
  EXPECT_EQ(test::copy_to_host(memory::ArrayView<const double>(b_read.view())),
            test::copy_to_host(memory::ArrayView<const double>(b_own.view())));

  BsrMatrix<2> a_own(*pool_);
  BsrMatrix<2> a_read(*pool_);
  integrate(a_own, q, own, own, ElasticMassForm{1.0, 0.5}, *arena_);
  integrate(a_read, q, read, read, ElasticMassForm{1.0, 0.5}, *arena_);
  const Eigen::MatrixXd expected = Eigen::MatrixXd(test::to_eigen(a_own));
  EXPECT_GT(expected.cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ((Eigen::MatrixXd(test::to_eigen(a_read)) - expected).cwiseAbs().maxCoeff(), 0.0);

  // A rebuild of the scalar restriction is the component view's rebuild: new version, new plan.
  const std::uint64_t before = read.version();
  scalar.rebuild(*arena_);
  EXPECT_NE(read.version(), before);
  EXPECT_EQ(read.version(), scalar.version());
  integrate(a_read, q, read, read, ElasticMassForm{1.0, 0.5}, *arena_);
  EXPECT_EQ((Eigen::MatrixXd(test::to_eigen(a_read)) - expected).cwiseAbs().maxCoeff(), 0.0);
}

TEST_F(IntegrateTest, SumsInAnOrderThatDoesNotDependOnTheThreadCount) {
#if !AFEM_HAS_CUDA && defined(_OPENMP)
  auto geometry = test::UnitBox<geometry::Tetmesh>::make(6, *pool_, *arena_);
  const LagrangeSpace<geometry::Tetmesh, 2> space(*geometry, *pool_, *arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 4, *pool_);
  const SpaceRestriction restriction(space, cells, *arena_);
  const int threads = omp_get_max_threads();
  auto run = [&](int count) {
    omp_set_num_threads(count);
    BsrMatrix<1> matrix(*pool_);
    integrate(matrix, q, restriction, restriction, LaplaceForm{}, *arena_);
    auto values = test::copy_to_host(memory::ArrayView<const double>(matrix.view().values));
    auto b = memory::borrow_temporary<double>(*pool_, static_cast<std::size_t>(space.dof_count()),
                                              "test.b");
    integrate(b.view(), q, restriction, LoadForm{}, *arena_);
    for (const double v : test::copy_to_host(memory::ArrayView<const double>(b.view()))) {
      values.push_back(v);
    }
    return values;
  };
  const std::vector<double> one = run(1);
  for (const int count : {2, 3, 4}) {
    const std::vector<double> other = run(count);
    EXPECT_TRUE(other.size() == one.size() &&
                std::memcmp(one.data(), other.data(), one.size() * sizeof(double)) == 0)
        << count << " threads";
  }
  omp_set_num_threads(threads);
#else
  GTEST_SKIP() << "thread counts are an OpenMP backend matter";
#endif
}

TEST_F(IntegrateTest, AssemblesOnAPartitionWithCompactNodeNumbers) {
  const std::int32_t n = 4;
  auto geometry = test::UnitBox<geometry::Grid2D>::make(n, *pool_, *arena_);
  const LagrangeSpace<geometry::Grid2D, 1> space(*geometry, *pool_, *arena_);
  geometry::CellBasedGeometryPartition partition(*geometry, *pool_);
  // The lower half of the square: cells are numbered x fastest.
  std::vector<std::int32_t> lower(static_cast<std::size_t>(n * n / 2));
  for (std::size_t i = 0; i < lower.size(); ++i) {
    lower[i] = static_cast<std::int32_t>(i);
  }
  auto selection = memory::borrow_temporary<std::int32_t>(*pool_, lower.size(), "test.cells");
  test::copy_to_device(selection.view(), lower);
  partition.select_cells(selection.view(), *arena_);
  const SpacePartition space_partition(space, partition, *arena_);
  EXPECT_EQ(space_partition.node_count(), (n + 1) * (n / 2 + 1));
  const quadrature::Cells cells(partition);
  const quadrature::RegularQuadrature q(cells, 2, *pool_);
  EXPECT_NEAR(integrate(q, One{}, *arena_), 0.5, 1e-14);
  const SpaceRestriction restriction(space, cells, space_partition, *arena_);
  BsrMatrix<1> mass(*pool_);
  integrate(mass, q, restriction, restriction, ElasticMassForm{0.0, 0.0}, *arena_);
  EXPECT_EQ(mass.block_rows(), space_partition.node_count());
  EXPECT_NEAR(Eigen::MatrixXd(test::to_eigen(mass)).sum(), 0.5, 1e-14);

  // The partition changes: the restriction must be rebuilt before it is used again.
  partition.select_cells(memory::ArrayView<const std::int32_t>(selection.data(), 2), *arena_);
  EXPECT_THROW(integrate(mass, q, restriction, restriction, ElasticMassForm{}, *arena_), Error);
}

TEST_F(IntegrateTest, GivesBackEverythingItBorrowsAndLeavesTheCallersHandlesValid) {
  auto geometry = test::UnitBox<geometry::Hexmesh>::make(3, *pool_, *arena_);
  const LagrangeSpace<geometry::Hexmesh, 2, 3> space(*geometry, *pool_, *arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 4, *pool_);
  const SpaceRestriction restriction(space, cells, *arena_);
  // The caller's own step buffer, borrowed before the calls.
  const auto dofs = static_cast<std::size_t>(space.dof_count());
  auto mine = memory::borrow_temporary<double>(*arena_, dofs, "test.caller");
  const std::size_t live = arena_->stats().live_bytes;
  BsrMatrix<3> matrix(*pool_);
  integrate(matrix, q, restriction, restriction, ElasticMassForm{1.0, 1.0}, *arena_);
  integrate(mine.view(), q, restriction, LoadVectorForm{}, *arena_);
  EXPECT_GT(integrate(q, One{}, *arena_), 0.0);
  auto x = memory::borrow_temporary<double>(*pool_, dofs, "test.x");
  test::copy_to_device(x.view(), std::vector<double>(dofs, 0.0));
  cg(matrix, mine.view(), x.view(), *arena_, {.preconditioner = Preconditioner::block_jacobi});
  bicgstab(matrix, mine.view(), x.view(), *arena_);
  EXPECT_TRUE(mine.is_current());
  EXPECT_NO_THROW((void)mine.data());
  EXPECT_EQ(arena_->stats().live_bytes, live);
  EXPECT_EQ(arena_->stats().live_handles, 1U);
}

TEST_F(IntegrateTest, AMatrixAssemblyFailsCleanlyUntilTheArenaFits) {
  // A first assembly builds the matrix's pattern and plan, then its element matrices: with a
  // scratch arena at its hard capacity that is an OutOfMemory, not the end of the program, on any
  // backend.
  auto geometry = test::UnitBox<geometry::Hexmesh>::make(4, *pool_, *arena_);
  const LagrangeSpace<geometry::Hexmesh, 2> space(*geometry, *pool_, *arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 4, *pool_);
  const SpaceRestriction restriction(space, cells, *arena_);
  BsrMatrix<1> reference(*pool_);
  integrate(reference, q, restriction, restriction, LaplaceForm{}, *arena_);
  const Eigen::MatrixXd expected(test::to_eigen(reference));
  std::optional<BsrMatrix<1>> matrix;
  test::expect_clean_failures_until_it_fits(
      *pool_,
      [&](memory::Arena& bounded) {
        matrix.emplace(*pool_);
        integrate(*matrix, q, restriction, restriction, LaplaceForm{}, bounded);
        EXPECT_EQ(Eigen::MatrixXd(test::to_eigen(*matrix)), expected);
      },
      [&] { EXPECT_EQ(matrix->block_count(), 0); });
}

TEST_F(IntegrateTest, AMatrixKeepsItsPatternAndValuesWhenANewPlanDoesNotFit) {
  auto geometry = test::UnitBox<geometry::Hexmesh>::make(3, *pool_, *arena_);
  const LagrangeSpace<geometry::Hexmesh, 2> space(*geometry, *pool_, *arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 4, *pool_);
  SpaceRestriction restriction(space, cells, *arena_);
  BsrMatrix<1> matrix(*pool_);
  integrate(matrix, q, restriction, restriction, LaplaceForm{}, *arena_);
  const Eigen::MatrixXd assembled(test::to_eigen(matrix));
  const AssemblyKey key = matrix.plan_key();
  // A rebuilt restriction asks for a new plan; until one fits, the matrix is the one it was.
  restriction.rebuild(*arena_);
  test::expect_clean_failures_until_it_fits(
      *pool_,
      [&](memory::Arena& bounded) {
        integrate(matrix, q, restriction, restriction, LaplaceForm{}, bounded);
        EXPECT_FALSE(matrix.plan_key() == key);
      },
      [&] {
        EXPECT_TRUE(matrix.plan_key() == key);
        EXPECT_EQ(Eigen::MatrixXd(test::to_eigen(matrix)), assembled);
      });
  EXPECT_EQ(Eigen::MatrixXd(test::to_eigen(matrix)), assembled);
}

TEST_F(IntegrateTest, RefusesASpaceOnAnotherGeometry) {
  auto a = test::UnitBox<geometry::Grid2D>::make(2, *pool_, *arena_);
  auto b = test::UnitBox<geometry::Grid2D>::make(2, *pool_, *arena_);
  const LagrangeSpace<geometry::Grid2D, 1> space(*a, *pool_, *arena_);
  const quadrature::Cells cells_a(*a);
  const quadrature::Cells cells_b(*b);
  try {
    const SpaceRestriction restriction(space, cells_b, *arena_);
    FAIL() << "a restriction to a domain of another geometry was built";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("another geometry"), std::string::npos);
  }
  const SpaceRestriction restriction(space, cells_a, *arena_);
  const quadrature::RegularQuadrature q_b(cells_b, 2, *pool_);
  BsrMatrix<1> matrix(*pool_);
  EXPECT_THROW(integrate(matrix, q_b, restriction, restriction, LaplaceForm{}, *arena_), Error);
  EXPECT_EQ(matrix.block_rows(), 0);  // unchanged
  auto small = memory::borrow_temporary<double>(*pool_, 3, "test.small");
  const quadrature::RegularQuadrature q_a(cells_a, 2, *pool_);
  EXPECT_THROW(integrate(small.view(), q_a, restriction, LoadForm{}, *arena_), Error);
}

TEST_F(IntegrateTest, RepeatedAssemblyAndSolveTakeNothingUpstreamAfterTheFirst) {
  auto geometry = test::UnitBox<geometry::Quadmesh>::make(12, *pool_, *arena_);
  const LagrangeSpace<geometry::Quadmesh, 2> space(*geometry, *pool_, *arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 4, *pool_);
  const SpaceRestriction restriction(space, cells, *arena_);
  BsrMatrix<1> matrix(*pool_);
  DiscreteField u(space);
  const auto dofs = static_cast<std::size_t>(space.dof_count());
  auto b = memory::borrow_temporary<double>(*pool_, dofs, "test.b");
  auto mask = memory::borrow_temporary<std::uint8_t>(*pool_, dofs, "test.mask");
  std::uint64_t upstream_after_first = 0;
  std::vector<double> first_solution;
  for (int step = 0; step < 50; ++step) {
    arena_->reset();
    integrate(matrix, q, restriction, restriction, LaplaceForm{}, *arena_);
    integrate(b.view(), q, restriction, LoadForm{}, *arena_);
    boundary_dofs(space, mask.view(), *arena_);
    interpolate(u, Zero{}, *arena_);
    project_dirichlet(matrix, b.view(), mask.view(), u.dofs(), *arena_);
    const SolveResult result = cg(matrix, b.view(), u.dofs(), *arena_);
    EXPECT_LE(result.residual, 1e-10);
    const auto solution = test::copy_to_host(memory::ArrayView<const double>(u.dofs()));
    if (step == 0) {
      upstream_after_first = pool_->stats().upstream_allocations;
      first_solution = solution;
    } else {
      ASSERT_EQ(pool_->stats().upstream_allocations, upstream_after_first) << "step " << step;
      ASSERT_EQ(solution, first_solution) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace afem::fem
