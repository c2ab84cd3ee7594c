// Must not compile: a prepare() that returns an Eigen expression of its own locals.
#include "assemble.hpp"

struct PreparesAnExpression {
  template <class S>
  AFEM_HOST_DEVICE auto prepare(const S& s) const {
    const Eigen::Vector2d x = s.x;
    return 2.0 * x;
  }
  template <class P, class V, class U>
  AFEM_HOST_DEVICE double operator()(const P& p, const V& v, const U& u) const {
    return p[0] * u.value() * v.value();
  }
};

template void compile_fail::assemble<1, PreparesAnExpression>(
    afem::fem::BsrMatrix<1>&, const afem::quadrature::Quadrature<compile_fail::Cells>&,
    const compile_fail::Restriction&, afem::memory::Arena&);
