// The diffusion solve, compiled once for every geometry and degree (see diffusion.hpp).
#include "arenafem/apps/diffusion/diffusion.hpp"

namespace afem::apps::diffusion {

#define AFEM_DIFFUSION_SOLVE(G, Degree)                                                     \
  template Report solve<G, Degree>(const G&, const Problem&, memory::Pool&, memory::Arena&, \
                                   const Settings&);
AFEM_DIFFUSION_FOR_EACH_CASE(AFEM_DIFFUSION_SOLVE)
#undef AFEM_DIFFUSION_SOLVE

}  // namespace afem::apps::diffusion
