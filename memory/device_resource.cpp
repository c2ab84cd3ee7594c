#include "arenafem/memory/device_resource.hpp"

#include "arenafem/memory/config.hpp"
#include "arenafem/memory/cuda_resource.hpp"
#include "arenafem/memory/host_resource.hpp"

namespace afem::memory {

UpstreamResource& device_resource() {
#if AFEM_HAS_CUDA
  static CudaAsyncResource resource(0);
  return resource;
#else
  return HostResource::instance();
#endif
}

}  // namespace afem::memory
