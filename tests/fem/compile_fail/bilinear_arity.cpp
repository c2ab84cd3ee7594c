// Must not compile: a bilinear integrand that takes no trial function.
#include "assemble.hpp"

struct MissingTrial {
  template <class S, class V>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const V& v) const {
    return v.value();
  }
};

template void compile_fail::assemble<1, MissingTrial>(
    afem::fem::BsrMatrix<1>&, const afem::quadrature::Quadrature<compile_fail::Cells>&,
    const compile_fail::Restriction&, afem::memory::Arena&);
