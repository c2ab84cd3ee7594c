// The distributed diffusion solve, compiled once for every cell type and degree (see
// distributed.hpp).
#include "arenafem/apps/diffusion/distributed.hpp"

namespace afem::apps::diffusion {

#define AFEM_DIFFUSION_SOLVE_DISTRIBUTED(Type, Degree)                                       \
  template Report solve_distributed<Type, Degree>(const memory::Communicator&,               \
                                                  const geometry::MeshData&, const Problem&, \
                                                  memory::Pool&, memory::Arena&, const Settings&);
AFEM_DIFFUSION_FOR_EACH_DISTRIBUTED_CASE(AFEM_DIFFUSION_SOLVE_DISTRIBUTED)
#undef AFEM_DIFFUSION_SOLVE_DISTRIBUTED

}  // namespace afem::apps::diffusion
