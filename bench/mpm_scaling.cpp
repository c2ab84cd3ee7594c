// mpm_scaling: an MPM scene over MPI ranks (DistributedSimulation), timed per step after a
// warm-up: the median over blocks of steps of the slowest rank's time per step, with the
// particles per rank (their balance), the particles and bytes moved between ranks per step, and
// the bytes of the border sums. --stretch K stacks K copies of the scene along the axis the slabs
// cut (y in 2D, z in 3D), so that K ranks each start with one copy (weak scaling). Prints one JSON
// line from rank 0; scripts/bench-mpi.sh runs it with 1 and 2 ranks.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "arenafem/apps/common/flag_values.hpp"
#include "arenafem/apps/mpm/distributed_simulation.hpp"
#include "arenafem/apps/mpm/options.hpp"
#include "arenafem/apps/mpm/scene.hpp"
#include "arenafem/memory/communicator.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/error.hpp"

namespace {

using namespace afem;

struct Options {
  apps::mpm::SceneOptions scene;
  std::int64_t stretch = 1;
  std::int64_t warmup = 20;
  std::int64_t blocks = 9;
  std::int64_t block_steps = 20;
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) {
      throw Error("mpm_scaling: " + std::string(flag) + " needs a value");
    }
    const std::string_view value = argv[i + 1];
    if (apps::mpm::parse_scene_flag(flag, value, options.scene)) {
      continue;
    }
    if (flag == "--stretch") {
      options.stretch = apps::parse_integer(flag, value, 1, 1024);
    } else if (flag == "--warmup") {
      options.warmup = apps::parse_integer(flag, value, 0, 1 << 20);
    } else if (flag == "--blocks") {
      options.blocks = apps::parse_integer(flag, value, 1, 1000);
    } else if (flag == "--block-steps") {
      options.block_steps = apps::parse_integer(flag, value, 1, 1 << 20);
    } else {
      throw Error("mpm_scaling: unknown flag '" + std::string(flag) +
                  "' (scene flags, --stretch K, --warmup N, --blocks N, --block-steps N)");
    }
  }
  return options;
}

/// The scene, stacked `copies` times along the last axis.
apps::mpm::Setup stacked_scene(const Options& options) {
  apps::mpm::Setup setup = apps::mpm::make_scene(options.scene);
  const auto last = static_cast<std::size_t>(setup.dimension - 1);
  const double height = setup.extent[last];
  const apps::mpm::ParticleBatch one = setup.particles;
  const auto dim = static_cast<std::size_t>(setup.dimension);
  for (std::int64_t copy = 1; copy < options.stretch; ++copy) {
    apps::mpm::ParticleBatch& all = setup.particles;
    for (std::size_t p = 0; p < static_cast<std::size_t>(one.count()); ++p) {
      for (std::size_t d = 0; d < dim; ++d) {
        all.positions.push_back(one.positions[p * dim + d] +
                                (d == last ? static_cast<double>(copy) * height : 0.0));
        all.velocities.push_back(one.velocities[p * dim + d]);
      }
      all.volumes.push_back(one.volumes[p]);
      if (!one.volume_ratios.empty()) {
        all.volume_ratios.push_back(one.volume_ratios[p]);
      }
      if (!one.materials.empty()) {
        all.materials.push_back(one.materials[p]);
      }
    }
  }
  setup.extent[last] = height * static_cast<double>(options.stretch);
  return setup;
}

template <int D>
void run(const memory::Communicator& comm, const Options& options) {
  const apps::mpm::Setup setup = stacked_scene(options);
  memory::Pool pool(memory::device_resource(), {.name = "mpm_scaling"});
  memory::Arena arena(pool, {"step", 16 << 20, 0});
  apps::mpm::DistributedSimulation<D> simulation(setup, comm, pool, arena);
  for (std::int64_t s = 0; s < options.warmup; ++s) {
    simulation.step();
  }
  const apps::mpm::TrafficReport before = simulation.traffic();
  std::vector<double> per_step;
  for (std::int64_t b = 0; b < options.blocks; ++b) {
    MPI_Barrier(comm.handle());
    const double start = MPI_Wtime();
    for (std::int64_t s = 0; s < options.block_steps; ++s) {
      simulation.step();
    }
    per_step.push_back(comm.max(MPI_Wtime() - start) / static_cast<double>(options.block_steps));
  }
  std::sort(per_step.begin(), per_step.end());
  // On one rank, the plain Simulation's step beside it: what the distributed layer costs alone.
  double serial_step = 0.0;
  if (comm.size() == 1) {
    memory::Pool serial_pool(memory::device_resource(), {.name = "mpm_scaling_serial"});
    memory::Arena serial_arena(serial_pool, {"step", 16 << 20, 0});
    apps::mpm::Simulation<D> serial(setup, serial_pool, serial_arena);
    for (std::int64_t s = 0; s < options.warmup; ++s) {
      serial.step();
    }
    std::vector<double> serial_steps;
    for (std::int64_t b = 0; b < options.blocks; ++b) {
      const double start = MPI_Wtime();
      for (std::int64_t s = 0; s < options.block_steps; ++s) {
        serial.step();
      }
      serial_steps.push_back((MPI_Wtime() - start) / static_cast<double>(options.block_steps));
    }
    std::sort(serial_steps.begin(), serial_steps.end());
    serial_step = serial_steps[serial_steps.size() / 2];
  }
  const apps::mpm::TrafficReport after = simulation.traffic();
  const double steps = static_cast<double>(options.blocks * options.block_steps);
  const std::int64_t moved = comm.sum(after.particles_sent - before.particles_sent);
  const std::int64_t moved_bytes = comm.sum(after.particle_bytes_sent - before.particle_bytes_sent);
  const std::int64_t border = comm.sum(after.border_bytes_per_step);
  const std::int64_t particles = simulation.particle_count();
  const std::int64_t most = comm.max(std::int64_t{simulation.local().particle_count()});
  if (comm.rank() == 0) {
    std::printf(
        "{\"ranks\": %d, \"dim\": %d, \"scene\": \"%s\", \"basis\": \"%s\", \"resolution\": %d, "
        "\"stretch\": %lld, \"particles\": %lld, \"most_particles_on_a_rank\": %lld, "
        "\"step_s\": %.6f, \"serial_step_s\": %.6f, \"particles_moved_per_step\": %.2f, "
        "\"migration_bytes_per_step\": "
        "%.0f, \"border_bytes_per_step\": %lld}\n",
        comm.size(), D, apps::mpm::to_string(options.scene.kind).c_str(),
        apps::mpm::to_string(setup.basis).c_str(), setup.resolution,
        static_cast<long long>(options.stretch), static_cast<long long>(particles),
        static_cast<long long>(most), per_step[per_step.size() / 2], serial_step,
        static_cast<double>(moved) / steps, static_cast<double>(moved_bytes) / steps,
        static_cast<long long>(border));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const memory::MpiSession mpi(argc, argv);
  try {
    const Options options = parse(argc, argv);
    const memory::Communicator comm;
    if (options.scene.dimension == 2) {
      run<2>(comm, options);
    } else {
      run<3>(comm, options);
    }
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
