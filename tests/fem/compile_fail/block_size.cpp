// Must not compile: a 2x2-block matrix for a scalar space.
#include "fem/integrate.hpp"
#include "geometry/grid.hpp"

struct Laplace {
  template <class S, class V, class U>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const V& v, const U& u) const {
    return afem::fem::dot(u.grad(), v.grad());
  }
};

void assemble(
    afem::fem::BsrMatrix<2>& matrix,
    const afem::quadrature::Quadrature<afem::quadrature::Cells<afem::geometry::Grid2D>>& q,
    const afem::fem::SpaceRestriction<afem::fem::LagrangeSpace<afem::geometry::Grid2D, 1>,
                                      afem::quadrature::Cells<afem::geometry::Grid2D>>& r,
    afem::memory::Arena& scratch) {
  afem::fem::integrate(matrix, q, r, r, Laplace{}, scratch);
}
