// Embeds the MPM solver (arenafem::mpm): sand and an elastic material in one box, an emitter that
// drops elastic blocks in, a face they leave through, a checkpoint and a restart. README's MPM
// embedding example is this program.
#include <arenafem/apps/mpm/checkpoint.hpp>
#include <arenafem/apps/mpm/simulation.hpp>
#include <arenafem/memory/device_resource.hpp>

#include <cstdio>
#include <string>

namespace mpm = afem::apps::mpm;
namespace mem = afem::memory;

/// Particles 2 x 2 per cell filling the rectangle [x0, x1] x [y0, y1], moving at (0, vy).
mpm::ParticleBatch block(const mpm::Setup& setup, double x0, double y0, double x1, double y1,
                         int material, double vy) {
  mpm::ParticleBatch batch;
  const double h = setup.cell_size() / 2.0;
  for (double y = y0 + h / 2; y < y1; y += h) {
    for (double x = x0 + h / 2; x < x1; x += h) {
      batch.positions.insert(batch.positions.end(), {x, y});
      batch.velocities.insert(batch.velocities.end(), {0.0, vy});
      batch.volumes.push_back(h * h);
      batch.materials.push_back(material);
    }
  }
  return batch;
}

/// Runs `steps` steps, adding `emitted` every 50 steps while there is room.
void run(mpm::Simulation<2>& simulation, const mpm::ParticleBatch& emitted, int steps) {
  for (int s = 0; s < steps; ++s) {
    if (simulation.steps_taken() % 50 == 0 &&
        simulation.particle_count() + emitted.count() <= simulation.capacity()) {
      simulation.add_particles(emitted);
    }
    simulation.step();
  }
}

int main(int argc, char** argv) {
  const std::string checkpoint = argc > 1 ? argv[1] : "embed_mpm.afem";

  mpm::Setup setup;
  setup.extent = {2.0, 1.0, 1.0};  // 2 m x 1 m
  setup.resolution = 64;           // cells along x: 64 x 32 cells of 3.125 cm
  setup.gravity = {0.0, -9.81, 0.0};
  setup.boundaries[static_cast<int>(mpm::Face::y_low)] = mpm::Boundary::sticky;
  setup.boundaries[static_cast<int>(mpm::Face::x_high)] = mpm::Boundary::open;
  setup.materials = {mpm::Material{},  // sand
                     mpm::Material{.kind = mpm::MaterialKind::elastic,
                                   .density = 1000.0,
                                   .youngs_modulus = 5.0e5,
                                   .poisson_ratio = 0.3}};
  setup.capacity = 20000;
  setup.particles = block(setup, 0.2, 0.07, 0.6, 0.5, 0, 0.0);  // a sand column
  const mpm::ParticleBatch jelly = block(setup, 1.2, 0.6, 1.4, 0.7, 1, -1.0);

  mem::Pool pool(mem::device_resource(), {.name = "embed.mpm"});
  mem::Arena step(pool, {"embed.step", 16 << 20, 0});
  mpm::Simulation<2> simulation(setup, pool, step);
  run(simulation, jelly, 200);
  simulation.save_checkpoint(checkpoint);  // the whole state, checksummed

  // Resuming, as another process would: the checkpoint brings its setup.
  const mpm::Checkpoint saved = mpm::read_checkpoint(checkpoint);
  mem::Pool resumed_pool(mem::device_resource(), {.name = "embed.resumed"});
  mem::Arena resumed_step(resumed_pool, {"embed.resumed_step", 16 << 20, 0});
  mpm::Simulation<2> resumed(saved.setup, resumed_pool, resumed_step);
  resumed.restore(saved);

  const std::size_t reserved = pool.stats().reserved_bytes;
  run(simulation, jelly, 200);
  run(resumed, jelly, 200);
  const mpm::ParticleState a = simulation.particles();
  const mpm::ParticleState b = resumed.particles();
  std::printf("embed mpm: %d particles (%d emitted blocks in all), %lld steps, t = %.3f s\n",
              simulation.particle_count(), static_cast<int>(simulation.steps_taken() / 50),
              static_cast<long long>(simulation.steps_taken()), simulation.time());
  if (a.positions != b.positions || a.velocities != b.velocities ||
      a.deformation != b.deformation || a.materials != b.materials) {
    std::fprintf(stderr, "embed mpm: the resumed run differs from the uninterrupted one\n");
    return 1;
  }
  if (pool.stats().reserved_bytes != reserved) {
    std::fprintf(stderr, "embed mpm: memory grew while particles came and went\n");
    return 1;
  }
  std::printf("embed mpm: resumed run bitwise equal, memory flat: ok\n");
  return 0;
}
