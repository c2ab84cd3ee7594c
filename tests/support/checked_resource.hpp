#pragma once

/// @file
/// A test upstream that tracks every block, can refuse after a byte limit, and reports blocks
/// that were never given back.

#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <mutex>

#include "arenafem/memory/error.hpp"
#include "arenafem/memory/host_resource.hpp"

namespace afem::test {

/// Wraps HostResource: counts allocations and frees, checks each free matches an allocation of the
/// same size, and throws afem::OutOfMemory once `limit_bytes` outstanding would be passed.
class CheckedResource final : public memory::UpstreamResource {
public:
  explicit CheckedResource(std::size_t limit_bytes = ~std::size_t{0}) : limit_(limit_bytes) {}
  ~CheckedResource() override {
    EXPECT_TRUE(outstanding_.empty()) << outstanding_.size() << " upstream blocks never freed";
  }

  void* allocate(std::size_t bytes, const memory::Stream& stream) override {
    const std::lock_guard lock(mutex_);
    if (outstanding_bytes_ + bytes > limit_) {
      throw OutOfMemory("CheckedResource: limit reached");
    }
    void* pointer = memory::HostResource::instance().allocate(bytes, stream);
    outstanding_.emplace(pointer, bytes);
    outstanding_bytes_ += bytes;
    ++allocations_;
    return pointer;
  }

  void deallocate(void* pointer, std::size_t bytes,
                  const memory::Stream& stream) noexcept override {
    const std::lock_guard lock(mutex_);
    const auto found = outstanding_.find(pointer);
    EXPECT_NE(found, outstanding_.end()) << "free of a pointer never allocated";
    if (found == outstanding_.end()) {
      return;
    }
    EXPECT_EQ(found->second, bytes) << "free with another size than allocated";
    outstanding_bytes_ -= found->second;
    outstanding_.erase(found);
    ++frees_;
    memory::HostResource::instance().deallocate(pointer, bytes, stream);
  }

  [[nodiscard]] memory::Device device() const override { return memory::Device::cpu(); }

  void set_limit(std::size_t limit_bytes) {
    const std::lock_guard lock(mutex_);
    limit_ = limit_bytes;
  }
  [[nodiscard]] std::size_t allocations() const {
    const std::lock_guard lock(mutex_);
    return allocations_;
  }
  [[nodiscard]] std::size_t frees() const {
    const std::lock_guard lock(mutex_);
    return frees_;
  }
  [[nodiscard]] std::size_t outstanding_bytes() const {
    const std::lock_guard lock(mutex_);
    return outstanding_bytes_;
  }

private:
  mutable std::mutex mutex_;
  std::size_t limit_;
  std::map<void*, std::size_t> outstanding_;
  std::size_t outstanding_bytes_ = 0;
  std::size_t allocations_ = 0;
  std::size_t frees_ = 0;
};

}  // namespace afem::test
