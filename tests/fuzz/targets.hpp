#pragma once

/// @file
/// The fuzz targets' bodies, shared by the libFuzzer programs (tests/fuzz, clang) and the replay
/// of their corpus in the ordinary test build. Each takes one input and returns true when it was
/// accepted, false when it was refused with afem::Error; anything else (a crash, another
/// exception, an accepted input that breaks an invariant) is a finding.

#include <cstddef>
#include <cstdint>

namespace afem::test {

/// The bytes as a Gmsh .msh file: read_gmsh either refuses them with afem::Error or returns a
/// mesh whose cells only name existing vertices and whose arrays have matching sizes.
bool fuzz_gmsh_input(const std::uint8_t* data, std::size_t size);

/// The bytes as the arguments of an MPM program (separated by NUL bytes): parse_command_line and
/// make_scene (for small scenes) either refuse them with afem::Error or give options in range.
bool fuzz_command_line_input(const std::uint8_t* data, std::size_t size);

}  // namespace afem::test
