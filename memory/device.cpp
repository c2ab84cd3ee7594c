#include "arenafem/memory/device.hpp"

#include <charconv>

#include "arenafem/memory/config.hpp"
#include "arenafem/memory/error.hpp"

#if AFEM_HAS_CUDA
#include <cuda_runtime_api.h>

#include "arenafem/memory/detail/cuda_check.hpp"
#include "arenafem/memory/detail/cuda_device_guard.hpp"
#endif

namespace afem::memory {

Device Device::cuda(int ordinal) {
  AFEM_EXPECTS(ordinal >= 0, "Device::cuda: ordinal " + std::to_string(ordinal) +
                                 " is negative; expected a GPU ordinal >= 0");
  return Device{DeviceKind::cuda, ordinal};
}

Device Device::parse(std::string_view text) {
  if (text == "cpu") {
    return cpu();
  }
  if (text == "cuda") {
    return cuda(0);
  }
  constexpr std::string_view prefix = "cuda:";
  if (text.starts_with(prefix)) {
    const std::string_view digits = text.substr(prefix.size());
    int ordinal = -1;
    const auto [end, error] =
        std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
    if (error == std::errc{} && end == digits.data() + digits.size() && ordinal >= 0) {
      return cuda(ordinal);
    }
  }
  throw Error("Device::parse: '" + std::string(text) +
              "' is not a device; expected \"cpu\", \"cuda\" or \"cuda:N\"");
}

std::string Device::name() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(ordinal_);
}

Stream Stream::cuda_default(int ordinal) {
  return Stream{Device::cuda(ordinal), nullptr};
}

Stream Stream::from_native(Device device, void* native_handle) {
  AFEM_EXPECTS(device.is_cuda() || native_handle == nullptr,
               "Stream::from_native: a CPU stream has no native handle; expected nullptr for "
               "device cpu");
  return Stream{device, native_handle};
}

void Stream::synchronize() const {
  if (device_.is_cpu()) {
    return;
  }
#if AFEM_HAS_CUDA
  const detail::CudaDeviceGuard guard(device_.ordinal());
  AFEM_CUDA_TRY(cudaStreamSynchronize(static_cast<cudaStream_t>(handle_)));
#else
  throw Error("Stream::synchronize: stream on " + device_.name() +
              " in a build without CUDA; rebuild with ARENAFEM_CUDA=ON");
#endif
}

void Stream::wait_for(const Stream& other) const {
  if (device_.is_cpu() || other == *this) {
    return;
  }
#if AFEM_HAS_CUDA
  const detail::CudaDeviceGuard guard(other.device_.ordinal());
  cudaEvent_t event = nullptr;
  AFEM_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  AFEM_CUDA_TRY(cudaEventRecord(event, static_cast<cudaStream_t>(other.handle_)));
  AFEM_CUDA_TRY(cudaStreamWaitEvent(static_cast<cudaStream_t>(handle_), event, 0));
  AFEM_CUDA_TRY(cudaEventDestroy(event));
#else
  throw Error("Stream::wait_for: stream on " + device_.name() +
              " in a build without CUDA; rebuild with ARENAFEM_CUDA=ON");
#endif
}

}  // namespace afem::memory
