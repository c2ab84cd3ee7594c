// Must not compile: a bilinear integrand that takes no trial function.
#include "fem/integrate.hpp"
#include "geometry/grid.hpp"

struct MissingTrial {
  template <class S, class V>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const V& v) const {
    return v.value();
  }
};

void assemble(
    afem::fem::BsrMatrix<1>& matrix,
    const afem::quadrature::Quadrature<afem::quadrature::Cells<afem::geometry::Grid2D>>& q,
    const afem::fem::SpaceRestriction<afem::fem::LagrangeSpace<afem::geometry::Grid2D, 1>,
                                      afem::quadrature::Cells<afem::geometry::Grid2D>>& r,
    afem::memory::Arena& scratch) {
  afem::fem::integrate(matrix, q, r, r, MissingTrial{}, scratch);
}
