#pragma once

/// @file
/// The command line shared by the MPM programs (mpm, apic_fluid): scene flags, --steps, --out DIR
/// with --every, --memory-report, --help; a progress line on a terminal.

#include "arenafem/apps/mpm/options.hpp"

namespace afem::apps::mpm {

/// Parses the arguments, runs the scene and prints what it did. Returns the exit status: 0, or 1
/// after printing the error (a bad flag, a bad scene, an output that cannot be written).
int run_command_line(int argc, char** argv, const Program& program);

}  // namespace afem::apps::mpm
