// apic_fluid: incompressible APIC fluid in the unit box (particle to grid through a
// PicQuadrature, a pressure Poisson solve by CG on the assembled BSR Laplacian, grid to particle),
// with ParaView frames and a memory report.
#include "apps/mpm/command_line.hpp"

int main(int argc, char** argv) {
  using afem::apps::mpm::SceneKind;
  return afem::apps::mpm::run_command_line(
      argc, argv,
      {"apic_fluid",
       "incompressible APIC fluid in the unit box (dam_break or still_water); pressure by CG on "
       "the assembled Laplacian",
       SceneKind::dam_break, true});
}
