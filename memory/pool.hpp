#pragma once

/// @file
/// Pool: a thread-safe caching allocator in size classes over an UpstreamResource.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "arenafem/memory/host_resource.hpp"
#include "arenafem/memory/memory_source.hpp"

namespace afem::memory {

/// Counters of a Pool, always kept. Bytes are size-class bytes (what the pool set aside).
struct PoolStats {
  std::size_t live_bytes = 0;  ///< handed out and not yet given back
  std::size_t live_blocks = 0;
  std::size_t reserved_bytes = 0;  ///< taken from upstream and not yet returned (live + cached)
  std::size_t peak_live_bytes = 0;
  std::uint64_t upstream_allocations = 0;
  std::uint64_t upstream_frees = 0;
  std::uint64_t hits = 0;    ///< requests served from the cache
  std::uint64_t misses = 0;  ///< requests that went upstream
};

/// Construction options of a Pool.
struct PoolOptions {
  std::string name = "pool";  ///< used in reports and errors
  /// Default stream of allocate(bytes, label); unset means the default stream of the upstream's
  /// device.
  std::optional<Stream> stream{};
};

/// Caches blocks in size classes (256 B, then four classes per power of two, so at most 25 %
/// rounding) over an upstream resource. A block given back goes into its class's cache and is
/// handed out again without an upstream call; trim() or destruction returns the cache upstream.
/// On CUDA, reuse is stream-ordered: a block given back on another stream than the pool's makes
/// the pool's stream wait for it, is cached as freed on the pool's stream, and is reused on that
/// stream at once and on another stream T only after T waits for the pool's stream. Callers'
/// streams therefore need to live only until their blocks are given back. Every member function is
/// safe to call from several host threads at once.
class Pool final : public MemorySource {
public:
  explicit Pool(UpstreamResource& upstream = HostResource::instance(), PoolOptions options = {});
  /// Returns every cached block upstream. Live blocks at this point are a programming error: it
  /// names their labels on stderr and aborts in checked builds, and leaks them otherwise.
  ~Pool() override;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  Pool(Pool&&) = delete;
  Pool& operator=(Pool&&) = delete;

  [[nodiscard]] Block allocate(std::size_t bytes, std::string_view label) override;
  /// As allocate(bytes, label), in stream order on `stream`.
  [[nodiscard]] Block allocate(std::size_t bytes, std::string_view label, const Stream& stream);
  void deallocate(const Block& block) noexcept override;
  [[nodiscard]] bool is_current(const Block& /*block*/) const noexcept override { return true; }
  [[nodiscard]] Device device() const noexcept override { return device_; }
  [[nodiscard]] std::string_view name() const noexcept override { return name_; }
  /// The stream of allocate(bytes, label).
  [[nodiscard]] const Stream& stream() const noexcept { return stream_; }

  /// Returns every cached (not live) block to the upstream resource.
  void trim();

  [[nodiscard]] PoolStats stats() const;
  /// Live bytes per label; their sum equals stats().live_bytes.
  [[nodiscard]] LedgerSnapshot ledger() const;

  /// The bytes a request of `bytes` occupies: its size class.
  [[nodiscard]] static std::size_t size_class(std::size_t bytes);

private:
  void release_cache_locked() noexcept;

  struct CachedBlock {
    std::byte* pointer = nullptr;
    Stream stream;
  };

  UpstreamResource* upstream_;
  Device device_;
  std::string name_;
  Stream stream_;
  mutable std::mutex mutex_;
  std::vector<std::vector<CachedBlock>> cache_;  // by size-class index
  Ledger ledger_;
  PoolStats stats_;
};

}  // namespace afem::memory
