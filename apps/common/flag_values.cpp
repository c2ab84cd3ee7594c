// Values of command-line flags for the apps.
#include "arenafem/apps/common/flag_values.hpp"

#include <charconv>
#include <cmath>
#include <exception>
#include <optional>
#include <string>

#include "arenafem/memory/error.hpp"

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

namespace {

/// The number `text` spells whole, or nothing.
std::optional<double> finite_number(const std::string& text) {
  std::size_t used = 0;
  double result = 0.0;
  try {
    result = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size() || !std::isfinite(result)) {
    return std::nullopt;
  }
  return result;
}

}  // namespace

double parse_positive(std::string_view flag, std::string_view value) {
  const std::string text(value);
  const std::optional<double> result = finite_number(text);
  if (!result || *result <= 0.0) {
    throw Error(std::string(flag) + " expects a positive number, got '" + text + "'");
  }
  return *result;
}

double parse_finite(std::string_view flag, std::string_view value) {
  const std::string text(value);
  const std::optional<double> result = finite_number(text);
  if (!result) {
    throw Error(std::string(flag) + " expects a finite number, got '" + text + "'");
  }
  return *result;
}

}  // namespace afem::apps
