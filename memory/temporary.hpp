#pragma once

/// @file
/// Temporary<T>: the move-only handle that owns every buffer in arenafem, and borrow_temporary.

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/memory_source.hpp"

namespace afem::memory {

template <class T>
class Temporary;

template <class T>
void replace_owned(Temporary<T>& slot, Temporary<T>&& fresh) noexcept;

template <class T>
Temporary<T>& replace_owned(Temporary<T>& slot, MemorySource& source, std::size_t count,
                            std::string_view label);

/// Owns `size()` elements of T borrowed from a Pool or an Arena, under a label in that source's
/// ledger. Move-only; destruction or release() gives the memory back exactly once. A moved-from
/// handle is empty. Move assignment is deleted: an owner swaps the buffer it keeps only through
/// replace_owned(), which fixes the order in which the old one is released. The elements are not
/// initialised. Kernels get a view(), never the handle.
template <class T>
class Temporary {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "Temporary<T> holds raw device-visible memory: T must be trivially copyable and "
                "trivially destructible");

public:
  using value_type = T;

  /// An empty handle: no memory, size 0.
  Temporary() noexcept = default;

  /// Takes ownership of `block` from `origin`, holding `count` elements.
  Temporary(MemorySource& origin, const Block& block, std::size_t count) noexcept
      : origin_(&origin), block_(block), count_(count) {}

  Temporary(Temporary&& other) noexcept
      : origin_(std::exchange(other.origin_, nullptr)),
        block_(std::exchange(other.block_, Block{})),
        count_(std::exchange(other.count_, 0)) {}

  Temporary(const Temporary&) = delete;
  Temporary& operator=(const Temporary&) = delete;
  Temporary& operator=(Temporary&&) = delete;

  ~Temporary() { release(); }

  /// Gives the memory back to its source now and leaves the handle empty; does nothing on an
  /// empty handle, so memory is returned exactly once.
  void release() noexcept {
    if (origin_ != nullptr) {
      std::exchange(origin_, nullptr)->deallocate(block_);
      block_ = Block{};
      count_ = 0;
    }
  }

  /// The elements; throws afem::StaleHandle naming the label when the Arena the handle came from
  /// was reset after it was borrowed. A const handle gives read-only elements.
  [[nodiscard]] T* data() {
    check_current();
    return reinterpret_cast<T*>(
        block_.pointer);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  }
  [[nodiscard]] const T* data() const {
    check_current();
    return reinterpret_cast<const T*>(
        block_.pointer);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  }

  /// A non-owning view for kernels; throws afem::StaleHandle like data(). A const handle gives a
  /// read-only view.
  [[nodiscard]] ArrayView<T> view() { return ArrayView<T>(data(), count_); }
  [[nodiscard]] ArrayView<const T> view() const { return ArrayView<const T>(data(), count_); }

  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  /// The label it was borrowed under; empty for an empty handle.
  [[nodiscard]] std::string_view label() const noexcept {
    return block_.entry == nullptr ? std::string_view{} : std::string_view(block_.entry->label);
  }
  /// The Pool or Arena it came from; nullptr for an empty handle.
  [[nodiscard]] const MemorySource* origin() const noexcept { return origin_; }
  /// Where the memory lives; the CPU for an empty handle.
  [[nodiscard]] Device device() const noexcept {
    return origin_ == nullptr ? Device::cpu() : origin_->device();
  }
  /// The stream the memory is used and given back on.
  [[nodiscard]] const Stream& stream() const noexcept { return block_.stream; }
  /// False once the Arena it came from has been reset; true for Pool handles and empty ones.
  [[nodiscard]] bool is_current() const noexcept {
    return origin_ == nullptr || origin_->is_current(block_);
  }

private:
  friend void replace_owned<T>(Temporary<T>& slot, Temporary<T>&& fresh) noexcept;
  friend Temporary<T>& replace_owned<T>(Temporary<T>& slot, MemorySource& source, std::size_t count,
                                        std::string_view label);

  void swap(Temporary& other) noexcept {
    std::swap(origin_, other.origin_);
    std::swap(block_, other.block_);
    std::swap(count_, other.count_);
  }

  void check_current() const {
    if (!is_current()) {
      throw StaleHandle("Temporary '" + std::string(label()) + "' from arena '" +
                        std::string(origin_->name()) +
                        "' was used after that arena was reset; borrow it again in the current "
                        "step or keep it in a Pool");
    }
  }

  MemorySource* origin_ = nullptr;
  Block block_;
  std::size_t count_ = 0;
};

/// Borrows `count` elements of T from `source` (a Pool or an Arena) under `label`.
/// A count of 0 gives an empty handle and borrows nothing. Throws afem::OutOfMemory when the
/// source cannot provide the memory (or count * sizeof(T) overflows); nothing changes then.
template <class T>
[[nodiscard]] Temporary<T> borrow_temporary(MemorySource& source, std::size_t count,
                                            std::string_view label) {
  if (count == 0) {
    return Temporary<T>();
  }
  if (count > std::numeric_limits<std::size_t>::max() / sizeof(T)) {
    throw OutOfMemory("borrow_temporary: " + std::to_string(count) + " elements of " +
                      std::to_string(sizeof(T)) + " bytes for '" + std::string(label) +
                      "' overflow the byte count (a negative size converted to unsigned?)");
  }
  return Temporary<T>(source, source.allocate(count * sizeof(T), label), count);
}

}  // namespace afem::memory
