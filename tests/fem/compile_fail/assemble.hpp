#pragma once

/// @file
/// The calls the compile-fail cases make: a Q1 bilinear form on a 2D grid into a BsrMatrix<B>, and
/// a linear form on C components of the same space into a vector.

#include "arenafem/fem/component_restriction.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/geometry/grid.hpp"

namespace compile_fail {

using Cells = afem::quadrature::Cells<afem::geometry::Grid2D>;
using Restriction =
    afem::fem::SpaceRestriction<afem::fem::LagrangeSpace<afem::geometry::Grid2D, 1>, Cells>;

template <int B, class Integrand>
void assemble(afem::fem::BsrMatrix<B>& matrix, const afem::quadrature::Quadrature<Cells>& q,
              const Restriction& r, afem::memory::Arena& scratch) {
  afem::fem::integrate(matrix, q, r, r, Integrand{}, scratch);
}

template <int C, class Integrand>
void assemble_vector(afem::memory::ArrayView<double> vector,
                     const afem::quadrature::Quadrature<Cells>& q, const Restriction& r,
                     afem::memory::Arena& scratch) {
  afem::fem::integrate(vector, q, afem::fem::with_components<C>(r), Integrand{}, scratch);
}

}  // namespace compile_fail
