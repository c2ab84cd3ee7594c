// Must not compile: an integrand that takes a node at a time (tests_by_node) but returns one
// number for a two-component space, where it must return the node's two values.
#include "assemble.hpp"

struct OneNumberForTwoComponents {
  static constexpr bool tests_by_node = true;
  template <class S>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const afem::fem::NodeBasis<2>& v) const {
    return v.basis_value;
  }
};

template void compile_fail::assemble_vector<2, OneNumberForTwoComponents>(
    afem::memory::ArrayView<double>, const afem::quadrature::Quadrature<compile_fail::Cells>&,
    const compile_fail::Restriction&, afem::memory::Arena&);
