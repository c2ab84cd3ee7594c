// Reference quadrature rules, computed on the host.
#include "arenafem/quadrature/reference_rule.hpp"

#include <cmath>
#include <numbers>
#include <string>

#include "arenafem/memory/error.hpp"

namespace afem::quadrature {

int dimension(Shape shape) {
  switch (shape) {
    case Shape::segment:
      return 1;
    case Shape::triangle:
    case Shape::quadrilateral:
      return 2;
    case Shape::tetrahedron:
    case Shape::hexahedron:
      return 3;
  }
  return 0;
}

double reference_measure(Shape shape) {
  switch (shape) {
    case Shape::triangle:
      return 0.5;
    case Shape::tetrahedron:
      return 1.0 / 6.0;
    default:
      return 1.0;
  }
}

Shape cell_shape(geometry::CellType type) {
  switch (type) {
    case geometry::CellType::triangle:
      return Shape::triangle;
    case geometry::CellType::quadrilateral:
      return Shape::quadrilateral;
    case geometry::CellType::tetrahedron:
      return Shape::tetrahedron;
    case geometry::CellType::hexahedron:
      return Shape::hexahedron;
  }
  return Shape::segment;
}

Shape side_shape(geometry::CellType type) {
  switch (type) {
    case geometry::CellType::tetrahedron:
      return Shape::triangle;
    case geometry::CellType::hexahedron:
      return Shape::quadrilateral;
    default:
      return Shape::segment;
  }
}

ReferenceRule gauss_legendre(int count) {
  AFEM_EXPECTS(count >= 1 && count <= 32,
               "gauss_legendre: " + std::to_string(count) + " points asked for, expected 1 to 32");
  ReferenceRule rule;
  rule.order = 2 * count - 1;
  rule.points.resize(static_cast<std::size_t>(count));
  rule.weights.resize(static_cast<std::size_t>(count));
  const auto n = static_cast<double>(count);
  for (int i = 0; i < count; ++i) {
    // Newton on the Legendre polynomial P_n from the Chebyshev-like first guess.
    double x = std::cos(std::numbers::pi * (i + 0.75) / (n + 0.5));
    double derivative = 1.0;
    for (int iteration = 0; iteration < 100; ++iteration) {
      double p0 = 1.0;
      double p1 = x;
      for (int k = 2; k <= count; ++k) {
        const double p2 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      const double pn = count == 1 ? x : p1;
      const double pn_minus_1 = count == 1 ? 1.0 : p0;
      derivative = n * (x * pn - pn_minus_1) / (x * x - 1.0);
      const double step = pn / derivative;
      x -= step;
      if (std::abs(step) < 1e-16) {
        break;
      }
    }
    const auto index = static_cast<std::size_t>(count - 1 - i);
    rule.points[index] = 0.5 * (x + 1.0);
    rule.weights[index] = 1.0 / ((1.0 - x * x) * derivative * derivative);  // half of 2/(...)
  }
  return rule;
}

namespace {

int points_for(int order) {
  return order / 2 + 1;
}

ReferenceRule tensor_rule(Shape shape, int order) {
  const ReferenceRule line = gauss_legendre(points_for(order));
  const int dim = dimension(shape);
  const std::size_t n = line.weights.size();
  ReferenceRule rule{shape, dim, order, {}, {}};
  std::size_t total = 1;
  for (int d = 0; d < dim; ++d) {
    total *= n;
  }
  for (std::size_t flat = 0; flat < total; ++flat) {
    double weight = 1.0;
    std::size_t rest = flat;
    for (int d = 0; d < dim; ++d) {
      rule.points.push_back(line.points[rest % n]);
      weight *= line.weights[rest % n];
      rest /= n;
    }
    rule.weights.push_back(weight);
  }
  return rule;
}

// Collapsed (Duffy) products of Gauss-Legendre rules: x = u, y = (1 - u) v, z = (1 - u)(1 - v) w
// with Jacobian (1 - u)^(d-1) (1 - v)^(d-2); each factor's rule is sized for the degree it sees.
ReferenceRule collapsed_rule(Shape shape, int order) {
  const int dim = dimension(shape);
  ReferenceRule rule{shape, dim, order, {}, {}};
  const ReferenceRule ru = gauss_legendre(points_for(order + dim - 1));
  const ReferenceRule rv = gauss_legendre(points_for(order + dim - 2));
  if (dim == 2) {
    for (std::size_t i = 0; i < ru.weights.size(); ++i) {
      for (std::size_t j = 0; j < rv.weights.size(); ++j) {
        const double u = ru.points[i];
        rule.points.push_back(u);
        rule.points.push_back((1.0 - u) * rv.points[j]);
        rule.weights.push_back(ru.weights[i] * rv.weights[j] * (1.0 - u));
      }
    }
    return rule;
  }
  const ReferenceRule rw = gauss_legendre(points_for(order));
  for (std::size_t i = 0; i < ru.weights.size(); ++i) {
    for (std::size_t j = 0; j < rv.weights.size(); ++j) {
      for (std::size_t k = 0; k < rw.weights.size(); ++k) {
        const double u = ru.points[i];
        const double v = rv.points[j];
        rule.points.push_back(u);
        rule.points.push_back((1.0 - u) * v);
        rule.points.push_back((1.0 - u) * (1.0 - v) * rw.points[k]);
        rule.weights.push_back(ru.weights[i] * rv.weights[j] * rw.weights[k] * (1.0 - u) *
                               (1.0 - u) * (1.0 - v));
      }
    }
  }
  return rule;
}

ReferenceRule symmetric_simplex_rule(Shape shape, int order) {
  ReferenceRule rule{shape, dimension(shape), order, {}, {}};
  if (shape == Shape::triangle) {
    if (order <= 1) {
      rule.points = {1.0 / 3.0, 1.0 / 3.0};
      rule.weights = {0.5};
    } else {
      rule.points = {1.0 / 6.0, 1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0, 1.0 / 6.0, 2.0 / 3.0};
      rule.weights = {1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0};
    }
    return rule;
  }
  if (order <= 1) {
    rule.points = {0.25, 0.25, 0.25};
    rule.weights = {1.0 / 6.0};
    return rule;
  }
  const double a = (5.0 - std::sqrt(5.0)) / 20.0;
  const double b = 1.0 - 3.0 * a;
  rule.points = {a, a, a, b, a, a, a, b, a, a, a, b};
  rule.weights = {1.0 / 24.0, 1.0 / 24.0, 1.0 / 24.0, 1.0 / 24.0};
  return rule;
}

}  // namespace

ReferenceRule reference_rule(Shape shape, int order) {
  AFEM_EXPECTS(order >= 0 && order <= max_order, "reference_rule: order " + std::to_string(order) +
                                                     " asked for, expected 0 to " +
                                                     std::to_string(max_order));
  switch (shape) {
    case Shape::segment: {
      ReferenceRule rule = gauss_legendre(points_for(order));
      rule.order = order;
      return rule;
    }
    case Shape::quadrilateral:
    case Shape::hexahedron:
      return tensor_rule(shape, order);
    case Shape::triangle:
    case Shape::tetrahedron:
      return order <= 2 ? symmetric_simplex_rule(shape, order) : collapsed_rule(shape, order);
  }
  return {};
}

}  // namespace afem::quadrature
