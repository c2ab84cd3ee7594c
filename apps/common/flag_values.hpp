#pragma once

/// @file
/// Values of command-line flags for the apps: whole numbers in a range, positive and finite
/// numbers, with errors that name the flag and the text given.

#include <cstdint>
#include <string_view>

namespace afem::apps {

/// The integer `value` of `flag`; throws afem::Error naming the flag unless it is a whole number
/// in [min, max].
std::int64_t parse_integer(std::string_view flag, std::string_view value, std::int64_t min,
                           std::int64_t max);

/// The positive finite number `value` of `flag`; throws afem::Error naming the flag otherwise.
double parse_positive(std::string_view flag, std::string_view value);

/// The finite number `value` of `flag` (any sign); throws afem::Error naming the flag otherwise.
double parse_finite(std::string_view flag, std::string_view value);

}  // namespace afem::apps
