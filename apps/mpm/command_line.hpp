#pragma once

/// @file
/// The command line shared by the MPM programs (mpm, apic_fluid): scene flags, --steps, --out DIR
/// with --every, --memory-report, --help; a progress line on a terminal.

#include "apps/mpm/scene.hpp"

namespace afem::apps::mpm {

/// What distinguishes one MPM program from another.
struct Program {
  const char* name = "mpm";
  const char* summary = "";
  SceneKind default_scene = SceneKind::sand_column;
  bool incompressible = false;  ///< fluid scenes run as an incompressible fluid
};

/// Parses the arguments, runs the scene and prints what it did. Returns the exit status: 0, or 1
/// after printing the error (a bad flag, a bad scene, an output that cannot be written).
int run_command_line(int argc, char** argv, const Program& program);

}  // namespace afem::apps::mpm
