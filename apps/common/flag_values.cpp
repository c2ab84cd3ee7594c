// Values of command-line flags for the apps.
#include "apps/common/flag_values.hpp"

#include <charconv>
#include <cmath>
#include <exception>
#include <string>

#include "memory/error.hpp"

namespace afem::apps {

std::int64_t parse_integer(std::string_view flag, std::string_view value, std::int64_t min,
                           std::int64_t max) {
  std::int64_t result = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
  if (error != std::errc{} || end != value.data() + value.size() || result < min || result > max) {
    throw Error(std::string(flag) + " expects a whole number from " + std::to_string(min) + " to " +
                std::to_string(max) + ", got '" + std::string(value) + "'");
  }
  return result;
}

double parse_positive(std::string_view flag, std::string_view value) {
  const std::string text(value);
  std::size_t used = 0;
  double result = 0.0;
  try {
    result = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(result) || result <= 0.0) {
    throw Error(std::string(flag) + " expects a positive number, got '" + text + "'");
  }
  return result;
}

}  // namespace afem::apps
