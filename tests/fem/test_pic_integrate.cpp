// integrate() and interpolate() over a PicQuadrature: sums over the particles inside the
// geometry of measure times integrand, to round-off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "arenafem/fem/bspline_space.hpp"
#include "arenafem/fem/component_restriction.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/interpolate.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/geometry/partition.hpp"
#include "arenafem/quadrature/pic_quadrature.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"
#include "unit_box.hpp"

namespace afem::fem {
namespace {

/// 1 + x_0 x_1 + x_1^2 at the sample's position.
struct Smooth {
  template <int D>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s) const {
    return 1.0 + s.x[0] * s.x[1] + s.x[1] * s.x[1];
  }
};

double smooth(const double* x) {
  return 1.0 + x[0] * x[1] + x[1] * x[1];
}

struct MassForm {
  template <class S, class V, class U>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const V& v, const U& u) const {
    return u.value() * v.value();
  }
};

template <class G>
class PicIntegrateTest : public test::BackendTest {};
using Geometries =
    ::testing::Types<geometry::Grid2D, geometry::Trimesh, geometry::Tetmesh, geometry::Hexmesh>;
TYPED_TEST_SUITE(PicIntegrateTest, Geometries);

TYPED_TEST(PicIntegrateTest, IntegralsAreMeasureWeightedSumsOverTheParticlesInside) {
  constexpr int dim = TypeParam::dimension;
  auto geometry = test::UnitBox<TypeParam>::make(4, *this->pool_, *this->arena_);
  quadrature::PicQuadrature pic(*geometry, *this->pool_);
  const std::int32_t n = 1500;
  std::mt19937 random(17);
  std::uniform_real_distribution<double> coordinate(-0.05, 1.05);
  std::uniform_real_distribution<double> measure(1e-4, 3e-4);
  std::vector<double> positions(static_cast<std::size_t>(n) * dim);
  std::vector<double> measures(static_cast<std::size_t>(n));
  for (auto& x : positions) {
    x = coordinate(random);
  }
  for (auto& m : measures) {
    m = measure(random);
  }
  auto x = memory::borrow_temporary<double>(*this->pool_, positions.size(), "test.positions");
  auto m = memory::borrow_temporary<double>(*this->pool_, measures.size(), "test.measures");
  test::copy_to_device(x.view(), positions);
  test::copy_to_device(m.view(), measures);
  pic.rebin(x.view(), m.view(), *this->arena_);

  double expected = 0.0;
  double total_measure = 0.0;
  std::vector<double> expected_values(static_cast<std::size_t>(n), -1.0);
  for (std::int32_t i = 0; i < n; ++i) {
    const double* p = &positions[static_cast<std::size_t>(i) * dim];
    bool inside = true;
    for (int d = 0; d < dim; ++d) {
      inside = inside && p[d] >= 0.0 && p[d] <= 1.0;
    }
    if (inside) {
      expected += measures[static_cast<std::size_t>(i)] * smooth(p);
      total_measure += measures[static_cast<std::size_t>(i)];
      expected_values[static_cast<std::size_t>(i)] = smooth(p);
    }
  }
  EXPECT_NEAR(integrate(pic, Smooth{}, *this->arena_), expected, 1e-14 * expected);

  // interpolate() writes each particle's value at its index (outside particles untouched).
  auto values =
      memory::borrow_temporary<double>(*this->pool_, static_cast<std::size_t>(n), "test.values");
  test::copy_to_device(values.view(), std::vector<double>(static_cast<std::size_t>(n), -1.0));
  interpolate(values.view(), pic, Smooth{}, *this->arena_);
  const auto actual = test::copy_to_host(memory::ArrayView<const double>(values.view()));
  for (std::int32_t i = 0; i < n; ++i) {
    EXPECT_NEAR(actual[static_cast<std::size_t>(i)], expected_values[static_cast<std::size_t>(i)],
                1e-12);
  }

  // A mass matrix over the particles: its entries sum to the particles' total measure.
  const LagrangeSpace<TypeParam, 1> space(*geometry, *this->pool_, *this->arena_);
  const SpaceRestriction restriction(space, pic.domain(), *this->arena_);
  BsrMatrix<1> mass(*this->pool_);
  integrate(mass, pic, restriction, restriction, MassForm{}, *this->arena_);
  const auto mass_values = test::copy_to_host(memory::ArrayView<const double>(mass.view().values));
  double sum = 0.0;
  for (const double v : mass_values) {
    sum += v;
  }
  EXPECT_NEAR(sum, total_measure, 1e-14);
}

/// values[particle] * v: reads per-particle data at the sample's index.
struct ParticleLoad {
  memory::ArrayView<const double> values;
  template <class S, class V>
  AFEM_HOST_DEVICE double operator()(const S& s, const V& v) const {
    return values[s.index] * v.value();
  }
};

class PicPartitionTest : public test::BackendTest {};

// Over the cells of a partition, a linear form sums measure * particle value over the particles
// in those cells only; the restriction and quadrature follow each new selection.
TEST_F(PicPartitionTest, LinearFormsSumTheParticlesOfThePartitionsCells) {
  auto geometry = test::UnitBox<geometry::Grid2D>::make(4, *pool_, *arena_);
  geometry::CellBasedGeometryPartition partition(*geometry, *pool_, {.max_cells = 16});
  const quadrature::Cells cells(partition);
  const LagrangeSpace<geometry::Grid2D, 1> space(*geometry, *pool_, *arena_);
  SpaceRestriction restriction(space, cells, *arena_);
  quadrature::PicQuadrature pic(cells, *pool_);
  const std::size_t n = 600;
  std::mt19937 random(5);
  std::uniform_real_distribution<double> coordinate(0.0, 1.0);
  std::vector<double> positions(2 * n);
  std::vector<double> measures(n);
  std::vector<double> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    positions[2 * i] = coordinate(random);
    positions[2 * i + 1] = coordinate(random);
    measures[i] = 1e-3 * (1.0 + coordinate(random));
    values[i] = coordinate(random) - 0.5;
  }
  auto x = memory::borrow_temporary<double>(*pool_, positions.size(), "test.positions");
  auto m = memory::borrow_temporary<double>(*pool_, n, "test.measures");
  auto v = memory::borrow_temporary<double>(*pool_, n, "test.values");
  test::copy_to_device(x.view(), positions);
  test::copy_to_device(m.view(), measures);
  test::copy_to_device(v.view(), values);
  auto load = memory::borrow_temporary<double>(*pool_, static_cast<std::size_t>(space.node_count()),
                                               "test.load");
  for (const std::vector<std::int32_t>& selected :
       {std::vector<std::int32_t>{0, 5, 10, 15}, std::vector<std::int32_t>{1, 2, 3, 7, 11}}) {
    auto list = memory::borrow_temporary<std::int32_t>(*arena_, selected.size(), "test.cells");
    test::copy_to_device(list.view(), selected);
    partition.select_cells(list.view(), *arena_);
    restriction.rebuild(*arena_);
    pic.rebin(x.view(), m.view(), *arena_);
    integrate(load.view(), pic, restriction,
              ParticleLoad{memory::ArrayView<const double>(v.view())}, *arena_);
    double expected = 0.0;
    std::int32_t inside = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto cell = static_cast<std::int32_t>(positions[2 * i] * 4) +
                        4 * static_cast<std::int32_t>(positions[2 * i + 1] * 4);
      if (std::find(selected.begin(), selected.end(), cell) != selected.end()) {
        expected += measures[i] * values[i];
        ++inside;
      }
    }
    double sum = 0.0;
    for (const double value : test::copy_to_host(memory::ArrayView<const double>(load.view()))) {
      sum += value;
    }
    EXPECT_NEAR(sum, expected, 1e-15) << selected.size() << " cells";
    EXPECT_EQ(pic.outside_count(), static_cast<std::int32_t>(n) - inside);
    EXPECT_EQ(restriction.element_count(), static_cast<std::int32_t>(selected.size()));
  }
}

/// rho_p N_i: a scalar form that reads no gradients, with a per-particle part.
struct ParticleMass {
  static constexpr bool reads_gradients = false;
  memory::ArrayView<const double> density;
  template <class S>
  AFEM_HOST_DEVICE double prepare(const S& s) const {
    return density[s.index];
  }
  template <class V>
  AFEM_HOST_DEVICE double operator()(const double& rho, const V& v) const {
    return rho * v.basis_value;
  }
};

/// Component c of (v_p + A_p (x_i - x_p)) N_i - (A_p grad N_i)_c: reads the gradients and the
/// node's position, as APIC's momentum does.
template <int D>
struct ParticleMomentum {
  memory::ArrayView<const double> velocity;
  struct Particle {
    Eigen::Matrix<double, D, 1> position;
    Eigen::Matrix<double, D, 1> velocity;
  };
  template <class S>
  AFEM_HOST_DEVICE Particle prepare(const S& s) const {
    Particle particle{s.x, {}};
    for (int d = 0; d < D; ++d) {
      particle.velocity[d] = velocity[s.index * D + static_cast<std::size_t>(d)];
    }
    return particle;
  }
  template <class V>
  AFEM_HOST_DEVICE double operator()(const Particle& p, const V& v) const {
    const int c = v.component;
    const double affine = p.velocity.dot(v.node_position - p.position);
    return (p.velocity[c] + affine) * v.basis_value - p.velocity[c] * v.basis_gradient.sum();
  }
};

/// ParticleMomentum, all components of a node in one call.
template <int D>
struct ParticleMomentumByNode {
  static constexpr bool tests_by_node = true;
  ParticleMomentum<D> form;
  template <class S>
  AFEM_HOST_DEVICE auto prepare(const S& s) const {
    return form.prepare(s);
  }
  AFEM_HOST_DEVICE Eigen::Matrix<double, D, 1> operator()(
      const typename ParticleMomentum<D>::Particle& p, const NodeBasis<D>& v) const {
    const double affine = p.velocity.dot(v.node_position - p.position);
    return (p.velocity.array() + affine).matrix() * v.basis_value -
           p.velocity * v.basis_gradient.sum();
  }
};

/// ParticleMass, a node at a time (a scalar space: the node's one value).
struct ParticleMassByNode {
  static constexpr bool reads_gradients = false;
  static constexpr bool tests_by_node = true;
  memory::ArrayView<const double> density;
  template <class S>
  AFEM_HOST_DEVICE double prepare(const S& s) const {
    return density[s.index];
  }
  template <int D>
  AFEM_HOST_DEVICE double operator()(const double& rho, const NodeBasis<D>& v) const {
    return rho * v.basis_value;
  }
};

/// (x_p N_i + grad N_i)_c, with no per-particle part: a component, then a node, at a time.
struct PositionLoad {
  template <class S, class V>
  AFEM_HOST_DEVICE double operator()(const S& s, const V& v) const {
    return s.x[v.component] * v.basis_value + v.basis_gradient[v.component];
  }
};
struct PositionLoadByNode {
  static constexpr bool tests_by_node = true;
  template <int D>
  AFEM_HOST_DEVICE Eigen::Matrix<double, D, 1> operator()(const Sample<D>& s,
                                                          const NodeBasis<D>& v) const {
    return s.x * v.basis_value + v.basis_gradient;
  }
};

/// `count` random particles in the unit box: positions, measures, densities and velocities, on
/// the host and in the pool (until destroyed).
template <int D>
struct RandomParticles {
  std::size_t count;
  std::vector<double> positions;
  std::vector<double> measures;
  std::vector<double> densities;
  std::vector<double> velocities;
  memory::Temporary<double> x;
  memory::Temporary<double> m;
  memory::Temporary<double> rho;
  memory::Temporary<double> u;

  RandomParticles(std::size_t n, unsigned seed, memory::Pool& pool)
      : count(n),
        positions(n * D),
        measures(n),
        densities(n),
        velocities(n * D),
        x(memory::borrow_temporary<double>(pool, n * D, "test.positions")),
        m(memory::borrow_temporary<double>(pool, n, "test.measures")),
        rho(memory::borrow_temporary<double>(pool, n, "test.densities")),
        u(memory::borrow_temporary<double>(pool, n * D, "test.velocities")) {
    std::mt19937 random(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (auto& coordinate : positions) {
      coordinate = unit(random);
    }
    for (std::size_t p = 0; p < n; ++p) {
      measures[p] = 1e-3 * (1.0 + unit(random));
      densities[p] = 900.0 + 200.0 * unit(random);
    }
    for (auto& v : velocities) {
      v = unit(random) - 0.5;
    }
    test::copy_to_device(x.view(), positions);
    test::copy_to_device(m.view(), measures);
    test::copy_to_device(rho.view(), densities);
    test::copy_to_device(u.view(), velocities);
  }
};

/// Every entry of `actual` within `tolerance` times the largest of `expected` (not zero).
void expect_close(const std::vector<double>& actual, const std::vector<double>& expected,
                  double tolerance, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double scale = 0.0;
  for (const double value : expected) {
    scale = std::max(scale, std::abs(value));
  }
  ASSERT_GT(scale, 0.0) << what;
  for (std::size_t k = 0; k < expected.size(); ++k) {
    EXPECT_NEAR(actual[k], expected[k], tolerance * scale) << what << " entry " << k;
  }
}

template <class Space>
class FusedLinearFormsTest : public test::BackendTest {};
using FusedSpaces =
    ::testing::Types<LagrangeSpace<geometry::Grid2D, 1>, BSplineSpace<geometry::Grid2D>,
                     LagrangeSpace<geometry::Grid3D, 1>, BSplineSpace<geometry::Grid3D>>;
TYPED_TEST_SUITE(FusedLinearFormsTest, FusedSpaces);

// integrate() over a tuple of linear forms assembles each vector as a call per form does (one
// pass over the particles instead of one per form), and refuses a bad form before it writes any
// vector.
TYPED_TEST(FusedLinearFormsTest, AssemblesEachFormAsItsOwnCallDoes) {
  using Grid = typename TypeParam::Geometry;
  constexpr int dim = Grid::dimension;
  auto grid = test::UnitBox<Grid>::make(5, *this->pool_, *this->arena_);
  const quadrature::Cells<Grid> cells(*grid);
  const TypeParam space(*grid, *this->pool_, *this->arena_);
  const SpaceRestriction scalar(space, cells, *this->arena_);
  const auto vector = with_components<dim>(scalar);
  const RandomParticles<dim> particles(700, 23, *this->pool_);
  quadrature::PicQuadrature pic(cells, *this->pool_);
  pic.rebin(particles.x.view(), particles.m.view(), *this->arena_);

  const auto nodes = static_cast<std::size_t>(space.node_count());
  const ParticleMass mass_form{particles.rho.view()};
  const ParticleMomentum<dim> momentum_form{particles.u.view()};
  auto mass = memory::borrow_temporary<double>(*this->pool_, nodes, "test.mass");
  auto momentum = memory::borrow_temporary<double>(*this->pool_, nodes * dim, "test.momentum");
  integrate(mass.view(), pic, scalar, mass_form, *this->arena_);
  integrate(momentum.view(), pic, vector, momentum_form, *this->arena_);
  const auto expected_mass = test::copy_to_host(memory::ArrayView<const double>(mass.view()));
  const auto expected_momentum =
      test::copy_to_host(memory::ArrayView<const double>(momentum.view()));

  auto fused_mass = memory::borrow_temporary<double>(*this->pool_, nodes, "test.fused_mass");
  auto fused_momentum =
      memory::borrow_temporary<double>(*this->pool_, nodes * dim, "test.fused_momentum");
  const std::size_t live = this->arena_->stats().live_handles;
  integrate(std::tuple{LinearForm{fused_momentum.view(), vector, momentum_form},
                       LinearForm{fused_mass.view(), scalar, mass_form}},
            pic, *this->arena_);
  EXPECT_EQ(this->arena_->stats().live_handles, live) << "the scratch is given back";
  // The same sums in the same order; the compiler may contract a product into a sum differently
  // in the two kernels, so the entries agree to rounding.
  expect_close(test::copy_to_host(memory::ArrayView<const double>(fused_mass.view())),
               expected_mass, 1e-14, "mass");
  expect_close(test::copy_to_host(memory::ArrayView<const double>(fused_momentum.view())),
               expected_momentum, 1e-14, "momentum");
  double total = 0.0;
  for (const double value : expected_mass) {
    total += value;
  }
  double particle_mass = 0.0;
  for (std::size_t p = 0; p < particles.count; ++p) {
    particle_mass += particles.measures[p] * particles.densities[p];
  }
  EXPECT_NEAR(total, particle_mass, 1e-12 * particle_mass) << "the basis sums to one";

  // A vector of the wrong size in the second form: an error naming it, and the first form's
  // vector as it was.
  test::copy_to_device(fused_momentum.view(), std::vector<double>(nodes * dim, -1.0));
  try {
    integrate(std::tuple{LinearForm{fused_momentum.view(), vector, momentum_form},
                         LinearForm{fused_mass.view().subview(0, nodes - 1), scalar, mass_form}},
              pic, *this->arena_);
    ADD_FAILURE() << "a short vector was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("integrate (linear form)"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(test::copy_to_host(memory::ArrayView<const double>(fused_momentum.view())),
            std::vector<double>(nodes * dim, -1.0));
}

// An integrand that takes a node at a time (tests_by_node) assembles what the same form a component
// at a time does, with a per-particle part or without one, alone or beside another form, on
// vector and scalar spaces.
TYPED_TEST(FusedLinearFormsTest, ANodeAtATimeAssemblesWhatAComponentAtATimeDoes) {
  using Grid = typename TypeParam::Geometry;
  constexpr int dim = Grid::dimension;
  auto grid = test::UnitBox<Grid>::make(4, *this->pool_, *this->arena_);
  const quadrature::Cells<Grid> cells(*grid);
  const TypeParam space(*grid, *this->pool_, *this->arena_);
  const SpaceRestriction scalar(space, cells, *this->arena_);
  const auto vector = with_components<dim>(scalar);
  const RandomParticles<dim> particles(300, 41, *this->pool_);
  quadrature::PicQuadrature pic(cells, *this->pool_);
  pic.rebin(particles.x.view(), particles.m.view(), *this->arena_);

  const auto nodes = static_cast<std::size_t>(space.node_count());
  const auto assembled = [&](std::size_t size, const auto& call) {
    auto out = memory::borrow_temporary<double>(*this->pool_, size, "test.vector");
    call(out.view());
    return test::copy_to_host(memory::ArrayView<const double>(out.view()));
  };
  const ParticleMomentum<dim> momentum{particles.u.view()};
  const ParticleMass mass{particles.rho.view()};
  const auto per_component_momentum = assembled(nodes * dim, [&](memory::ArrayView<double> out) {
    integrate(out, pic, vector, momentum, *this->arena_);
  });
  expect_close(assembled(nodes * dim,
                         [&](memory::ArrayView<double> out) {
                           integrate(out, pic, vector, ParticleMomentumByNode<dim>{momentum},
                                     *this->arena_);
                         }),
               per_component_momentum, 1e-13, "momentum");
  expect_close(assembled(nodes * dim,
                         [&](memory::ArrayView<double> out) {
                           integrate(out, pic, vector, PositionLoadByNode{}, *this->arena_);
                         }),
               assembled(nodes * dim,
                         [&](memory::ArrayView<double> out) {
                           integrate(out, pic, vector, PositionLoad{}, *this->arena_);
                         }),
               1e-13, "position load (no per-particle part)");
  const auto per_component_mass = assembled(nodes, [&](memory::ArrayView<double> out) {
    integrate(out, pic, scalar, mass, *this->arena_);
  });
  auto fused_mass = memory::borrow_temporary<double>(*this->pool_, nodes, "test.fused_mass");
  auto fused_momentum =
      memory::borrow_temporary<double>(*this->pool_, nodes * dim, "test.fused_momentum");
  const ParticleMassByNode mass_by_node{particles.rho.view()};
  const auto expect_fused = [&](const char* what) {
    expect_close(test::copy_to_host(memory::ArrayView<const double>(fused_mass.view())),
                 per_component_mass, 1e-13, what);
    expect_close(test::copy_to_host(memory::ArrayView<const double>(fused_momentum.view())),
                 per_component_momentum, 1e-13, what);
  };
  integrate(std::tuple{LinearForm{fused_momentum.view(), vector, momentum},
                       LinearForm{fused_mass.view(), scalar, mass_by_node}},
            pic, *this->arena_);
  expect_fused("a node at a time beside a component at a time");
  integrate(
      std::tuple{LinearForm{fused_momentum.view(), vector, ParticleMomentumByNode<dim>{momentum}},
                 LinearForm{fused_mass.view(), scalar, mass_by_node}},
      pic, *this->arena_);
  expect_fused("both a node at a time");
}

}  // namespace

}  // namespace afem::fem
