// A DiscreteField's value and gradient interpolated at PIC particles (what grid-to-particle
// transfers do) against the analytic field it holds: P1, Q1 and Q2, scalar and vector, on grids
// and meshes, with particles inside cells, on cell faces and edges, at cell corners and on the
// boundary of the box.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "arenafem/fem/field.hpp"
#include "arenafem/fem/interpolate.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/quadrature/pic_quadrature.hpp"
#include "field_at.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"
#include "unit_box.hpp"

namespace afem::fem {
namespace {

/// p(x) = sum_k coefficient_k prod_d x_d^power_kd: the terms of a fixed list that a space of
/// `degree` on tensor-product cells (each power <= degree) or simplices (total power <= degree)
/// reproduces, in `dim` dimensions.
struct Polynomial {
  static constexpr int max_terms = 16;
  int count = 0;
  int dim = 0;
  double coefficient[max_terms] = {};
  int power[max_terms][3] = {};

  Polynomial(int dimension, int degree, bool tensor) : dim(dimension) {
    struct Term {
      double coefficient;
      int power[3];
    };
    const Term all[] = {{0.5, {0, 0, 0}},  {0.25, {1, 0, 0}},  {-0.5, {0, 1, 0}}, {0.75, {0, 0, 1}},
                        {0.3, {1, 1, 0}},  {-0.2, {0, 1, 1}},  {0.15, {1, 0, 1}}, {0.4, {1, 1, 1}},
                        {0.6, {2, 0, 0}},  {-0.35, {0, 2, 0}}, {0.45, {0, 0, 2}}, {0.25, {2, 1, 0}},
                        {-0.3, {1, 2, 0}}, {0.2, {2, 2, 0}},   {-0.1, {2, 1, 2}}};
    for (const Term& term : all) {
      int total = 0;
      int largest = 0;
      for (int d = 0; d < 3; ++d) {
        total += term.power[d];
        largest = std::max(largest, term.power[d]);
      }
      const bool in_dimension = dimension == 3 || term.power[2] == 0;
      if (in_dimension && (tensor ? largest <= degree : total <= degree)) {
        coefficient[count] = term.coefficient;
        for (int d = 0; d < 3; ++d) {
          power[count][d] = term.power[d];
        }
        ++count;
      }
    }
  }

  /// d p / d x_wrt at x, or p(x) itself when wrt is -1.
  AFEM_HOST_DEVICE double evaluate(const double* x, int wrt) const {
    double sum = 0.0;
    for (int k = 0; k < count; ++k) {
      double term = coefficient[k];
      for (int d = 0; d < dim; ++d) {
        int exponent = power[k][d];
        if (d == wrt) {
          term *= exponent;
          exponent = exponent > 0 ? exponent - 1 : 0;
        }
        for (int e = 0; e < exponent; ++e) {
          term *= x[d];
        }
      }
      sum += term;
    }
    return sum;
  }
};

/// Component c of the field: (1 + c) p(x) + c / 2.
template <int D, int C>
struct Exact {
  Polynomial p;
  AFEM_HOST_DEVICE FieldValue<D, C> operator()(const Sample<D>& s) const {
    double x[D];
    for (int d = 0; d < D; ++d) {
      x[d] = s.x[d];
    }
    if constexpr (C == 1) {
      return p.evaluate(x, -1);
    } else {
      Eigen::Matrix<double, C, 1> value;
      for (int c = 0; c < C; ++c) {
        value[c] = (1.0 + c) * p.evaluate(x, -1) + 0.5 * c;
      }
      return value;
    }
  }
};

/// Where the sample of a particle is: its position from the cell map, then its reference
/// coordinates in its cell.
template <int D>
struct Placement {
  AFEM_HOST_DEVICE Eigen::Matrix<double, 2 * D, 1> operator()(const Sample<D>& s) const {
    Eigen::Matrix<double, 2 * D, 1> out;
    for (int d = 0; d < D; ++d) {
      out[d] = s.x[d];
      out[D + d] = s.coords[d];
    }
    return out;
  }
};

template <class G, int Degree, int Components>
struct Case {
  using Geometry = G;
  static constexpr int degree = Degree;
  static constexpr int components = Components;
};

template <class C>
class PicInterpolateTest : public test::BackendTest {};

using Cases = ::testing::Types<
    Case<geometry::Grid2D, 1, 2>, Case<geometry::Grid3D, 1, 3>, Case<geometry::Grid2D, 2, 1>,
    Case<geometry::Grid3D, 2, 1>, Case<geometry::Trimesh, 1, 1>, Case<geometry::Trimesh, 2, 2>,
    Case<geometry::Tetmesh, 1, 3>, Case<geometry::Quadmesh, 2, 1>, Case<geometry::Hexmesh, 1, 1>>;
TYPED_TEST_SUITE(PicInterpolateTest, Cases);

/// Particle positions in the unit box with n cells per axis (n = 4, so that faces are exact
/// binary fractions): every cell corner (the box's corners included), points on axis-aligned
/// faces and edges, points on both diagonals of every square (the faces of the simplices), and
/// random points.
std::vector<double> particle_positions(int dim, int n) {
  std::vector<double> positions;
  const double h = 1.0 / n;
  const int lattice = n + 1;
  const int corners = dim == 2 ? lattice * lattice : lattice * lattice * lattice;
  for (int i = 0; i < corners; ++i) {
    int rest = i;
    for (int d = 0; d < dim; ++d) {
      positions.push_back((rest % lattice) * h);
      rest /= lattice;
    }
  }
  std::mt19937 random(23);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> plane(0, n);
  for (int i = 0; i < 60; ++i) {  // on a face (one coordinate on a grid plane) or an edge (two)
    const int on_planes = 1 + i % (dim - 1);
    for (int d = 0; d < dim; ++d) {
      positions.push_back(d < on_planes ? plane(random) * h : unit(random));
    }
  }
  for (int i = 0; i < 40; ++i) {  // on the diagonals of a square or cube of cells
    const double t = unit(random);
    const double a = std::floor(unit(random) * n) * h;
    const double b = std::floor(unit(random) * n) * h;
    const double c = std::floor(unit(random) * n) * h;
    positions.push_back(a + t * h);
    positions.push_back(i % 2 == 0 ? b + t * h : b + (1.0 - t) * h);
    if (dim == 3) {  // a diagonal of the cube, or of a square face at a random height
      positions.push_back(i % 4 < 2 ? c + t * h : unit(random));
    }
  }
  for (int i = 0; i < 200; ++i) {
    for (int d = 0; d < dim; ++d) {
      positions.push_back(unit(random));
    }
  }
  return positions;
}

/// The particles of particle_positions() binned on `geometry` (n cells per axis), measure 1e-3
/// each; their buffers in the pool until destroyed.
template <class G>
struct BinnedParticles {
  std::vector<double> positions;
  std::size_t count;
  memory::Temporary<double> x;
  memory::Temporary<double> measure;
  quadrature::PicQuadrature<G> pic;

  BinnedParticles(const G& geometry, int n, memory::Pool& pool, memory::Arena& arena)
      : positions(particle_positions(G::dimension, n)),
        count(positions.size() / G::dimension),
        x(memory::borrow_temporary<double>(pool, positions.size(), "test.positions")),
        measure(memory::borrow_temporary<double>(pool, count, "test.measures")),
        pic(geometry, pool) {
    test::copy_to_device(x.view(), positions);
    test::copy_to_device(measure.view(), std::vector<double>(count, 1e-3));
    pic.rebin(x.view(), measure.view(), arena);
  }
};

TYPED_TEST(PicInterpolateTest, ValuesAndGradientsAtParticlesMatchTheFieldEverywhere) {
  using G = typename TypeParam::Geometry;
  constexpr int dim = G::dimension;
  constexpr int nc = TypeParam::components;
  constexpr bool tensor = G::View::cell_type == geometry::CellType::quadrilateral ||
                          G::View::cell_type == geometry::CellType::hexahedron;
  const int n = 4;
  auto geometry = test::UnitBox<G>::make(n, *this->pool_, *this->arena_);
  const LagrangeSpace<G, TypeParam::degree, nc> space(*geometry, *this->pool_, *this->arena_);
  DiscreteField field(space);
  const Polynomial p(dim, TypeParam::degree, tensor);
  interpolate(field, Exact<dim, nc>{p}, *this->arena_);

  const BinnedParticles particles(*geometry, n, *this->pool_, *this->arena_);
  const std::vector<double>& positions = particles.positions;
  const std::size_t count = particles.count;
  const auto& pic = particles.pic;
  ASSERT_EQ(pic.outside_count(), 0);

  // Each particle sits in the closure of the cell it was binned to, at reference coordinates that
  // the cell maps back to its position (on a face or corner either neighbour is right).
  auto placements =
      memory::borrow_temporary<double>(*this->pool_, count * 2 * dim, "test.placements");
  interpolate(placements.view(), pic, Placement<dim>{}, *this->arena_);
  const auto placement = test::copy_to_host(memory::ArrayView<const double>(placements.view()));
  for (std::size_t i = 0; i < count; ++i) {
    const double* xi = &placement[i * 2 * dim + dim];
    double sum = 0.0;
    for (int d = 0; d < dim; ++d) {
      EXPECT_NEAR(placement[i * 2 * dim + static_cast<std::size_t>(d)], positions[i * dim + d],
                  1e-12)
          << "particle " << i;
      EXPECT_GE(xi[d], -1e-12) << "particle " << i;
      EXPECT_LE(xi[d], 1.0 + 1e-12) << "particle " << i;
      sum += xi[d];
    }
    if (!tensor) {
      EXPECT_LE(sum, 1.0 + 1e-12) << "particle " << i;
    }
  }

  auto values = memory::borrow_temporary<double>(*this->pool_, count * nc, "test.values");
  auto gradients =
      memory::borrow_temporary<double>(*this->pool_, count * nc * dim, "test.gradients");
  interpolate(values.view(), pic, test::ValueAt{}, *this->arena_, field);
  interpolate(gradients.view(), pic, test::GradientAt{}, *this->arena_, field);
  const auto value = test::copy_to_host(memory::ArrayView<const double>(values.view()));
  const auto gradient = test::copy_to_host(memory::ArrayView<const double>(gradients.view()));

  double largest_gradient = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    const double* at = &positions[i * dim];
    for (int c = 0; c < nc; ++c) {
      const auto cc = static_cast<std::size_t>(c);
      const double scale = 1.0 + c;
      EXPECT_NEAR(value[i * nc + cc], scale * p.evaluate(at, -1) + 0.5 * c, 1e-12)
          << "particle " << i << " component " << c;
      for (int d = 0; d < dim; ++d) {
        const double expected = scale * p.evaluate(at, d);
        largest_gradient = std::max(largest_gradient, std::abs(expected));
        EXPECT_NEAR(gradient[(i * nc + cc) * dim + static_cast<std::size_t>(d)], expected, 1e-10)
            << "particle " << i << " component " << c << " derivative " << d;
      }
    }
  }
  EXPECT_GE(largest_gradient, 0.5);  // the field varies in every case
  EXPECT_GE(p.count, dim + 1);       // at least every linear term
}

/// The field's value and first moment about the sample, then the sample's reference coordinates.
template <int D>
struct ValueMomentAndCoords {
  template <class S, class Field>
  AFEM_HOST_DEVICE Eigen::Matrix<double, 2 * D + 1, 1> operator()(const S& s,
                                                                  const Field& u) const {
    const auto at = u.value_and_moment(s);
    Eigen::Matrix<double, 2 * D + 1, 1> out;
    out[0] = at.value;
    out.template segment<D>(1) = at.moment.transpose();
    out.template tail<D>() = s.coords;
    return out;
  }
};

/// The field x_axis (interpolating it sets each coefficient to its node's coordinate).
struct Coordinate {
  int axis = 0;
  template <int D>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s) const {
    return s.x[axis];
  }
};

template <class G>
class Q1MomentTest : public test::BackendTest {};
using Q1Grids = ::testing::Types<geometry::Grid2D, geometry::Grid3D>;
TYPED_TEST_SUITE(Q1MomentTest, Q1Grids);

// value_and_moment on a Lagrange space on a grid (the node-by-node sums): Q1 reproduces linear
// fields, so the moment of u = 1 is 0, and that of u = x_d is h^2 xi_d (1 - xi_d) along d and 0
// across, at particles on corners, faces, diagonals and inside cells.
TYPED_TEST(Q1MomentTest, ValueAndMomentOfLinearFieldsAreTheClosedForm) {
  constexpr int dim = TypeParam::dimension;
  const int n = 4;
  const double h = 1.0 / n;
  auto grid = test::UnitBox<TypeParam>::make(n, *this->pool_, *this->arena_);
  const LagrangeSpace<TypeParam, 1, 1> space(*grid, *this->pool_, *this->arena_);
  DiscreteField field(space);
  const BinnedParticles particles(*grid, n, *this->pool_, *this->arena_);
  const std::vector<double>& positions = particles.positions;
  const std::size_t count = particles.count;
  const auto& pic = particles.pic;
  ASSERT_EQ(pic.outside_count(), 0);
  constexpr std::size_t width = 2 * dim + 1;
  auto out = memory::borrow_temporary<double>(*this->pool_, count * width, "test.moments");
  for (int axis = -1; axis < dim; ++axis) {  // -1: every coefficient 1
    if (axis < 0) {
      test::copy_to_device(field.dofs(),
                           std::vector<double>(static_cast<std::size_t>(space.node_count()), 1.0));
    } else {
      interpolate(field, Coordinate{axis}, *this->arena_);
    }
    interpolate(out.view(), pic, ValueMomentAndCoords<dim>{}, *this->arena_, field);
    const auto at = test::copy_to_host(memory::ArrayView<const double>(out.view()));
    for (std::size_t i = 0; i < count; ++i) {
      const double* row = &at[i * width];
      const double expected = axis < 0 ? 1.0 : positions[i * dim + static_cast<std::size_t>(axis)];
      EXPECT_NEAR(row[0], expected, 1e-13) << "particle " << i << " field " << axis;
      for (int d = 0; d < dim; ++d) {
        const double xi = row[1 + dim + d];
        const double moment = d == axis ? h * h * xi * (1.0 - xi) : 0.0;
        EXPECT_NEAR(row[1 + d], moment, 1e-14)
            << "particle " << i << " field " << axis << " moment " << d;
      }
    }
  }
}

}  // namespace
}  // namespace afem::fem
