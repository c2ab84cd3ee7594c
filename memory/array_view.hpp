#pragma once

/// @file
/// ArrayView: the non-owning view of a buffer that kernels receive.

#include <cstddef>
#include <type_traits>

#include "arenafem/memory/config.hpp"

namespace afem::memory {

/// A pointer and a count, copied by value into kernels. Owns nothing: the Temporary it came from
/// must stay alive (and, for an Arena, unreset) while the view is used.
template <class T>
class ArrayView {
public:
  using value_type = std::remove_cv_t<T>;

  constexpr ArrayView() = default;
  AFEM_HOST_DEVICE constexpr ArrayView(T* data, std::size_t size) : data_(data), size_(size) {}

  /// A view of const elements from a view of mutable ones.
  template <class U>
  requires std::is_same_v<const U, T> AFEM_HOST_DEVICE constexpr ArrayView(
      ArrayView<U> other)  // NOLINT(google-explicit-constructor)
      : data_(other.data()), size_(other.size()) {}

  AFEM_HOST_DEVICE constexpr T* data() const { return data_; }
  AFEM_HOST_DEVICE constexpr std::size_t size() const { return size_; }
  AFEM_HOST_DEVICE constexpr bool empty() const { return size_ == 0; }
  AFEM_HOST_DEVICE constexpr T& operator[](std::size_t index) const { return data_[index]; }
  AFEM_HOST_DEVICE constexpr T* begin() const { return data_; }
  AFEM_HOST_DEVICE constexpr T* end() const { return data_ + size_; }

  /// The `count` elements from `offset` on; the caller keeps offset + count <= size().
  AFEM_HOST_DEVICE constexpr ArrayView subview(std::size_t offset, std::size_t count) const {
    return ArrayView(data_ + offset, count);
  }

private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace afem::memory
