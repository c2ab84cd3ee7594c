// Must not compile: an integrand with a per-sample part whose per-function call still takes the
// sample instead of what prepare() returns.
#include "assemble.hpp"

struct PreparedButCalledWithTheSample {
  template <class S>
  AFEM_HOST_DEVICE double prepare(const S& /*s*/) const {
    return 2.0;
  }
  template <int D, class V, class U>
  AFEM_HOST_DEVICE double operator()(const afem::fem::Sample<D>& /*s*/, const V& v,
                                     const U& u) const {
    return u.value() * v.value();
  }
};

template void compile_fail::assemble<1, PreparedButCalledWithTheSample>(
    afem::fem::BsrMatrix<1>&, const afem::quadrature::Quadrature<compile_fail::Cells>&,
    const compile_fail::Restriction&, afem::memory::Arena&);
