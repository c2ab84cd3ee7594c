#include "arenafem/memory/arena.hpp"

#include <algorithm>

#include "arenafem/memory/config.hpp"
#include "arenafem/memory/detail/size_class.hpp"
#include "arenafem/memory/error.hpp"

namespace afem::memory {

Arena::Arena(Pool& pool, ArenaOptions options)
    : pool_(&pool),
      name_(std::move(options.name)),
      chunk_label_(name_ + ".chunks"),
      chunk_bytes_(options.chunk_bytes),
      capacity_bytes_(options.capacity_bytes),
      stream_(options.stream.value_or(pool.stream())),
      freed_(detail::class_count) {
  AFEM_EXPECTS(chunk_bytes_ > 0, "Arena '" + name_ + "': chunk_bytes is 0; expected > 0");
}

Arena::~Arena() {
  if (stats_.outstanding_handles != 0) {
    ::afem::detail::report_source_destroyed_with_handles("Arena", name_, stats_.outstanding_handles,
                                                         ledger_.snapshot(name_).table());
  }
  for (const Block& chunk : chunks_) {
    pool_->deallocate(chunk);
  }
}

std::size_t Arena::block_size(std::size_t bytes) {
  AFEM_EXPECTS(bytes <= detail::largest_request,
               "Arena: request of " + std::to_string(bytes) + " bytes exceeds 2^60 bytes");
  const std::size_t rounded = detail::class_bytes(detail::class_index(bytes));
  return (rounded + block_alignment - 1) / block_alignment * block_alignment;
}

Block Arena::allocate(std::size_t bytes, std::string_view label) {
  AFEM_ASSERT(scratch_outstanding_ == 0,
              "Arena::allocate while a parallel algorithm holds scratch");
  return allocate_block(bytes, label, /*reuse_freed=*/true);
}

Block Arena::allocate_block(std::size_t bytes, std::string_view label, bool reuse_freed) {
  AFEM_EXPECTS(bytes > 0, "Arena '" + name_ + "': request of 0 bytes for '" + std::string(label) +
                              "'; expected at least one byte");
  if (bytes > detail::largest_request) {
    throw OutOfMemory("Arena '" + name_ + "': request of " + std::to_string(bytes) +
                      " bytes for '" + std::string(label) + "' exceeds 2^60 bytes");
  }
  const std::size_t size = block_size(bytes);
  LedgerEntry& entry = ledger_.entry(label);

  std::byte* pointer = nullptr;
  auto& freed = freed_[detail::class_index(size)];
  if (reuse_freed && !freed.empty()) {
    pointer = freed.back();
    freed.pop_back();
  } else {
    const bool fits_current =
        current_chunk_ < chunks_.size() && offset_ + size <= chunks_[current_chunk_].reserved;
    if (!fits_current) {
      // Chunks after the current one are untouched in this generation: take the first that fits.
      std::size_t next = std::min(current_chunk_ + 1, chunks_.size());
      while (next < chunks_.size() && chunks_[next].reserved < size) {
        ++next;
      }
      if (next == chunks_.size()) {
        next = add_chunk(size, label);
      }
      current_chunk_ = next;
      offset_ = 0;
    }
    pointer = chunks_[current_chunk_].pointer + offset_;
    offset_ += size;
    stats_.used_bytes += size;
    stats_.peak_used_bytes = std::max(stats_.peak_used_bytes, stats_.used_bytes);
  }
  stats_.live_bytes += size;
  stats_.live_handles += 1;
  stats_.outstanding_handles += 1;
  Ledger::add(entry, size);
  return Block{pointer, size, &entry, stats_.generation, stream_};
}

std::size_t Arena::add_chunk(std::size_t size, std::string_view label) {
  std::size_t request = std::max(chunk_bytes_, size);
  // Chunks not touched since the last reset: under a hard capacity they go back to the pool to
  // make room, once the new chunk is secured.
  std::size_t first_untouched = chunks_.size();
  if (capacity_bytes_ != 0) {
    first_untouched = std::min(current_chunk_ + (offset_ > 0 ? 1 : 0), chunks_.size());
    std::size_t untouched_bytes = 0;
    for (std::size_t i = first_untouched; i < chunks_.size(); ++i) {
      untouched_bytes += chunks_[i].reserved;
    }
    const std::size_t room = capacity_bytes_ - std::min(capacity_bytes_, stats_.reserved_bytes);
    const std::size_t room_after_release = room + untouched_bytes;
    request = std::min(request, detail::class_floor(room_after_release));
    if (request < size) {
      throw OutOfMemory("Arena '" + name_ + "': hard capacity " + format_bytes(capacity_bytes_) +
                        " reached: request of " + format_bytes(size) + " for '" +
                        std::string(label) + "' does not fit (" + format_bytes(stats_.used_bytes) +
                        " used since the last reset, " + format_bytes(stats_.reserved_bytes) +
                        " in chunks); largest live: " + largest_live_labels());
    }
    if (Pool::size_class(request) <= room) {
      first_untouched = chunks_.size();  // fits without giving anything back
    }
  }
  chunks_.reserve(chunks_.size() + 1);
  const Block chunk = pool_->allocate(request, chunk_label_, stream_);
  for (std::size_t i = first_untouched; i < chunks_.size(); ++i) {
    stats_.reserved_bytes -= chunks_[i].reserved;
    pool_->deallocate(chunks_[i]);
  }
  chunks_.resize(first_untouched);
  chunks_.push_back(chunk);
  stats_.reserved_bytes += chunk.reserved;
  stats_.chunk_count = chunks_.size();
  return chunks_.size() - 1;
}

void Arena::deallocate(const Block& block) noexcept {
  AFEM_ASSERT(scratch_outstanding_ == 0,
              "Arena::deallocate while a parallel algorithm holds scratch");
  release_block(block, /*keep_for_reuse=*/true);
}

void Arena::release_block(const Block& block, bool keep_for_reuse) noexcept {
  if (block.pointer == nullptr) {
    return;
  }
  stats_.outstanding_handles -= 1;
  if (block.generation != stats_.generation) {
    stats_.stale_releases += 1;
    return;
  }
  AFEM_ASSERT(block.entry->live_bytes >= block.reserved && stats_.live_bytes >= block.reserved,
              "Arena: a block given back more bytes than were live under its label");
  Ledger::remove(*block.entry, block.reserved);
  stats_.live_bytes -= block.reserved;
  stats_.live_handles -= 1;
  if (current_chunk_ < chunks_.size() && offset_ >= block.reserved &&
      block.pointer == chunks_[current_chunk_].pointer + (offset_ - block.reserved)) {
    offset_ -= block.reserved;
    stats_.used_bytes -= block.reserved;
  } else if (keep_for_reuse) {
    try {
      freed_[detail::class_index(block.reserved)].push_back(block.pointer);
    } catch (...) {
      // No room to remember it: the block is simply not reused before the next reset.
    }
  }
}

void* Arena::allocate_scratch(std::size_t bytes, std::string_view label) {
  const std::lock_guard lock(scratch_mutex_);
  const Position start{current_chunk_, offset_, stats_.used_bytes};
  void* pointer = allocate_block(bytes, label, /*reuse_freed=*/false).pointer;
  if (scratch_outstanding_++ == 0) {
    scratch_start_ = start;
  }
  return pointer;
}

void Arena::deallocate_scratch(void* pointer, std::size_t bytes, std::string_view label) noexcept {
  const std::lock_guard lock(scratch_mutex_);
  LedgerEntry* entry = ledger_.find(label);
  if (entry == nullptr || scratch_outstanding_ == 0) {
    ::afem::detail::report_noexcept_failure("Arena::deallocate_scratch: scratch never handed out",
                                            __FILE__, __LINE__);
    return;
  }
  release_block(
      Block{static_cast<std::byte*>(pointer), block_size(bytes), entry, stats_.generation, stream_},
      /*keep_for_reuse=*/false);
  if (--scratch_outstanding_ == 0) {
    current_chunk_ = scratch_start_.chunk;
    offset_ = scratch_start_.offset;
    stats_.used_bytes = scratch_start_.used_bytes;
  }
}

void Arena::reset() noexcept {
  AFEM_ASSERT(scratch_outstanding_ == 0, "Arena::reset while a parallel algorithm holds scratch");
  stats_.generation += 1;
  current_chunk_ = 0;
  offset_ = 0;
  stats_.used_bytes = 0;
  stats_.live_bytes = 0;
  stats_.live_handles = 0;
  for (auto& freed : freed_) {
    freed.clear();
  }
  ledger_.clear_live();
}

void Arena::release_chunks() {
  AFEM_ASSERT(scratch_outstanding_ == 0,
              "Arena::release_chunks while a parallel algorithm holds scratch");
  AFEM_EXPECTS(stats_.live_handles == 0,
               "Arena '" + name_ + "': release_chunks() while " +
                   std::to_string(stats_.live_handles) +
                   " handles of this generation are live (largest: " + largest_live_labels() +
                   "); release them or reset() first");
  for (const Block& chunk : chunks_) {
    pool_->deallocate(chunk);
  }
  chunks_.clear();
  for (auto& freed : freed_) {
    freed.clear();
  }
  current_chunk_ = 0;
  offset_ = 0;
  stats_.used_bytes = 0;
  stats_.reserved_bytes = 0;
  stats_.chunk_count = 0;
}

std::string Arena::largest_live_labels() const {
  const LedgerSnapshot snapshot = ledger_.snapshot(name_);
  std::string out;
  constexpr std::size_t shown = 3;
  for (std::size_t i = 0; i < snapshot.entries.size() && i < shown; ++i) {
    const LedgerEntry& entry = snapshot.entries[i];
    if (entry.live_bytes == 0) {
      break;
    }
    out += (i == 0 ? "'" : ", '") + entry.label + "' " + format_bytes(entry.live_bytes) + " in " +
           std::to_string(entry.live_count) + (entry.live_count == 1 ? " handle" : " handles");
  }
  return out.empty() ? std::string("none") : out;
}

}  // namespace afem::memory
