// BSplineSpace: quadratic B-splines on 2D and 3D grids through interpolate() and integrate() at
// PIC particles: the numbering, partition of unity, exact reproduction of linear fields, single
// basis functions against the closed form, and mass and momentum conserved by a particle-to-grid
// transfer followed by a grid-to-particle one.
#include <gtest/gtest.h>

#include <Eigen/Core>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "arenafem/fem/bspline_space.hpp"
#include "arenafem/fem/field.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/interpolate.hpp"
#include "arenafem/fem/lagrange_element.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/quadrature/pic_quadrature.hpp"
#include "field_at.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"

namespace afem::fem {

// In a named namespace: nvcc warns of members of an unnamed one that only a concept reads.
namespace line_factored_checks {

/// An element that gives line values but numbers fewer nodes than their products: its sums must
/// not run axis by axis.
struct TruncatedLines {
  static constexpr int dimension = 2;
  static constexpr int node_count = 4;
  static constexpr int line_node_count = 3;
  using Coords = Eigen::Vector2d;
  static void line_values(const Coords& /*xi*/, double (&line)[2][3]) {
    for (auto& axis : line) {
      for (double& value : axis) {
        value = 0.0;
      }
    }
  }
};

// Which elements value_and_moment sums axis by axis: the B-splines, not the Lagrange elements
// (no line values) nor an element whose nodes are not all the products of its lines.
static_assert(detail::LineFactoredElement<BSplineElement<2>>);
static_assert(detail::LineFactoredElement<BSplineElement<3>>);
static_assert(!detail::LineFactoredElement<LagrangeElement<geometry::CellType::quadrilateral, 2>>);
static_assert(!detail::LineFactoredElement<TruncatedLines>);

}  // namespace line_factored_checks

namespace {

/// The quadratic B-spline N(t) centred at 0, and its derivative.
double spline(double t) {
  const double a = std::abs(t);
  return a <= 0.5 ? 0.75 - a * a : (a <= 1.5 ? 0.5 * (1.5 - a) * (1.5 - a) : 0.0);
}
double spline_slope(double t) {
  const double a = std::abs(t);
  const double sign = t < 0.0 ? -1.0 : 1.0;
  return a <= 0.5 ? -2.0 * t : (a <= 1.5 ? -sign * (1.5 - a) : 0.0);
}

/// The field x_axis (interpolating it sets each coefficient to its node centre's coordinate).
struct Coordinate {
  int axis = 0;
  template <int D>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s) const {
    return s.x[axis];
  }
};

/// rho N_i and rho u_p N_i, the particle-to-grid mass and momentum.
struct MassForm {
  double density = 1.0;
  template <class S, class V>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const V& v) const {
    return density * v.basis_value;
  }
};
template <int D>
struct MomentumForm {
  memory::ArrayView<const double> velocities;
  double density = 1.0;
  template <class S, class V>
  AFEM_HOST_DEVICE double operator()(const S& s, const V& v) const {
    return density * velocities[s.index * D + static_cast<std::size_t>(v.component)] *
           v.basis_value;
  }
};

/// Particles everywhere in the box [-0.5, 0.5]^dim of n cells of size h per axis: at cell corners
/// (the box's included), on cell faces, and at random points.
std::vector<double> particle_positions(int dim, int n, double h) {
  std::vector<double> positions;
  std::mt19937 random(31);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> plane(0, n);
  for (int i = 0; i < 300; ++i) {
    for (int d = 0; d < dim; ++d) {
      const bool on_plane = i < 40 || (i < 100 && d == i % dim);
      positions.push_back(-0.5 + (on_plane ? plane(random) * h : unit(random)));
    }
  }
  return positions;
}

/// The particles of particle_positions() binned on a grid, and a scalar field's value and
/// gradient at them copied to the host.
template <class G>
struct ParticleProbe {
  static constexpr int dim = G::dimension;
  std::vector<double> positions;
  std::size_t count = 0;
  memory::Temporary<double> x;
  memory::Temporary<double> measure;
  memory::Temporary<double> values;
  memory::Temporary<double> gradients;
  quadrature::PicQuadrature<G> pic;

  ParticleProbe(const G& grid, memory::Pool& pool, memory::Arena& arena)
      : positions(particle_positions(dim, grid.view().resolution[0], grid.view().cell_size[0])),
        count(positions.size() / dim),
        x(memory::borrow_temporary<double>(pool, positions.size(), "test.positions")),
        measure(memory::borrow_temporary<double>(pool, count, "test.measures")),
        values(memory::borrow_temporary<double>(pool, count, "test.values")),
        gradients(memory::borrow_temporary<double>(pool, count * dim, "test.gradients")),
        pic(grid, pool) {
    test::copy_to_device(x.view(), positions);
    test::copy_to_device(measure.view(), std::vector<double>(count, 1e-3));
    pic.rebin(x.view(), measure.view(), arena);
  }

  template <class Field>
  void sample(const Field& field, memory::Arena& arena, std::vector<double>& value,
              std::vector<double>& gradient) {
    interpolate(values.view(), pic, test::ValueAt{}, arena, field);
    interpolate(gradients.view(), pic, test::GradientAt{}, arena, field);
    value = test::copy_to_host(memory::ArrayView<const double>(values.view()));
    gradient = test::copy_to_host(memory::ArrayView<const double>(gradients.view()));
  }
};

template <class G>
class BSplineSpaceTest : public test::BackendTest {
protected:
  static constexpr int n = 4;
  static constexpr double h = 0.25;

  static G make_grid() {
    constexpr int dim = G::dimension;
    std::array<double, dim> origin{};
    std::array<double, dim> size{};
    std::array<std::int32_t, dim> resolution{};
    for (std::size_t d = 0; d < dim; ++d) {
      origin[d] = -0.5;
      size[d] = h;
      resolution[d] = n;
    }
    return G(origin, size, resolution);
  }
};

using Grids = ::testing::Types<geometry::Grid2D, geometry::Grid3D>;
TYPED_TEST_SUITE(BSplineSpaceTest, Grids);

TYPED_TEST(BSplineSpaceTest, NumbersTheCellCentresAndOneGhostLayer) {
  constexpr int dim = TypeParam::dimension;
  const TypeParam grid = this->make_grid();
  const BSplineSpace<TypeParam> space(grid, *this->pool_, *this->arena_);
  const int layers = TestFixture::n + 2;
  ASSERT_EQ(space.node_count(), dim == 2 ? layers * layers : layers * layers * layers);
  EXPECT_EQ(space.node_layers(0), layers);
  const auto cell_nodes = test::copy_to_host(space.view().cell_nodes);
  const auto holder = test::copy_to_host(space.node_cell_local());
  constexpr int npc = BSplineElement<dim>::node_count;
  for (std::int32_t cell = 0; cell < grid.cell_count(); ++cell) {
    std::int32_t index[dim];
    grid.view().cell_grid_index(cell, index);
    std::set<std::int32_t> distinct;
    for (int k = 0; k < npc; ++k) {
      const std::int32_t node =
          cell_nodes[static_cast<std::size_t>(cell) * npc + static_cast<std::size_t>(k)];
      distinct.insert(node);
      std::int32_t rest = node;
      for (int d = 0; d < dim; ++d) {  // lattice index = cell index + offset
        EXPECT_EQ(rest % layers, index[d] + BSplineElement<dim>::node_offset(k, d));
        rest /= layers;
      }
    }
    EXPECT_EQ(static_cast<int>(distinct.size()), npc);
  }
  for (std::int32_t node = 0; node < space.node_count(); ++node) {
    const std::int32_t pair = holder[static_cast<std::size_t>(node)];
    EXPECT_EQ(cell_nodes[static_cast<std::size_t>(pair)], node) << "node " << node;
  }
}

/// A scalar field's value, then its first moment about the sample (dim entries).
struct ValueAndMomentAt {
  template <class S, class Field>
  AFEM_HOST_DEVICE auto operator()(const S& s, const Field& u) const {
    constexpr int dim = Field::dim;
    const auto at = u.value_and_moment(s);
    Eigen::Matrix<double, dim + 1, 1> out;
    out[0] = at.value;
    out.template tail<dim>() = at.moment.transpose();
    return out;
  }
};

TYPED_TEST(BSplineSpaceTest, SumsToOneAndReproducesLinearFieldsAndTheirMomentsAtParticles) {
  constexpr int dim = TypeParam::dimension;
  // The first moment sum_k N_k u_k (x_k - x) of u = 1 is 0 (the basis reproduces x), and of u =
  // x_d it is h^2 / 4 along d (the moment matrix of the quadratic B-spline), wherever the particle
  // sits: MLS-MPM's affine velocity rests on both.
  constexpr double moment = TestFixture::h * TestFixture::h / 4.0;
  const TypeParam grid = this->make_grid();
  const BSplineSpace<TypeParam> space(grid, *this->pool_, *this->arena_);
  ParticleProbe<TypeParam> probe(grid, *this->pool_, *this->arena_);
  ASSERT_EQ(probe.pic.outside_count(), 0);
  const std::vector<double>& positions = probe.positions;
  const std::size_t count = probe.count;
  auto moments = memory::borrow_temporary<double>(*this->pool_, count * (dim + 1), "test.moments");
  DiscreteField field(space);
  // axis -1: every coefficient 1 (partition of unity); axis d: the field x_d.
  for (int axis = -1; axis < dim; ++axis) {
    if (axis < 0) {
      test::copy_to_device(field.dofs(),
                           std::vector<double>(static_cast<std::size_t>(space.node_count()), 1.0));
    } else {
      interpolate(field, Coordinate{axis}, *this->arena_);
    }
    std::vector<double> value;
    std::vector<double> gradient;
    probe.sample(field, *this->arena_, value, gradient);
    interpolate(moments.view(), probe.pic, ValueAndMomentAt{}, *this->arena_, field);
    const auto value_and_moment =
        test::copy_to_host(memory::ArrayView<const double>(moments.view()));
    for (std::size_t i = 0; i < count; ++i) {
      const double expected = axis < 0 ? 1.0 : positions[i * dim + static_cast<std::size_t>(axis)];
      EXPECT_NEAR(value[i], expected, 1e-13) << "particle " << i << " field " << axis;
      EXPECT_NEAR(value_and_moment[i * (dim + 1)], expected, 1e-13) << "particle " << i;
      for (int d = 0; d < dim; ++d) {
        EXPECT_NEAR(gradient[i * dim + static_cast<std::size_t>(d)], d == axis ? 1.0 : 0.0, 1e-12)
            << "particle " << i << " field " << axis << " derivative " << d;
        EXPECT_NEAR(value_and_moment[i * (dim + 1) + 1 + static_cast<std::size_t>(d)],
                    d == axis ? moment : 0.0, 1e-14)
            << "particle " << i << " field " << axis << " moment " << d;
      }
    }
  }
}

/// A vector field's value (dim entries), then its first moment about the sample, row by row.
struct VectorValueAndMomentAt {
  template <class S, class Field>
  AFEM_HOST_DEVICE auto operator()(const S& s, const Field& u) const {
    constexpr int dim = Field::dim;
    const auto at = u.value_and_moment(s);
    Eigen::Matrix<double, dim*(dim + 1), 1> out;
    out.template head<dim>() = at.value;
    for (int c = 0; c < dim; ++c) {
      out.template segment<dim>(dim + c * dim) = at.moment.row(c).transpose();
    }
    return out;
  }
};

TYPED_TEST(BSplineSpaceTest, ValueAndMomentOfAnyFieldAreTheSumsOverItsNodes) {
  // A vector field of random coefficients: its value sum_k N_k u_k and moment sum_k N_k u_k (x_k -
  // x)^T at each particle against the same sums over every node of the space, with the closed
  // form of the basis.
  constexpr int dim = TypeParam::dimension;
  constexpr double size = TestFixture::h;
  const TypeParam grid = this->make_grid();
  const BSplineSpace<TypeParam, dim> space(grid, *this->pool_, *this->arena_);
  ParticleProbe<TypeParam> probe(grid, *this->pool_, *this->arena_);
  ASSERT_EQ(probe.pic.outside_count(), 0);
  DiscreteField field(space);
  std::mt19937 random(5);
  std::uniform_real_distribution<double> coefficient(-1.0, 1.0);
  std::vector<double> dofs(static_cast<std::size_t>(space.dof_count()));
  for (double& dof : dofs) {
    dof = coefficient(random);
  }
  test::copy_to_device(field.dofs(), dofs);
  constexpr int width = dim * (dim + 1);
  auto sums = memory::borrow_temporary<double>(*this->pool_, probe.count * width, "test.sums");
  interpolate(sums.view(), probe.pic, VectorValueAndMomentAt{}, *this->arena_, field);
  const auto actual = test::copy_to_host(memory::ArrayView<const double>(sums.view()));
  const int layers = TestFixture::n + 2;
  for (std::size_t i = 0; i < probe.count; ++i) {
    std::vector<double> expected(width, 0.0);
    for (std::int32_t node = 0; node < space.node_count(); ++node) {
      double weight = 1.0;
      double offset[dim];
      std::int32_t rest = node;
      for (int d = 0; d < dim; ++d) {  // lattice index j centred at -0.5 + (j - 0.5) h
        const double x = probe.positions[i * dim + static_cast<std::size_t>(d)];
        offset[d] = -0.5 + (rest % layers - 0.5) * size - x;
        weight *= spline(offset[d] / size);
        rest /= layers;
      }
      for (std::size_t c = 0; c < dim; ++c) {
        const double u = weight * dofs[static_cast<std::size_t>(node) * dim + c];
        expected[c] += u;
        for (std::size_t d = 0; d < dim; ++d) {
          expected[dim + c * dim + d] += u * offset[d];
        }
      }
    }
    for (std::size_t k = 0; k < static_cast<std::size_t>(width); ++k) {
      EXPECT_NEAR(actual[i * width + k], expected[k], 1e-14)
          << "particle " << i << (k < dim ? " value " : " moment entry ") << k;
    }
  }
}

TYPED_TEST(BSplineSpaceTest, BasisFunctionsMatchTheClosedForm) {
  constexpr int dim = TypeParam::dimension;
  constexpr int layers = TestFixture::n + 2;
  const TypeParam grid = this->make_grid();
  const BSplineSpace<TypeParam> space(grid, *this->pool_, *this->arena_);
  ParticleProbe<TypeParam> probe(grid, *this->pool_, *this->arena_);
  const std::vector<double>& positions = probe.positions;
  const std::size_t count = probe.count;
  DiscreteField field(space);
  // A ghost node in a corner, a ghost node on a face, and interior nodes.
  for (const int lattice : {0, 1, 2, layers - 2}) {
    std::int32_t node = 0;
    double centre[dim];
    for (int d = dim - 1; d >= 0; --d) {
      const int along = d == 0 ? lattice : (d == 1 ? 2 : layers - 1 - lattice);
      node = node * layers + along;
      centre[d] = -0.5 + (along - 0.5) * TestFixture::h;
    }
    std::vector<double> dofs(static_cast<std::size_t>(space.node_count()), 0.0);
    dofs[static_cast<std::size_t>(node)] = 1.0;
    test::copy_to_device(field.dofs(), dofs);
    std::vector<double> value;
    std::vector<double> gradient;
    probe.sample(field, *this->arena_, value, gradient);
    int inside_support = 0;
    for (std::size_t i = 0; i < count; ++i) {
      double t[dim];
      double expected = 1.0;
      for (int d = 0; d < dim; ++d) {
        t[d] = (positions[i * dim + static_cast<std::size_t>(d)] - centre[d]) / TestFixture::h;
        expected *= spline(t[d]);
      }
      inside_support += expected > 0.0 ? 1 : 0;
      EXPECT_NEAR(value[i], expected, 1e-14) << "particle " << i << " node " << node;
      for (int d = 0; d < dim; ++d) {
        double slope = spline_slope(t[d]) / TestFixture::h;
        for (int e = 0; e < dim; ++e) {
          slope *= e == d ? 1.0 : spline(t[e]);
        }
        EXPECT_NEAR(gradient[i * dim + static_cast<std::size_t>(d)], slope, 1e-12)
            << "particle " << i << " node " << node << " derivative " << d;
      }
    }
    EXPECT_GT(inside_support, 3) << "node " << node;
  }
}

TYPED_TEST(BSplineSpaceTest, ParticleToGridToParticleConservesMassAndMomentum) {
  constexpr int dim = TypeParam::dimension;
  const TypeParam grid = this->make_grid();
  const BSplineSpace<TypeParam, 1> scalar(grid, *this->pool_, *this->arena_);
  const BSplineSpace<TypeParam, dim> vector(grid, *this->pool_, *this->arena_);
  const quadrature::Cells<TypeParam> cells(grid);
  const SpaceRestriction scalar_cells(scalar, cells, *this->arena_);
  const SpaceRestriction vector_cells(vector, cells, *this->arena_);
  const std::vector<double> positions = particle_positions(dim, TestFixture::n, TestFixture::h);
  const std::size_t count = positions.size() / dim;
  std::mt19937 random(5);
  std::uniform_real_distribution<double> volume(1e-4, 3e-4);
  std::uniform_real_distribution<double> speed(-2.0, 2.0);
  std::vector<double> volumes(count);
  std::vector<double> velocities(count * dim);
  for (auto& v : volumes) {
    v = volume(random);
  }
  for (auto& v : velocities) {
    v = speed(random);
  }
  auto x = memory::borrow_temporary<double>(*this->pool_, positions.size(), "test.positions");
  auto measure = memory::borrow_temporary<double>(*this->pool_, count, "test.volumes");
  auto particle_velocity =
      memory::borrow_temporary<double>(*this->pool_, count * dim, "test.velocities");
  test::copy_to_device(x.view(), positions);
  test::copy_to_device(measure.view(), volumes);
  test::copy_to_device(particle_velocity.view(), velocities);
  quadrature::PicQuadrature pic(cells, *this->pool_);
  pic.rebin(x.view(), measure.view(), *this->arena_);

  const double density = 1000.0;
  DiscreteField mass(scalar);
  DiscreteField momentum(vector);
  integrate(mass.dofs(), pic, scalar_cells, MassForm{density}, *this->arena_);
  integrate(momentum.dofs(), pic, vector_cells,
            MomentumForm<dim>{particle_velocity.view(), density}, *this->arena_);
  auto grid_mass = test::copy_to_host(memory::ArrayView<const double>(mass.dofs()));
  auto grid_momentum = test::copy_to_host(memory::ArrayView<const double>(momentum.dofs()));

  double particle_mass = 0.0;
  double particle_momentum[dim] = {};
  for (std::size_t p = 0; p < count; ++p) {
    particle_mass += density * volumes[p];
    for (int d = 0; d < dim; ++d) {
      particle_momentum[d] +=
          density * volumes[p] * velocities[p * dim + static_cast<std::size_t>(d)];
    }
  }
  double total_mass = 0.0;
  double total_momentum[dim] = {};
  int ghosts_with_mass = 0;
  for (std::size_t i = 0; i < grid_mass.size(); ++i) {
    total_mass += grid_mass[i];
    for (int d = 0; d < dim; ++d) {
      total_momentum[d] += grid_momentum[i * dim + static_cast<std::size_t>(d)];
    }
    ghosts_with_mass += i == 0 && grid_mass[i] > 0.0 ? 1 : 0;  // the corner ghost node
  }
  EXPECT_EQ(ghosts_with_mass, 1);  // particles at the box's corner reach the ghost layer
  EXPECT_NEAR(total_mass, particle_mass, 1e-12 * particle_mass);
  for (int d = 0; d < dim; ++d) {
    EXPECT_NEAR(total_momentum[d], particle_momentum[d], 1e-12 * particle_mass) << "axis " << d;
  }

  // Grid velocity = momentum / mass, interpolated back: the particles' momentum is the grid's.
  for (std::size_t i = 0; i < grid_mass.size(); ++i) {
    for (int d = 0; d < dim; ++d) {
      auto& v = grid_momentum[i * dim + static_cast<std::size_t>(d)];
      v = grid_mass[i] > 0.0 ? v / grid_mass[i] : 0.0;
    }
  }
  test::copy_to_device(momentum.dofs(), grid_momentum);
  auto new_velocity = memory::borrow_temporary<double>(*this->pool_, count * dim, "test.new");
  interpolate(new_velocity.view(), pic, test::ValueAt{}, *this->arena_, momentum);
  const auto after = test::copy_to_host(memory::ArrayView<const double>(new_velocity.view()));
  for (int d = 0; d < dim; ++d) {
    double sum = 0.0;
    for (std::size_t p = 0; p < count; ++p) {
      sum += density * volumes[p] * after[p * dim + static_cast<std::size_t>(d)];
    }
    EXPECT_NEAR(sum, particle_momentum[d], 1e-12 * particle_mass) << "axis " << d;
  }
}

}  // namespace
}  // namespace afem::fem
