#pragma once

/// @file
/// Command-line parsing shared by the MPM apps and the memory-stability benchmark: the scene flags,
/// and the whole command line of the MPM programs.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "arenafem/apps/common/flag_values.hpp"
#include "arenafem/apps/mpm/scene.hpp"
#include "arenafem/apps/mpm/simulation.hpp"

namespace afem::apps::mpm {

/// Applies `flag` `value` to `options` when it is a scene flag (--scene, --dim, --resolution,
/// --particles-per-cell, --dt, --basis, --preconditioner); returns false for other flags. Throws
/// afem::Error naming the flag for a bad value.
bool parse_scene_flag(std::string_view flag, std::string_view value, SceneOptions& options);

/// What distinguishes one MPM program from another.
struct Program {
  const char* name = "mpm";
  const char* summary = "";
  SceneKind default_scene = SceneKind::sand_column;
  bool incompressible = false;  ///< fluid scenes run as an incompressible fluid
};

/// Help text of the scene flags, one per line: the scenes `program` runs (only the fluid ones for
/// an incompressible program), its default scene marked.
std::string scene_flags_help(const Program& program);

/// The parsed command line of an MPM program.
struct CommandLine {
  SceneOptions scene;
  std::int64_t steps = 2000;
  std::int64_t every = 100;
  std::string out;
  /// Steps between checkpoints (0: none), written to checkpoint_file().
  std::int64_t checkpoint_every = 0;
  /// A checkpoint to resume from (its setup replaces the scene flags).
  std::string restart;
  bool memory_report = false;
  /// Frames with ASCII arrays instead of appended raw binary.
  bool ascii = false;
  /// Steps run captured (StepMode::captured).
  bool capture = false;
  /// Steps between sorts of the particles into cell order (Simulation::set_particle_sort_interval).
  int sort_every = default_particle_sort_interval;
  bool help = false;
};

/// Parses the arguments after the program's name: the scene flags, --steps N, --every N,
/// --out DIR, --checkpoint-every N, --restart FILE, --sort-every N, --memory-report, --capture,
/// --ascii, --help.
/// Throws afem::Error naming the flag for an unknown flag, a missing value, a bad value, or a scene
/// flag given with --restart. The scene itself is checked by make_scene().
CommandLine parse_command_line(std::span<const std::string_view> arguments, const Program& program);

}  // namespace afem::apps::mpm
