// Must not compile: an integrand that takes a node at a time (tests_by_node) but returns one
// number for a two-component space, where it must return the node's two values.
#include "arenafem/fem/component_restriction.hpp"
#include "assemble.hpp"

struct OneNumberForTwoComponents {
  static constexpr bool tests_by_node = true;
  template <class S>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const afem::fem::NodeBasis<2>& v) const {
    return v.basis_value;
  }
};

namespace compile_fail {

void assemble_vector(afem::memory::ArrayView<double> vector,
                     const afem::quadrature::Quadrature<Cells>& q, const Restriction& r,
                     afem::memory::Arena& scratch) {
  afem::fem::integrate(vector, q, afem::fem::with_components<2>(r), OneNumberForTwoComponents{},
                       scratch);
}

}  // namespace compile_fail
