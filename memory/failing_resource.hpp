#pragma once

/// @file
/// FailingResource: an upstream adaptor that makes chosen allocations fail, for fault-injection
/// tests and reliability runs.

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "arenafem/memory/upstream_resource.hpp"

namespace afem::memory {

/// Which allocations a FailingResource refuses. Allocations are counted from 1, failed ones too.
struct FaultPlan {
  std::uint64_t fail_at = 0;  ///< 0: none; k: the k-th allocation fails
  bool persistent = false;  ///< with fail_at: the k-th and every later one fail (memory stays gone)
  /// 0: none; an allocation that would take the bytes held above this fails.
  std::size_t byte_budget = 0;
};

/// Forwards to another upstream resource and throws afem::OutOfMemory, saying which rule fired,
/// on the allocations its FaultPlan selects; the upstream is not called for those. Owns nothing:
/// the blocks it hands out are the upstream's. Thread-safe.
class FailingResource final : public UpstreamResource {
public:
  explicit FailingResource(UpstreamResource& upstream, FaultPlan plan = {});

  [[nodiscard]] void* allocate(std::size_t bytes, const Stream& stream) override;
  void deallocate(void* pointer, std::size_t bytes, const Stream& stream) noexcept override;
  [[nodiscard]] Device device() const override;

  /// Replaces the plan; counting goes on (fail_at counts from the first allocation ever).
  void set_plan(FaultPlan plan);
  /// Allocations asked for so far, failed ones included.
  [[nodiscard]] std::uint64_t allocations() const;
  [[nodiscard]] std::uint64_t failures() const;
  /// Bytes handed out and not yet given back.
  [[nodiscard]] std::size_t held_bytes() const;

private:
  UpstreamResource* upstream_;
  mutable std::mutex mutex_;
  FaultPlan plan_;
  std::uint64_t allocations_ = 0;
  std::uint64_t failures_ = 0;
  std::size_t held_bytes_ = 0;
};

}  // namespace afem::memory
