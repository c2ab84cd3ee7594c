#pragma once

/// @file
/// device_resource: the upstream resource of this build's device memory, where kernels run.

#include "arenafem/memory/upstream_resource.hpp"

namespace afem::memory {

/// Host memory (HostResource) in the CPU build; memory of GPU 0 (a process-wide
/// CudaAsyncResource) in the CUDA build. Pools over it hold the buffers that Thrust kernels and
/// geometry views read.
[[nodiscard]] UpstreamResource& device_resource();

}  // namespace afem::memory
