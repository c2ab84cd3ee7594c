#pragma once

/// @file
/// MemorySource and Block: what a Pool or Arena hands out and takes back.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "arenafem/memory/device.hpp"
#include "arenafem/memory/ledger.hpp"

namespace afem::memory {

/// One block handed out by a MemorySource, as its handle (Temporary) records it.
/// Plain data; the Temporary holding it owns the memory.
struct Block {
  std::byte* pointer = nullptr;
  std::size_t reserved = 0;      ///< bytes the source set aside (size class or aligned span)
  LedgerEntry* entry = nullptr;  ///< the label's line in the source's ledger
  std::uint64_t generation = 0;  ///< the Arena generation it was borrowed in (0 for a Pool)
  Stream stream;                 ///< the stream it is used and given back on
};

/// The interface of a Pool or an Arena, through which Temporary gives memory back.
/// Host-side only. A source must outlive every handle it handed out; destroying one earlier is a
/// programming error that it reports (and aborts on in checked builds).
class MemorySource {
public:
  MemorySource() = default;
  MemorySource(const MemorySource&) = delete;
  MemorySource& operator=(const MemorySource&) = delete;
  MemorySource(MemorySource&&) = delete;
  MemorySource& operator=(MemorySource&&) = delete;
  virtual ~MemorySource() = default;

  /// Hands out at least `bytes` (> 0) bytes aligned to afem::block_alignment, entered in the
  /// ledger under `label`. Throws afem::OutOfMemory when it cannot; no handle, live byte or
  /// ledger line changes then (a Pool may have returned its cache upstream while trying).
  [[nodiscard]] virtual Block allocate(std::size_t bytes, std::string_view label) = 0;

  /// Takes back a block from allocate(). Exactly once per block; a block from before an Arena
  /// reset is recognised and only counted.
  virtual void deallocate(const Block& block) noexcept = 0;

  /// False when the block was borrowed before a reset that made its memory reusable.
  [[nodiscard]] virtual bool is_current(const Block& block) const noexcept = 0;

  /// The device whose memory this source hands out.
  [[nodiscard]] virtual Device device() const noexcept = 0;

  /// The name used in reports and error messages.
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
};

}  // namespace afem::memory
