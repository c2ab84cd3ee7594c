#pragma once

/// @file
/// Kernel helpers: building a Sample from a domain element and a quadrature point, and the
/// basis of a cell's element (values and physical gradients) at a sample.

#include <Eigen/Core>
#include <Eigen/LU>

#include <cmath>
#include <cstdint>

#include "fem/sample.hpp"
#include "memory/config.hpp"
#include "quadrature/domain.hpp"
#include "quadrature/quadrature.hpp"

namespace afem::fem::detail {

/// Reference measure of a side shape (segment 1, triangle 1/2, square 1).
template <int D, bool Simplex>
AFEM_HOST_DEVICE constexpr double reference_side_measure() {
  return D == 3 && Simplex ? 0.5 : 1.0;
}

/// A sample at reference coordinates `coords` of `cell` (weight 1, no side).
template <class GView>
AFEM_HOST_DEVICE Sample<GView::dimension> make_cell_sample(const GView& geometry,
                                                           std::int32_t cell,
                                                           const typename GView::Coords& coords) {
  Sample<GView::dimension> s;
  s.element = cell;
  s.cell = cell;
  s.coords = coords;
  s.x = geometry.cell_position(cell, coords);
  s.normal.setZero();
  s.inverse_jacobian = geometry.cell_jacobian(cell, coords).inverse();
  s.weight = 1.0;
  return s;
}

/// The sample at quadrature point `point` of element `element`.
template <class DomainView>
AFEM_HOST_DEVICE Sample<DomainView::dimension> make_sample(const DomainView& domain,
                                                           const quadrature::QuadratureView& q,
                                                           std::int32_t element,
                                                           std::int32_t point) {
  constexpr int dim = DomainView::dimension;
  using GView = typename DomainView::GeometryView;
  Sample<dim> s;
  s.element = element;
  s.point = point;
  const std::int32_t index = domain.element_index(element);
  double measure_scale = 1.0;
  if constexpr (DomainView::kind == quadrature::ElementKind::cell) {
    s.cell = index;
    for (int d = 0; d < dim; ++d) {
      s.coords[d] = q.coordinate(point, d);
    }
    s.x = domain.geometry.cell_position(index, s.coords);
    s.normal.setZero();
  } else {
    typename GView::SideCoords side_coords;
    for (int d = 0; d < dim - 1; ++d) {
      side_coords[d] = q.coordinate(point, d);
    }
    s.side = index;
    s.cell = domain.geometry.side_inner_cell(index);
    s.coords = domain.geometry.side_inner_coords(index, side_coords);
    s.x = domain.geometry.side_position(index, side_coords);
    s.normal = domain.geometry.side_normal(index);
    measure_scale = domain.geometry.side_measure(index) /
                    reference_side_measure<dim, GView::Cell::simplex>();
  }
  const typename GView::Jacobian jacobian = domain.geometry.cell_jacobian(s.cell, s.coords);
  s.inverse_jacobian = jacobian.inverse();
  if constexpr (DomainView::kind == quadrature::ElementKind::cell) {
    measure_scale = std::abs(jacobian.determinant());
  }
  s.weight = q.weight(point) * measure_scale;
  return s;
}

/// An element's basis at a sample: values and gradients in physical coordinates.
template <class Element>
struct Basis {
  static constexpr int dim = Element::dimension;
  double value[Element::node_count];
  Eigen::Matrix<double, dim, 1> gradient[Element::node_count];

  AFEM_HOST_DEVICE explicit Basis(const Sample<dim>& s) {
    double reference[Element::node_count * dim];
    Element::values(s.coords, value);
    Element::gradients(s.coords, reference);
    for (int k = 0; k < Element::node_count; ++k) {
      Eigen::Matrix<double, dim, 1> g;
      for (int d = 0; d < dim; ++d) {
        g[d] = reference[k * dim + d];
      }
      gradient[k] = s.inverse_jacobian.transpose() * g;
    }
  }
};

}  // namespace afem::fem::detail
