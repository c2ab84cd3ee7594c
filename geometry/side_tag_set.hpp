#pragma once

/// @file
/// SideTagSet: a small set of side tags (Gmsh physical groups of sides, or a box's faces), held by
/// value so that kernels can test membership.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "arenafem/memory/config.hpp"
#include "arenafem/memory/error.hpp"

namespace afem::geometry {

/// Up to `capacity` distinct positive side tags, in the order given. Trivially copyable; owns no
/// memory. Construction throws afem::Error for a tag that is not positive, a repeated tag or more
/// than `capacity` tags.
class SideTagSet {
public:
  static constexpr int capacity = 16;

  SideTagSet() = default;
  SideTagSet(std::initializer_list<std::int32_t> tags)
      : SideTagSet(std::span<const std::int32_t>(tags.begin(), tags.size())) {}
  explicit SideTagSet(std::span<const std::int32_t> tags) {
    AFEM_EXPECTS(tags.size() <= static_cast<std::size_t>(capacity),
                 "SideTagSet: " + std::to_string(tags.size()) + " tags, expected at most " +
                     std::to_string(capacity));
    for (const std::int32_t tag : tags) {
      AFEM_EXPECTS(tag > 0, "SideTagSet: tag " + std::to_string(tag) + ", expected tags > 0");
      AFEM_EXPECTS(!contains(tag), "SideTagSet: tag " + std::to_string(tag) + " given twice");
      tags_[count_++] = tag;
    }
  }

  [[nodiscard]] AFEM_HOST_DEVICE bool contains(std::int32_t tag) const {
    for (int i = 0; i < count_; ++i) {
      if (tags_[i] == tag) {
        return true;
      }
    }
    return false;
  }
  [[nodiscard]] AFEM_HOST_DEVICE int size() const { return count_; }
  [[nodiscard]] AFEM_HOST_DEVICE bool empty() const { return count_ == 0; }
  [[nodiscard]] AFEM_HOST_DEVICE std::int32_t operator[](int i) const { return tags_[i]; }

  /// The tags as "1, 3, 4" (for messages).
  [[nodiscard]] std::string to_string() const {
    std::string text;
    for (int i = 0; i < count_; ++i) {
      text += (i > 0 ? ", " : "") + std::to_string(tags_[i]);
    }
    return text;
  }

private:
  std::int32_t tags_[capacity] = {};
  int count_ = 0;
};

}  // namespace afem::geometry
