#pragma once

/// @file
/// The size check fem functions run on the vectors they are given.

#include <cstddef>
#include <cstdint>
#include <string>

#include "arenafem/memory/error.hpp"

namespace afem::fem::detail {

/// Throws afem::Error "`what`: a vector of N entries where M are needed" when sizes differ.
inline void check_size(std::size_t actual, std::int64_t expected, const char* what) {
  AFEM_EXPECTS(actual == static_cast<std::size_t>(expected),
               std::string(what) + ": a vector of " + std::to_string(actual) + " entries where " +
                   std::to_string(expected) + " are needed");
}

}  // namespace afem::fem::detail
