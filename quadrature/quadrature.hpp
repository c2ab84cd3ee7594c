#pragma once

/// @file
/// Quadrature over a domain: the same reference points and weights in every element, held in the
/// backend's memory. RegularQuadrature takes a Gauss rule of a given order; ExplicitQuadrature
/// takes the caller's points and weights.

#include <cstdint>
#include <span>
#include <string>

#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/reference_rule.hpp"

namespace afem::quadrature {

/// What kernels see of a quadrature: `points_per_element` reference points (`dimension`
/// coordinates each, cell coordinates for cell domains, side coordinates for side domains) and
/// their weights, the same in every element.
struct QuadratureView {
  /// The same points in every element (kernels may tabulate per point); weights are reference
  /// weights, scaled by the cell map's Jacobian determinant.
  static constexpr bool uniform = true;
  static constexpr bool physical_weights = false;

  memory::ArrayView<const double> points;
  memory::ArrayView<const double> weights;
  std::int32_t dimension = 0;

  AFEM_HOST_DEVICE std::int32_t point_count(std::int32_t /*element*/) const {
    return points_per_element();
  }
  AFEM_HOST_DEVICE double coordinate(std::int32_t /*element*/, std::int32_t point, int axis) const {
    return coordinate(point, axis);
  }
  AFEM_HOST_DEVICE double weight(std::int32_t /*element*/, std::int32_t point) const {
    return weight(point);
  }
  /// Where interpolate() writes the value of point `point` of `element`.
  AFEM_HOST_DEVICE std::size_t output_index(std::int32_t element, std::int32_t point) const {
    return static_cast<std::size_t>(element) * weights.size() + static_cast<std::size_t>(point);
  }

  AFEM_HOST_DEVICE std::int32_t points_per_element() const {
    return static_cast<std::int32_t>(weights.size());
  }
  AFEM_HOST_DEVICE double coordinate(std::int32_t point, int axis) const {
    return points[static_cast<std::size_t>(point) * static_cast<std::size_t>(dimension) +
                  static_cast<std::size_t>(axis)];
  }
  AFEM_HOST_DEVICE double weight(std::int32_t point) const {
    return weights[static_cast<std::size_t>(point)];
  }
};

/// What integrate() and interpolate() accept: a domain, a kernel view (QuadratureView or
/// PicQuadratureView) and the number of samples.
template <class Q>
concept QuadratureRule = requires(const Q q) {
  typename Q::DomainType;
  { q.domain() } -> std::convertible_to<const typename Q::DomainType&>;
  q.view();
  { q.sample_count() } -> std::same_as<std::int64_t>;
};

/// The reference shape a domain's elements are: the cell shape, or the side shape.
template <Domain D>
Shape element_shape() {
  return D::kind == ElementKind::cell ? cell_shape(D::cell_type) : side_shape(D::cell_type);
}

/// A quadrature over a domain; owns its points and weights ("Quadrature.points",
/// "Quadrature.weights" in the pool) until destroyed.
template <Domain D>
class Quadrature {
public:
  using DomainType = D;

  /// The caller's reference points (`dimension of the element shape` coordinates each) and
  /// weights, used in every element of `domain`. Throws afem::Error when the sizes disagree.
  Quadrature(const D& domain, std::span<const double> points, std::span<const double> weights,
             memory::Pool& pool, int order = 0)
      : domain_(&domain), order_(order) {
    const int dim = quadrature::dimension(element_shape<D>());
    AFEM_EXPECTS(
        !weights.empty() && points.size() == weights.size() * static_cast<std::size_t>(dim),
        "Quadrature: " + std::to_string(points.size()) + " coordinates for " +
            std::to_string(weights.size()) + " weights, expected " + std::to_string(dim) +
            " per point and at least one point");
    auto fresh_points = memory::borrow_temporary<double>(pool, points.size(), "Quadrature.points");
    auto fresh_weights =
        memory::borrow_temporary<double>(pool, weights.size(), "Quadrature.weights");
    const memory::Stream stream = pool.stream();
    memory::copy_to_device(fresh_points.view(), points, stream);
    memory::copy_to_device(fresh_weights.view(), weights, stream);
    stream.synchronize();
    memory::replace_owned(points_, std::move(fresh_points));
    memory::replace_owned(weights_, std::move(fresh_weights));
    dimension_ = dim;
  }

  [[nodiscard]] const D& domain() const { return *domain_; }
  [[nodiscard]] int order() const { return order_; }
  [[nodiscard]] std::int32_t points_per_element() const {
    return static_cast<std::int32_t>(weights_.size());
  }
  [[nodiscard]] QuadratureView view() const {
    return {points_.view(), weights_.view(), dimension_};
  }
  /// Number of samples over the domain (what interpolate() writes).
  [[nodiscard]] std::int64_t sample_count() const {
    return static_cast<std::int64_t>(domain_->element_count()) * points_per_element();
  }

private:
  const D* domain_;
  int order_ = 0;
  std::int32_t dimension_ = 0;
  memory::Temporary<double> points_;
  memory::Temporary<double> weights_;
};

/// Gauss quadrature exact to `order` on every element of `domain` (tensor Gauss-Legendre on
/// quadrilaterals and hexahedra, simplex rules on triangles and tetrahedra).
template <Domain D>
class RegularQuadrature : public Quadrature<D> {
public:
  RegularQuadrature(const D& domain, int order, memory::Pool& pool)
      : RegularQuadrature(domain, reference_rule(element_shape<D>(), order), pool) {}

private:
  RegularQuadrature(const D& domain, const ReferenceRule& rule, memory::Pool& pool)
      : Quadrature<D>(domain, rule.points, rule.weights, pool, rule.order) {}
};

/// The caller's points and weights in every element of `domain` (see Quadrature's constructor).
template <Domain D>
class ExplicitQuadrature : public Quadrature<D> {
public:
  ExplicitQuadrature(const D& domain, std::span<const double> points,
                     std::span<const double> weights, memory::Pool& pool)
      : Quadrature<D>(domain, points, weights, pool) {}
};

}  // namespace afem::quadrature
