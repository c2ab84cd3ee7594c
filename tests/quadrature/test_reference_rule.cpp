// Reference rules: weights sum to the reference measure, monomials integrate exactly up to the
// rule's order, and bad orders are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "arenafem/memory/error.hpp"
#include "arenafem/quadrature/reference_rule.hpp"

namespace afem::quadrature {
namespace {

double factorial(int n) {
  return n <= 1 ? 1.0 : n * factorial(n - 1);
}

/// Exact integral of x^a y^b z^c over the reference shape.
double exact_monomial(Shape shape, const int (&power)[3]) {
  switch (shape) {
    case Shape::triangle:
      return factorial(power[0]) * factorial(power[1]) / factorial(power[0] + power[1] + 2);
    case Shape::tetrahedron:
      return factorial(power[0]) * factorial(power[1]) * factorial(power[2]) /
             factorial(power[0] + power[1] + power[2] + 3);
    default: {
      double value = 1.0;
      for (int d = 0; d < dimension(shape); ++d) {
        value /= power[d] + 1;
      }
      return value;
    }
  }
}

double apply(const ReferenceRule& rule, const int (&power)[3]) {
  double sum = 0.0;
  for (std::int32_t p = 0; p < rule.size(); ++p) {
    double value = rule.weights[static_cast<std::size_t>(p)];
    for (int d = 0; d < rule.dimension; ++d) {
      value *= std::pow(
          rule.points[static_cast<std::size_t>(p) * static_cast<std::size_t>(rule.dimension) +
                      static_cast<std::size_t>(d)],
          power[d]);
    }
    sum += value;
  }
  return sum;
}

std::string shape_name(const ::testing::TestParamInfo<Shape>& shape) {
  constexpr const char* names[] = {"segment", "triangle", "quadrilateral", "tetrahedron",
                                   "hexahedron"};
  return names[static_cast<int>(shape.param)];
}

class ReferenceRuleTest : public ::testing::TestWithParam<Shape> {};

TEST_P(ReferenceRuleTest, IntegratesEveryMonomialUpToItsOrder) {
  const Shape shape = GetParam();
  const int dim = dimension(shape);
  for (int order = 0; order <= max_order; ++order) {
    const ReferenceRule rule = reference_rule(shape, order);
    ASSERT_EQ(rule.dimension, dim);
    ASSERT_EQ(rule.points.size(), rule.weights.size() * static_cast<std::size_t>(dim));
    for (int a = 0; a <= order; ++a) {
      for (int b = 0; b <= (dim > 1 ? order - a : 0); ++b) {
        for (int c = 0; c <= (dim > 2 ? order - a - b : 0); ++c) {
          const int power[3] = {a, b, c};
          EXPECT_NEAR(apply(rule, power), exact_monomial(shape, power), 1e-14)
              << "order " << order << " monomial " << a << " " << b << " " << c;
        }
      }
    }
    const int zero[3] = {0, 0, 0};
    EXPECT_NEAR(apply(rule, zero), reference_measure(shape), 1e-14);
  }
}

TEST_P(ReferenceRuleTest, PointsLieInTheReferenceShape) {
  const Shape shape = GetParam();
  for (int order = 0; order <= max_order; ++order) {
    const ReferenceRule rule = reference_rule(shape, order);
    for (std::int32_t p = 0; p < rule.size(); ++p) {
      double sum = 0.0;
      for (int d = 0; d < rule.dimension; ++d) {
        const double x =
            rule.points[static_cast<std::size_t>(p) * static_cast<std::size_t>(rule.dimension) +
                        static_cast<std::size_t>(d)];
        EXPECT_GT(x, 0.0);
        EXPECT_LT(x, 1.0);
        sum += x;
      }
      if (shape == Shape::triangle || shape == Shape::tetrahedron) {
        EXPECT_LT(sum, 1.0);
      }
      EXPECT_GT(rule.weights[static_cast<std::size_t>(p)], 0.0);
    }
  }
}

TEST_P(ReferenceRuleTest, MissesTheFirstMonomialAboveItsOrder) {
  // The order-1 rule (one point) integrates x^2 with an error: the exactness test can fail.
  const Shape shape = GetParam();
  const ReferenceRule rule = reference_rule(shape, 1);
  ASSERT_EQ(rule.size(), 1);
  const int power[3] = {2, 0, 0};
  EXPECT_GT(std::abs(apply(rule, power) - exact_monomial(shape, power)), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReferenceRuleTest,
                         ::testing::Values(Shape::segment, Shape::triangle, Shape::quadrilateral,
                                           Shape::tetrahedron, Shape::hexahedron),
                         shape_name);

TEST(ReferenceRule, RefusesOrdersOutOfRange) {
  EXPECT_THROW(reference_rule(Shape::triangle, -1), Error);
  EXPECT_THROW(reference_rule(Shape::hexahedron, max_order + 1), Error);
  try {
    reference_rule(Shape::tetrahedron, 11);
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("order 11"), std::string::npos) << error.what();
  }
  EXPECT_THROW(gauss_legendre(0), Error);
}

TEST(ReferenceRule, GaussLegendreMatchesKnownNodes) {
  const ReferenceRule rule = gauss_legendre(2);
  EXPECT_NEAR(rule.points[0], 0.5 - 0.5 / std::sqrt(3.0), 1e-15);
  EXPECT_NEAR(rule.points[1], 0.5 + 0.5 / std::sqrt(3.0), 1e-15);
  EXPECT_NEAR(rule.weights[0], 0.5, 1e-15);
}

}  // namespace
}  // namespace afem::quadrature
