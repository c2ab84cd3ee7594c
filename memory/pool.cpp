#include "arenafem/memory/pool.hpp"

#include <algorithm>

#include "arenafem/memory/detail/size_class.hpp"
#include "arenafem/memory/error.hpp"

namespace afem::memory {

using detail::class_bytes;
using detail::class_count;
using detail::class_index;
using detail::largest_request;

Pool::Pool(UpstreamResource& upstream, PoolOptions options)
    : upstream_(&upstream),
      device_(upstream.device()),
      name_(std::move(options.name)),
      stream_(options.stream.value_or(device_.is_cuda() ? Stream::cuda_default(device_.ordinal())
                                                        : Stream::cpu())),
      cache_(class_count) {
  AFEM_EXPECTS(stream_.device() == device_, "Pool '" + name_ + "': default stream on " +
                                                stream_.device().name() +
                                                " but the upstream resource is on " +
                                                device_.name() + "; expected the same device");
}

Pool::~Pool() {
  if (stats_.live_blocks != 0) {
    ::afem::detail::report_source_destroyed_with_handles("Pool", name_, stats_.live_blocks,
                                                         ledger_.snapshot(name_).table());
  }
  trim();
}

std::size_t Pool::size_class(std::size_t bytes) {
  AFEM_EXPECTS(bytes <= largest_request, "Pool::size_class: " + std::to_string(bytes) +
                                             " bytes exceeds the largest request (2^60 bytes)");
  return class_bytes(class_index(bytes));
}

Block Pool::allocate(std::size_t bytes, std::string_view label) {
  return allocate(bytes, label, stream_);
}

Block Pool::allocate(std::size_t bytes, std::string_view label, const Stream& stream) {
  AFEM_EXPECTS(bytes > 0, "Pool '" + name_ + "': request of 0 bytes for '" + std::string(label) +
                              "'; expected at least one byte");
  AFEM_EXPECTS(stream.device() == device_,
               "Pool '" + name_ + "': request for '" + std::string(label) + "' on a stream of " +
                   stream.device().name() + "; the pool holds " + device_.name() + " memory");
  if (bytes > largest_request) {
    throw OutOfMemory("Pool '" + name_ + "': request of " + std::to_string(bytes) + " bytes for '" +
                      std::string(label) + "' exceeds the largest request (2^60 bytes)");
  }
  const std::size_t index = class_index(bytes);
  const std::size_t reserved = class_bytes(index);

  const std::lock_guard lock(mutex_);
  LedgerEntry& entry = ledger_.entry(label);
  std::byte* pointer = nullptr;
  auto& cached = cache_[index];
  if (!cached.empty()) {
    auto same_stream = std::find_if(cached.rbegin(), cached.rend(), [&](const CachedBlock& block) {
      return block.stream == stream;
    });
    const auto chosen =
        same_stream != cached.rend() ? std::prev(same_stream.base()) : std::prev(cached.end());
    stream.wait_for(chosen->stream);
    pointer = chosen->pointer;
    *chosen = cached.back();
    cached.pop_back();
    ++stats_.hits;
  } else {
    try {
      pointer = static_cast<std::byte*>(upstream_->allocate(reserved, stream));
    } catch (const OutOfMemory&) {
      // Cached blocks of other classes may be what the upstream lacks: return them and retry once.
      release_cache_locked();
      stream_.synchronize();  // cached blocks were freed in order on the pool's stream
      try {
        pointer = static_cast<std::byte*>(upstream_->allocate(reserved, stream));
      } catch (const OutOfMemory& error) {
        throw OutOfMemory("Pool '" + name_ + "': the upstream resource on " + device_.name() +
                          " refused " + format_bytes(reserved) + " for '" + std::string(label) +
                          "' with " + format_bytes(stats_.live_bytes) + " live (" + error.what() +
                          ")");
      }
    }
    ++stats_.misses;
    ++stats_.upstream_allocations;
    stats_.reserved_bytes += reserved;
  }
  stats_.live_bytes += reserved;
  stats_.live_blocks += 1;
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
  Ledger::add(entry, reserved);
  return Block{pointer, reserved, &entry, 0, stream};
}

void Pool::deallocate(const Block& block) noexcept {
  if (block.pointer == nullptr) {
    return;
  }
  // A cached block is kept as freed on the pool's own stream, which outlives the pool, never on a
  // caller's stream that may be destroyed before the block is reused or trimmed.
  Stream freed_on = block.stream;
  if (freed_on != stream_) {
    try {
      stream_.wait_for(freed_on);
      freed_on = stream_;
    } catch (const std::exception& error) {
      ::afem::detail::report_noexcept_failure(error.what(), __FILE__, __LINE__);
    }
  }
  const std::lock_guard lock(mutex_);
  Ledger::remove(*block.entry, block.reserved);
  stats_.live_bytes -= block.reserved;
  stats_.live_blocks -= 1;
  try {
    cache_[class_index(block.reserved)].push_back(CachedBlock{block.pointer, freed_on});
  } catch (...) {
    // No room to remember the block: give it back upstream instead of losing it.
    upstream_->deallocate(block.pointer, block.reserved, freed_on);
    ++stats_.upstream_frees;
    stats_.reserved_bytes -= block.reserved;
  }
}

void Pool::trim() {
  const std::lock_guard lock(mutex_);
  release_cache_locked();
}

void Pool::release_cache_locked() noexcept {
  for (std::size_t index = 0; index < cache_.size(); ++index) {
    for (const CachedBlock& block : cache_[index]) {
      upstream_->deallocate(block.pointer, class_bytes(index), block.stream);
      ++stats_.upstream_frees;
      stats_.reserved_bytes -= class_bytes(index);
    }
    cache_[index].clear();
  }
}

PoolStats Pool::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

LedgerSnapshot Pool::ledger() const {
  const std::lock_guard lock(mutex_);
  return ledger_.snapshot(name_);
}

}  // namespace afem::memory
