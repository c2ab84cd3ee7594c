#include "arenafem/memory/failing_resource.hpp"

#include <string>

#include "arenafem/memory/error.hpp"

namespace afem::memory {

FailingResource::FailingResource(UpstreamResource& upstream, FaultPlan plan)
    : upstream_(&upstream), plan_(plan) {}

void* FailingResource::allocate(std::size_t bytes, const Stream& stream) {
  {
    const std::lock_guard lock(mutex_);
    const std::uint64_t number = ++allocations_;
    const bool counted = plan_.fail_at != 0 &&
                         (plan_.persistent ? number >= plan_.fail_at : number == plan_.fail_at);
    if (counted) {
      ++failures_;
      throw OutOfMemory("FailingResource: allocation " + std::to_string(number) + " of " +
                        std::to_string(bytes) + " bytes refused (fault injected at allocation " +
                        std::to_string(plan_.fail_at) + (plan_.persistent ? " and after" : "") +
                        ")");
    }
    if (plan_.byte_budget != 0 && held_bytes_ + bytes > plan_.byte_budget) {
      ++failures_;
      throw OutOfMemory("FailingResource: allocation " + std::to_string(number) + " of " +
                        std::to_string(bytes) + " bytes refused (" + std::to_string(held_bytes_) +
                        " held, budget " + std::to_string(plan_.byte_budget) + ")");
    }
  }
  void* pointer = upstream_->allocate(bytes, stream);
  const std::lock_guard lock(mutex_);
  held_bytes_ += bytes;
  return pointer;
}

void FailingResource::deallocate(void* pointer, std::size_t bytes, const Stream& stream) noexcept {
  upstream_->deallocate(pointer, bytes, stream);
  const std::lock_guard lock(mutex_);
  held_bytes_ -= bytes;
}

Device FailingResource::device() const {
  return upstream_->device();
}

void FailingResource::set_plan(FaultPlan plan) {
  const std::lock_guard lock(mutex_);
  plan_ = plan;
}

std::uint64_t FailingResource::allocations() const {
  const std::lock_guard lock(mutex_);
  return allocations_;
}

std::uint64_t FailingResource::failures() const {
  const std::lock_guard lock(mutex_);
  return failures_;
}

std::size_t FailingResource::held_bytes() const {
  const std::lock_guard lock(mutex_);
  return held_bytes_;
}

}  // namespace afem::memory
