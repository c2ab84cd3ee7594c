// Must not compile: an element's samples built from a temporary view (ElementSamples refers to
// the domain and quadrature views it is given, which must outlive it: a kernel's captured views).
#include "arenafem/fem/detail/evaluate.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/pic_quadrature.hpp"

using Domain = afem::quadrature::Cells<afem::geometry::Grid2D>::View;
using Points = afem::quadrature::PicQuadratureView;

Domain domain_of_the_kernel();

void samples_of(const Points& points) {
  const afem::fem::detail::ElementSamples<const Domain, const Points, false> samples(
      domain_of_the_kernel(), points, {}, 0);
  (void)samples;
}
