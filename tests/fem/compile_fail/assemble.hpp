#pragma once

/// @file
/// The call each compile-fail case makes: a Q1 bilinear form on a 2D grid into a BsrMatrix<B>.

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

}  // namespace compile_fail
