// Scene flags and number parsing for the MPM programs.
#include "apps/mpm/options.hpp"

#include <charconv>
#include <cmath>
#include <string>

#include "memory/error.hpp"

namespace afem::apps::mpm {

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

bool parse_scene_flag(std::string_view flag, std::string_view value, SceneOptions& options) {
  if (flag == "--scene") {
    options.kind = parse_scene(value);
  } else if (flag == "--dim") {
    options.dimension = static_cast<int>(parse_integer(flag, value, 2, 3));
  } else if (flag == "--resolution") {
    options.resolution = static_cast<int>(parse_integer(flag, value, 16, 4096));
  } else if (flag == "--particles-per-cell") {
    options.particles_per_cell = static_cast<int>(parse_integer(flag, value, 1, 8));
  } else if (flag == "--dt") {
    options.dt = parse_positive(flag, value);
  } else {
    return false;
  }
  return true;
}

const char* scene_flags_help() {
  return "  --scene NAME              sand_column (default), elastic_drop, dam_break or\n"
         "                            still_water\n"
         "  --dim 2|3                 dimension (default 2)\n"
         "  --resolution N            grid cells along each axis of the unit box\n"
         "                            (default 128 in 2D, 40 in 3D)\n"
         "  --particles-per-cell N    particles along each axis of a cell (default 2)\n"
         "  --dt SECONDS              time step (default 0.4 dx / wave speed)\n";
}

}  // namespace afem::apps::mpm
