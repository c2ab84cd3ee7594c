#pragma once

/// @file
/// Copies between host spans and device views, in stream order.

#include <cstddef>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>

#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/device.hpp"
#include "arenafem/memory/error.hpp"

namespace afem::memory {

namespace detail {
void copy_bytes(void* destination, const void* source, std::size_t bytes, const Device& device,
                bool to_device, const Stream& stream);
}  // namespace detail

/// Host memory a copy reads or writes: a contiguous range of T (a std::vector, std::array,
/// std::span ...).
template <class Range, class T>
concept HostRangeOf = std::ranges::contiguous_range<Range> && std::ranges::sized_range<Range> &&
    std::is_same_v<std::remove_cv_t<std::ranges::range_value_t<Range>>, T>;

/// Copies `source` (host memory: a vector, array or span of T) into `destination` (memory of
/// `stream`'s device) and returns when the host buffer may be reused. Throws afem::Error when the
/// sizes differ.
template <class T, class Range>
requires HostRangeOf<Range, std::remove_const_t<T>> &&
    (!std::is_const_v<T>)void copy_to_device(ArrayView<T> destination, const Range& source,
                                             const Stream& stream) {
  const auto count = static_cast<std::size_t>(std::ranges::size(source));
  AFEM_EXPECTS(destination.size() == count, "copy_to_device: destination holds " +
                                                std::to_string(destination.size()) +
                                                " elements, source " + std::to_string(count));
  detail::copy_bytes(destination.data(), std::ranges::data(source), count * sizeof(T),
                     stream.device(), true, stream);
}

/// Copies `source` (memory of `stream`'s device; a view of T or of const T) into `destination`
/// (host memory: a vector, array or span of T); returns when the copy is complete. Throws
/// afem::Error when the sizes differ.
template <class Range, class T>
requires HostRangeOf<Range, std::remove_const_t<T>> &&
    (!std::is_const_v<std::remove_reference_t<
         std::ranges::range_reference_t<Range>>>)void copy_to_host(Range&& destination,
                                                                   ArrayView<T> source,
                                                                   const Stream& stream) {
  const auto count = static_cast<std::size_t>(std::ranges::size(destination));
  AFEM_EXPECTS(count == source.size(), "copy_to_host: destination holds " + std::to_string(count) +
                                           " elements, source " + std::to_string(source.size()));
  detail::copy_bytes(std::ranges::data(destination), source.data(), count * sizeof(T),
                     stream.device(), false, stream);
}

}  // namespace afem::memory
