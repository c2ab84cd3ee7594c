// Must not compile: a 2x2-block matrix for a scalar space.
#include "assemble.hpp"

struct Laplace {
  template <class S, class V, class U>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const V& v, const U& u) const {
    return afem::fem::dot(u.grad(), v.grad());
  }
};

template void compile_fail::assemble<2, Laplace>(
    afem::fem::BsrMatrix<2>&, const afem::quadrature::Quadrature<compile_fail::Cells>&,
    const compile_fail::Restriction&, afem::memory::Arena&);
