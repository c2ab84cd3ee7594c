// Must not compile: an integrand that takes a node at a time (tests_by_node) but returns three
// values for a two-component space, refused with the rule's message rather than Eigen's deep inside
// the assembly.
#include "assemble.hpp"

struct ThreeValuesForTwoComponents {
  static constexpr bool tests_by_node = true;
  template <class S>
  AFEM_HOST_DEVICE Eigen::Vector3d operator()(const S& /*s*/,
                                              const afem::fem::NodeBasis<2>& v) const {
    return Eigen::Vector3d::Constant(v.basis_value);
  }
};

template void compile_fail::assemble_vector<2, ThreeValuesForTwoComponents>(
    afem::memory::ArrayView<double>, const afem::quadrature::Quadrature<compile_fail::Cells>&,
    const compile_fail::Restriction&, afem::memory::Arena&);
