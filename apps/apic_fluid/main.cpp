// apic_fluid: incompressible APIC fluid in the unit box (particle to grid through a PicQuadrature
// per velocity component of a staggered grid, a projection that makes the grid velocity
// divergence-free over the fluid cells by CG with a geometric multigrid, grid to particle), with
// ParaView frames and a memory report.
#include "arenafem/apps/mpm/command_line.hpp"

int main(int argc, char** argv) {
  using afem::apps::mpm::SceneKind;
  return afem::apps::mpm::run_command_line(
      argc, argv,
      {"apic_fluid",
       "incompressible APIC fluid in the unit box (dam_break or still_water); the staggered grid "
       "velocity is projected to be divergence-free over the fluid cells (CG with multigrid)",
       SceneKind::dam_break, true});
}
