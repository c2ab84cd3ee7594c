#pragma once

/// @file
/// interpolate(): an integrand or field evaluated at the samples of a quadrature, or at the nodes
/// of a space (into a DiscreteField). Integrands: f(sample, fields...) returning a scalar or a
/// fixed-size Eigen vector or matrix.

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <type_traits>

#include "arenafem/fem/detail/check_size.hpp"
#include "arenafem/fem/detail/evaluate.hpp"
#include "arenafem/fem/detail/field_pack.hpp"
#include "arenafem/fem/detail/value_traits.hpp"
#include "arenafem/fem/field.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/thrust_allocator.hpp"
#include "arenafem/quadrature/quadrature.hpp"

namespace afem::fem {

/// Writes f at every sample of `quadrature` into `out`: entry q.output_index(element, point) *
/// width + k, width being the size of f's result (element * points_per_element + point for
/// regular quadratures, the particle for a PicQuadrature). Throws afem::Error on a size mismatch.
template <quadrature::QuadratureRule Q, class Integrand, class... Fields>
void interpolate(memory::ArrayView<double> out, const Q& quadrature, const Integrand& integrand,
                 memory::Arena& scratch, const Fields&... fields) {
  using Domain = typename Q::DomainType;
  constexpr int dim = Domain::dimension;
  static_assert(std::is_invocable_v<const Integrand&, const Sample<dim>&,
                                    const detail::FieldArgument<Fields>&...>,
                "interpolate: the integrand must be callable as f(sample, fields...)");
  using Result = std::decay_t<std::invoke_result_t<const Integrand&, const Sample<dim>&,
                                                   const detail::FieldArgument<Fields>&...>>;
  static_assert(detail::IntegrandValue<Result>,
                "interpolate: the integrand must return a scalar or a fixed-size Eigen type");
  using Traits = detail::ValueTraits<Result>;
  constexpr int width = Traits::size;
  const std::int32_t elements = quadrature.domain().element_count();
  detail::check_size(out.size(), quadrature.sample_count() * width, "interpolate");
  auto policy = memory::arena_policy(scratch, "interpolate.thrust");
  const auto domain = quadrature.domain().view();
  const auto q = quadrature.view();
  detail::check_fields_on(quadrature, "interpolate", fields...);
  const auto pack = detail::make_field_pack(fields...);
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), elements,
                     [=] AFEM_HOST_DEVICE(std::int32_t e) {
                       const detail::ElementSamples<decltype(domain), decltype(q), false> samples(
                           domain, q, {}, e);
                       for (std::int32_t p = 0; p < q.point_count(e); ++p) {
                         const Sample<dim> s = samples(p);
                         Traits::store(static_cast<Result>(pack.call(integrand, s)),
                                       &out[q.output_index(e, p) * width]);
                       }
                     });
}

/// Sets `field` to f at the nodes of its space (f returns the field's value type: a scalar or a
/// vector of its components). The sample's cell is one of the cells holding the node.
template <class Space, class Integrand, class... Fields>
void interpolate(DiscreteField<Space>& field, const Integrand& integrand, memory::Arena& scratch,
                 const Fields&... fields) {
  constexpr int dim = Space::dimension;
  constexpr int nc = Space::components;
  using Element = typename Space::Element;
  static_assert(std::is_invocable_v<const Integrand&, const Sample<dim>&,
                                    const detail::FieldArgument<Fields>&...>,
                "interpolate: the integrand must be callable as f(sample, fields...)");
  using Result = std::decay_t<std::invoke_result_t<const Integrand&, const Sample<dim>&,
                                                   const detail::FieldArgument<Fields>&...>>;
  static_assert(detail::IntegrandValue<Result> && detail::ValueTraits<Result>::size == nc,
                "interpolate: the integrand must return one value per component of the space");
  using Traits = detail::ValueTraits<Result>;
  auto policy = memory::arena_policy(scratch, "interpolate.thrust");
  const auto space = field.space().view();
  const memory::ArrayView<const std::int32_t> representative = field.space().node_cell_local();
  const memory::ArrayView<double> dofs = field.dofs();
  [[maybe_unused]] std::size_t index = 0;
  (detail::check_field_on(field.space().geometry(), "interpolate", index++, fields), ...);
  const auto pack = detail::make_field_pack(fields...);
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), space.node_count,
                     [=] AFEM_HOST_DEVICE(std::int32_t n) {
                       const std::int32_t pair = representative[static_cast<std::size_t>(n)];
                       const std::int32_t cell = pair / Element::node_count;
                       const int local = pair % Element::node_count;
                       typename Space::View::GeometryView::Coords xi;
                       for (int d = 0; d < dim; ++d) {
                         xi[d] = Element::node_coordinate(local, d);
                       }
                       Sample<dim> s = detail::make_cell_sample(space.geometry, cell, xi);
                       s.point = local;
                       Traits::store(static_cast<Result>(pack.call(integrand, s)),
                                     &dofs[static_cast<std::size_t>(n) * nc]);
                     });
}

}  // namespace afem::fem
