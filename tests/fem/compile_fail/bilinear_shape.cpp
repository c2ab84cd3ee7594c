// Must not compile: a bilinear integrand that returns a vector instead of a scalar.
#include "fem/integrate.hpp"
#include "geometry/grid.hpp"

struct VectorValued {
  template <class S, class V, class U>
  AFEM_HOST_DEVICE Eigen::Vector2d operator()(const S& /*s*/, const V& v, const U& u) const {
    return u.grad() * v.value();
  }
};

void assemble(
    afem::fem::BsrMatrix<1>& matrix,
    const afem::quadrature::Quadrature<afem::quadrature::Cells<afem::geometry::Grid2D>>& q,
    const afem::fem::SpaceRestriction<afem::fem::LagrangeSpace<afem::geometry::Grid2D, 1>,
                                      afem::quadrature::Cells<afem::geometry::Grid2D>>& r,
    afem::memory::Arena& scratch) {
  afem::fem::integrate(matrix, q, r, r, VectorValued{}, scratch);
}
