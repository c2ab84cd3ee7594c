// mpm: explicit APIC material-point simulation of a built-in scene, with ParaView frames and a
// memory report.
#include "arenafem/apps/mpm/command_line.hpp"

int main(int argc, char** argv) {
  using afem::apps::mpm::SceneKind;
  return afem::apps::mpm::run_command_line(
      argc, argv,
      {"mpm", "explicit material point method (APIC transfers) on a built-in scene",
       SceneKind::sand_column, false});
}
