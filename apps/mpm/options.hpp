#pragma once

/// @file
/// Command-line parsing shared by the MPM apps and the memory-stability benchmark: the scene flags.

#include <string_view>

#include "apps/common/flag_values.hpp"
#include "apps/mpm/scene.hpp"

namespace afem::apps::mpm {

/// Applies `flag` `value` to `options` when it is a scene flag (--scene, --dim, --resolution,
/// --particles-per-cell, --dt); returns false for other flags. Throws afem::Error naming the flag
/// for a bad value.
bool parse_scene_flag(std::string_view flag, std::string_view value, SceneOptions& options);

/// Help text of the scene flags, one per line.
const char* scene_flags_help();

}  // namespace afem::apps::mpm
