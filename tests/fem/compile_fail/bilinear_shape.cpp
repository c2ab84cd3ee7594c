// Must not compile: a bilinear integrand that returns a vector instead of a scalar.
#include "assemble.hpp"

struct VectorValued {
  template <class S, class V, class U>
  AFEM_HOST_DEVICE Eigen::Vector2d operator()(const S& /*s*/, const V& v, const U& u) const {
    return u.grad() * v.value();
  }
};

template void compile_fail::assemble<1, VectorValued>(
    afem::fem::BsrMatrix<1>&, const afem::quadrature::Quadrature<compile_fail::Cells>&,
    const compile_fail::Restriction&, afem::memory::Arena&);
