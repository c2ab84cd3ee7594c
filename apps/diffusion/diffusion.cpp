// The diffusion solve, compiled once for every geometry and degree (see diffusion.hpp).
#include "apps/diffusion/diffusion.hpp"

namespace afem::apps::diffusion {

#define AFEM_DIFFUSION_SOLVE(G, Degree)                                                     \
  template Report solve<G, Degree>(const G&, double, memory::Pool&, memory::Arena&, double, \
                                   const std::string&);
AFEM_DIFFUSION_FOR_EACH_CASE(AFEM_DIFFUSION_SOLVE)
#undef AFEM_DIFFUSION_SOLVE

}  // namespace afem::apps::diffusion
