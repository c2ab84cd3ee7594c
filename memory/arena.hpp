#pragma once

/// @file
/// Arena: a bump allocator in chunks taken from a Pool, reset all at once at a known point.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "arenafem/memory/memory_source.hpp"
#include "arenafem/memory/pool.hpp"

namespace afem::memory {

/// Construction options of an Arena.
struct ArenaOptions {
  std::string name = "arena";                      ///< used in reports, errors and chunk labels
  std::size_t chunk_bytes = std::size_t{4} << 20;  ///< size of each chunk taken from the pool
  /// Hard limit on the bytes of all chunks together; 0 grows chunk by chunk without limit.
  /// A request that would pass it throws afem::OutOfMemory and changes nothing.
  std::size_t capacity_bytes = 0;
  /// Stream the arena's blocks are used in order on; unset means the pool's stream.
  std::optional<Stream> stream{};
};

/// Counters of an Arena.
struct ArenaStats {
  std::size_t reserved_bytes = 0;  ///< bytes of all chunks held from the pool
  std::size_t chunk_count = 0;
  std::size_t used_bytes = 0;           ///< bytes bumped since the last reset (alignment included)
  std::size_t peak_used_bytes = 0;      ///< the most used_bytes over all generations
  std::size_t live_bytes = 0;           ///< bytes held by handles of the current generation
  std::size_t live_handles = 0;         ///< handles of the current generation not yet given back
  std::size_t outstanding_handles = 0;  ///< handles of any generation not yet given back
  std::uint64_t generation = 0;         ///< number of resets so far
  std::uint64_t stale_releases = 0;     ///< handles given back after the reset that outdated them
};

/// Hands out memory by bumping an offset through chunks borrowed from a Pool, in the Pool's size
/// classes. A block given back rolls the offset back when it is the last one handed out, and is
/// otherwise kept for the next request of the same size class in the same generation, so a step
/// that gives buffers back in any order and asks again for the same sizes does not keep growing.
/// reset() makes all of it reusable at once and starts a new generation: handles from before it are
/// stale, and using one throws afem::StaleHandle naming its label. The chunks stay with the arena
/// until release_chunks() or destruction, so a step that repeats the same requests takes nothing
/// from the pool after its first run. One host thread at a time; on CUDA, blocks are used in order
/// on the arena's stream.
class Arena final : public MemorySource {
public:
  explicit Arena(Pool& pool, ArenaOptions options = {});
  /// Gives every chunk back to the pool. Handles still outstanding (of any generation) are a
  /// programming error: reported on stderr, and an abort in checked builds.
  ~Arena() override;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Arena(Arena&&) = delete;
  Arena& operator=(Arena&&) = delete;

  [[nodiscard]] Block allocate(std::size_t bytes, std::string_view label) override;
  void deallocate(const Block& block) noexcept override;
  [[nodiscard]] bool is_current(const Block& block) const noexcept override {
    return block.generation == stats_.generation;
  }
  [[nodiscard]] Device device() const noexcept override { return pool_->device(); }
  [[nodiscard]] std::string_view name() const noexcept override { return name_; }
  [[nodiscard]] const Stream& stream() const noexcept { return stream_; }

  /// Makes every byte reusable and starts a new generation; the chunks stay.
  void reset() noexcept;

  /// Gives all chunks back to the pool. Throws afem::Error, changing nothing, while handles of the
  /// current generation are live.
  void release_chunks();

  [[nodiscard]] const ArenaStats& stats() const noexcept { return stats_; }
  /// Live bytes per label in the current generation; their sum equals stats().live_bytes.
  [[nodiscard]] LedgerSnapshot ledger() const { return ledger_.snapshot(name_); }

  /// Scratch for a parallel algorithm (ArenaThrustAllocator): like allocate(), but safe to call
  /// from several threads at once while the arena's other members are not in use. When the last
  /// scratch block is given back, the arena returns to where it stood before the first one, so an
  /// algorithm leaves the same state whatever order its threads ran in.
  [[nodiscard]] void* allocate_scratch(std::size_t bytes, std::string_view label);
  /// Gives back scratch from allocate_scratch() of `bytes` under `label`.
  void deallocate_scratch(void* pointer, std::size_t bytes, std::string_view label) noexcept;

  /// The bytes a request of `bytes` occupies: its size class, rounded up to afem::block_alignment.
  [[nodiscard]] static std::size_t block_size(std::size_t bytes);

private:
  /// Takes a chunk for a request of `size` aligned bytes from the pool (within the hard capacity,
  /// returning untouched chunks first if that makes room) and returns its index.
  std::size_t add_chunk(std::size_t size, std::string_view label);
  Block allocate_block(std::size_t bytes, std::string_view label, bool reuse_freed);
  void release_block(const Block& block, bool keep_for_reuse) noexcept;
  [[nodiscard]] std::string largest_live_labels() const;

  Pool* pool_;
  std::string name_;
  std::string chunk_label_;
  std::size_t chunk_bytes_;
  std::size_t capacity_bytes_;
  Stream stream_;
  std::vector<Block> chunks_;
  std::vector<std::vector<std::byte*>> freed_;  // blocks given back this generation, by size class
  std::size_t current_chunk_ = 0;
  std::size_t offset_ = 0;  // bump offset in chunks_[current_chunk_]
  Ledger ledger_;
  ArenaStats stats_;

  struct Position {
    std::size_t chunk = 0;
    std::size_t offset = 0;
    std::size_t used_bytes = 0;
  };
  std::mutex scratch_mutex_;
  std::size_t scratch_outstanding_ = 0;
  Position scratch_start_;
};

/// Resets its Arena when it goes out of scope: the per-step arena of a simulation loop.
/// Owns nothing; the arena must outlive it.
class ArenaScope {
public:
  explicit ArenaScope(Arena& arena) noexcept : arena_(&arena) {}
  ~ArenaScope() { arena_->reset(); }
  ArenaScope(const ArenaScope&) = delete;
  ArenaScope& operator=(const ArenaScope&) = delete;
  ArenaScope(ArenaScope&&) = delete;
  ArenaScope& operator=(ArenaScope&&) = delete;

  [[nodiscard]] Arena& arena() const noexcept { return *arena_; }

private:
  Arena* arena_;
};

}  // namespace afem::memory
