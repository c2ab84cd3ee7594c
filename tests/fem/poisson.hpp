#pragma once

// The Laplacian form and a Poisson problem on a unit box, shared by the solver and operator
// tests.

#include <cmath>
#include <cstdint>
#include <vector>

#include "arenafem/fem/boundary.hpp"
#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/fem/vector_ops.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/quadrature.hpp"
#include "support/backend.hpp"

namespace afem::test {

/// The Laplacian: grad u . grad v.
struct LaplaceForm {
  static constexpr bool symmetric = true;
  template <class S, class V, class U>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const V& v, const U& u) const {
    return fem::dot(u.grad(), v.grad());
  }
};

/// The Q1 (or P1) Laplacian of a unit box with its boundary held, and a right-hand side.
struct Poisson {
  fem::BsrMatrix<1> matrix;
  memory::Temporary<double> rhs;
  std::int64_t dofs = 0;
};

/// Assembles it on `geometry`'s vertices (with `dirichlet`, the boundary rows and columns held by
/// project_dirichlet).
template <class G>
Poisson assemble_poisson(const G& geometry, bool dirichlet, memory::Pool& pool,
                         memory::Arena& scratch) {
  using namespace afem::fem;  // NOLINT(google-build-using-namespace): the fem layer under test
  const LagrangeSpace<G, 1> space(geometry, pool, scratch);
  const quadrature::Cells cells(geometry);
  const quadrature::RegularQuadrature quadrature(cells, 2, pool);
  const SpaceRestriction restriction(space, cells, scratch);
  Poisson poisson{BsrMatrix<1>(pool), {}, space.dof_count()};
  integrate(poisson.matrix, quadrature, restriction, restriction, LaplaceForm{}, scratch);
  const auto n = static_cast<std::size_t>(space.dof_count());
  memory::replace_owned(poisson.rhs, memory::borrow_temporary<double>(pool, n, "test.rhs"));
  std::vector<double> host(n);
  for (std::size_t i = 0; i < n; ++i) {
    host[i] = std::sin(0.37 * static_cast<double>(i)) + 0.5;
  }
  copy_to_device(poisson.rhs.view(), host);
  if (dirichlet) {
    auto fixed = memory::borrow_temporary<std::uint8_t>(scratch, n, "test.fixed");
    auto values = memory::borrow_temporary<double>(scratch, n, "test.values");
    boundary_dofs(space, fixed.view(), scratch);
    fill(values.view(), 0.0, scratch);
    project_dirichlet(poisson.matrix, poisson.rhs.view(), fixed.view(), values.view(), scratch);
  }
  return poisson;
}

}  // namespace afem::test
