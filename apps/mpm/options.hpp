#pragma once

/// @file
/// Command-line parsing shared by the MPM app and the memory-stability benchmark: the scene flags
/// and number parsing with errors that name the flag.

#include <cstdint>
#include <string_view>

#include "apps/mpm/scene.hpp"

namespace afem::apps::mpm {

/// The integer `value` of `flag`; throws afem::Error naming the flag unless it is a whole number
/// in [min, max].
std::int64_t parse_integer(std::string_view flag, std::string_view value, std::int64_t min,
                           std::int64_t max);

/// The positive finite number `value` of `flag`; throws afem::Error naming the flag otherwise.
double parse_positive(std::string_view flag, std::string_view value);

/// Applies `flag` `value` to `options` when it is a scene flag (--scene, --dim, --resolution,
/// --particles-per-cell, --dt); returns false for other flags. Throws afem::Error naming the flag
/// for a bad value.
bool parse_scene_flag(std::string_view flag, std::string_view value, SceneOptions& options);

/// Help text of the scene flags, one per line.
const char* scene_flags_help();

}  // namespace afem::apps::mpm
