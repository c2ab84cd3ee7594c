// Must not compile: a bilinear integrand that declares tests_by_node, which only linear forms take.
#include "assemble.hpp"

struct BilinearByNode {
  static constexpr bool tests_by_node = true;
  template <class S, class V, class U>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const V& v, const U& u) const {
    return v.value() * u.value();
  }
};

template void compile_fail::assemble<1, BilinearByNode>(
    afem::fem::BsrMatrix<1>&, const afem::quadrature::Quadrature<compile_fail::Cells>&,
    const compile_fail::Restriction&, afem::memory::Arena&);
