// Must not compile: an integrand that takes a node at a time (tests_by_node) but returns three
// values for a two-component space, refused with the rule's message rather than Eigen's deep inside
// the assembly.
#include "arenafem/fem/component_restriction.hpp"
#include "assemble.hpp"

struct ThreeValuesForTwoComponents {
  static constexpr bool tests_by_node = true;
  template <class S>
  AFEM_HOST_DEVICE Eigen::Vector3d operator()(const S& /*s*/,
                                              const afem::fem::NodeBasis<2>& v) const {
    return Eigen::Vector3d::Constant(v.basis_value);
  }
};

namespace compile_fail {

void assemble_vector(afem::memory::ArrayView<double> vector,
                     const afem::quadrature::Quadrature<Cells>& q, const Restriction& r,
                     afem::memory::Arena& scratch) {
  afem::fem::integrate(vector, q, afem::fem::with_components<2>(r), ThreeValuesForTwoComponents{},
                       scratch);
}

}  // namespace compile_fail
