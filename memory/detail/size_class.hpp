#pragma once

/// @file
/// The size classes shared by Pool and Arena: 256 B, then four classes per power of two, so a
/// request is rounded up by at most a quarter.

#include <bit>
#include <cstddef>

namespace afem::memory::detail {

inline constexpr std::size_t smallest_class = 256;
inline constexpr int smallest_class_log2 = 8;
inline constexpr int classes_per_octave = 4;
inline constexpr int largest_request_log2 = 60;
inline constexpr std::size_t largest_request = std::size_t{1} << largest_request_log2;
inline constexpr std::size_t class_count =
    1 +
    static_cast<std::size_t>(largest_request_log2 - smallest_class_log2 + 1) * classes_per_octave;

/// Index of the size class that serves a request of `bytes` (0 < bytes <= largest_request).
constexpr std::size_t class_index(std::size_t bytes) {
  if (bytes <= smallest_class) {
    return 0;
  }
  const int octave = static_cast<int>(std::bit_width(bytes - 1)) - 1;  // 2^octave < bytes
  const std::size_t base = std::size_t{1} << octave;
  const std::size_t step = base / classes_per_octave;
  const std::size_t quarter = (bytes - base + step - 1) / step;  // 1..4
  return 1 + static_cast<std::size_t>(octave - smallest_class_log2) * classes_per_octave +
         (quarter - 1);
}

/// Bytes of the size class with this index.
constexpr std::size_t class_bytes(std::size_t index) {
  if (index == 0) {
    return smallest_class;
  }
  const int octave = smallest_class_log2 + static_cast<int>((index - 1) / classes_per_octave);
  const std::size_t quarter = (index - 1) % classes_per_octave + 1;
  const std::size_t base = std::size_t{1} << octave;
  return base + quarter * (base / classes_per_octave);
}

/// The largest class size not above `bytes`; 0 when `bytes` is below the smallest class.
constexpr std::size_t class_floor(std::size_t bytes) {
  if (bytes < smallest_class) {
    return 0;
  }
  const std::size_t index = class_index(bytes);
  return class_bytes(index) <= bytes ? class_bytes(index) : class_bytes(index - 1);
}

static_assert(class_bytes(class_index(257)) == 320);
static_assert(class_floor(std::size_t{300} << 10) == std::size_t{256} << 10);
static_assert(class_floor(320) == 320 && class_floor(255) == 0);
static_assert(class_bytes(class_index(largest_request)) == largest_request);
static_assert(class_index(largest_request) < class_count);

}  // namespace afem::memory::detail
