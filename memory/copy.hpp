#pragma once

/// @file
/// Copies between host spans and device views, in stream order.

#include <cstddef>
#include <span>
#include <string>

#include "memory/array_view.hpp"
#include "memory/device.hpp"
#include "memory/error.hpp"

namespace afem::memory {

namespace detail {
void copy_bytes(void* destination, const void* source, std::size_t bytes, const Device& device,
                bool to_device, const Stream& stream);
}  // namespace detail

/// Copies `source` (host memory) into `destination` (memory of `stream`'s device) and returns when
/// the host buffer may be reused. Throws afem::Error when the sizes differ.
template <class T>
void copy_to_device(ArrayView<T> destination, std::span<const T> source, const Stream& stream) {
  AFEM_EXPECTS(destination.size() == source.size(),
               "copy_to_device: destination holds " + std::to_string(destination.size()) +
                   " elements, source " + std::to_string(source.size()));
  detail::copy_bytes(destination.data(), source.data(), source.size() * sizeof(T), stream.device(),
                     true, stream);
}

/// Copies `source` (memory of `stream`'s device) into `destination` (host memory); returns when
/// the copy is complete. Throws afem::Error when the sizes differ.
template <class T>
void copy_to_host(std::span<T> destination, ArrayView<const T> source, const Stream& stream) {
  AFEM_EXPECTS(destination.size() == source.size(),
               "copy_to_host: destination holds " + std::to_string(destination.size()) +
                   " elements, source " + std::to_string(source.size()));
  detail::copy_bytes(destination.data(), source.data(), source.size() * sizeof(T), stream.device(),
                     false, stream);
}

}  // namespace afem::memory
