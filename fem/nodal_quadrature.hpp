#pragma once

/// @file
/// NodalQuadrature: the nodes of a Lagrange space's element as quadrature points, weighted by
/// the integrals of their basis functions (a lumped mass matrix integrates with it).

#include <vector>

#include "arenafem/fem/lagrange_element.hpp"
#include "arenafem/quadrature/quadrature.hpp"
#include "arenafem/quadrature/reference_rule.hpp"

namespace afem::fem {

/// Quadrature on a cell domain at the reference nodes of `Space`'s element; weight k is the
/// integral of basis function k over the reference cell (computed exactly on the host).
template <quadrature::Domain Domain>
class NodalQuadrature : public quadrature::Quadrature<Domain> {
public:
  template <class Space>
  NodalQuadrature(const Domain& domain, const Space& space, memory::Pool& pool)
      : quadrature::Quadrature<Domain>(domain, points<Space>(), weights<Space>(), pool,
                                       Space::degree) {
    static_assert(Domain::kind == quadrature::ElementKind::cell,
                  "NodalQuadrature is defined on cell domains");
    AFEM_EXPECTS(&domain.geometry() == &space.geometry(),
                 "NodalQuadrature: the space is on another geometry than the domain");
  }

private:
  template <class Space>
  static std::vector<double> points() {
    using Element = typename Space::Element;
    std::vector<double> out;
    for (int k = 0; k < Element::node_count; ++k) {
      for (int d = 0; d < Element::dimension; ++d) {
        out.push_back(Element::node_coordinate(k, d));
      }
    }
    return out;
  }
  template <class Space>
  static std::vector<double> weights() {
    using Element = typename Space::Element;
    const quadrature::ReferenceRule rule = quadrature::reference_rule(
        quadrature::cell_shape(Element::cell_type), Element::dimension * Element::degree);
    std::vector<double> out(Element::node_count, 0.0);
    for (std::int32_t p = 0; p < rule.size(); ++p) {
      typename Element::Coords xi;
      for (int d = 0; d < Element::dimension; ++d) {
        xi[d] = rule.points[static_cast<std::size_t>(p) * Element::dimension +
                            static_cast<std::size_t>(d)];
      }
      double values[Element::node_count];
      Element::values(xi, values);
      for (int k = 0; k < Element::node_count; ++k) {
        out[static_cast<std::size_t>(k)] += rule.weights[static_cast<std::size_t>(p)] * values[k];
      }
    }
    return out;
  }
};

}  // namespace afem::fem
