// The command line of the MPM programs: scene flags, the run with its progress line, frames and
// memory report.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arenafem/apps/mpm/command_line.hpp"

#include "arenafem/apps/mpm/checkpoint.hpp"
#ifdef ARENAFEM_WITH_MPI
#include "arenafem/apps/common/rank_errors.hpp"
#include "arenafem/apps/mpm/distributed_simulation.hpp"
#include "arenafem/memory/communicator.hpp"
#endif
#include "arenafem/apps/mpm/frames.hpp"
#include "arenafem/apps/mpm/options.hpp"
#include "arenafem/apps/mpm/scene.hpp"
#include "arenafem/apps/mpm/simulation.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/ledger.hpp"
#include "arenafem/memory/owned_stream.hpp"

namespace afem::apps::mpm {
namespace {

void print_help(const Program& program) {
  std::printf(
      "%s: %s\n\n"
      "usage: %s [options]\n%s"
      "  --steps N                 time steps to run (default 2000)\n"
      "  --out DIR                 write particle (.vtp) and grid (.vtu) frames and the\n"
      "                            ParaView collections particles.pvd, grid.pvd into DIR\n"
      "  --every N                 steps between frames (default 100)\n"
      "  --ascii                   frames with their arrays as text (default: appended\n"
      "                            raw binary, about half the size)\n"
      "  --checkpoint-every N      write the whole state every N steps (counted from the\n"
      "                            start of the run, restarts included) to\n"
      "                            DIR/checkpoint.afem (--out DIR), else ./checkpoint.afem\n"
      "  --restart FILE            resume the run saved in FILE (its setup replaces the scene\n"
      "                            flags; --steps counts the steps after it)\n"
      "  --sort-every N            steps between sorts of the particles into cell order,\n"
      "                            for memory locality (default 16; 0: never)\n"
      "  --capture                 run each step as a captured step (a CUDA graph on a GPU,\n"
      "                            the recorded launch list on the CPU) over every cell;\n"
      "                            the particles come out bitwise as without it\n"
      "  --memory-report           print the pool's and the step arena's memory at the end\n"
      "  --help                    this text\n",
      program.name, program.summary, program.name, scene_flags_help(program).c_str());
}

void print_memory_report(memory::Pool& pool, memory::Arena& arena) {
  const memory::PoolStats stats = pool.stats();
  std::printf("memory: pool live %s, reserved %s, upstream allocations %llu, frees %llu\n",
              memory::format_bytes(stats.live_bytes).c_str(),
              memory::format_bytes(stats.reserved_bytes).c_str(),
              static_cast<unsigned long long>(stats.upstream_allocations),
              static_cast<unsigned long long>(stats.upstream_frees));
  std::printf("        step arena: chunks %s, peak use %s, resets %llu\n",
              memory::format_bytes(arena.stats().reserved_bytes).c_str(),
              memory::format_bytes(arena.stats().peak_used_bytes).c_str(),
              static_cast<unsigned long long>(arena.stats().generation));
  const memory::LedgerSnapshot ledger = pool.ledger();
  std::printf("        live by label (pool):\n");
  for (const memory::LedgerEntry& entry : ledger.entries) {
    if (entry.live_bytes > 0) {
      std::printf("          %-40s %12s\n", entry.label.c_str(),
                  memory::format_bytes(entry.live_bytes).c_str());
    }
  }
}

std::string checkpoint_path(const CommandLine& options) {
  return (options.out.empty() ? std::string(".") : options.out) + "/checkpoint.afem";
}

template <int D>
void run(const Setup& setup, const std::optional<Checkpoint>& resume, const CommandLine& options,
         memory::Pool& pool, memory::Arena& arena) {
  Simulation<D> simulation(setup, pool, arena);
  simulation.set_particle_sort_interval(options.sort_every);
  if (options.capture) {
    simulation.set_step_mode(StepMode::captured);
  }
  if (resume) {
    simulation.restore(*resume);
    std::printf("resumed %s at step %lld, t = %.4f s\n", options.restart.c_str(),
                static_cast<long long>(simulation.steps_taken()), simulation.time());
  }
  const Setup& kept = simulation.setup();
  const std::string name = resume ? std::string("restart") : to_string(options.scene.kind);
  std::printf("scene %s %dD: %d particles (%s), grid %d^%d, dt %.3g s, %lld steps\n", name.c_str(),
              D, simulation.particle_count(), to_string(kept.materials[0].kind).c_str(),
              kept.resolution, D, kept.dt, static_cast<long long>(options.steps));
  std::optional<FrameWriter> frames;
  if (!options.out.empty()) {
    frames.emplace(options.out, simulation.grid_mesh(),
                   options.ascii ? geometry::VtkEncoding::ascii : geometry::VtkEncoding::binary);
    frames->write(simulation);
  }
  const bool terminal = isatty(fileno(stdout)) != 0;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::int64_t last_checkpoint = -1;
  for (std::int64_t s = 1; s <= options.steps; ++s) {
    simulation.step();
    if (frames && s % options.every == 0) {
      frames->write(simulation);
    }
    if (options.checkpoint_every > 0 && simulation.steps_taken() % options.checkpoint_every == 0) {
      simulation.save_checkpoint(checkpoint_path(options));
      last_checkpoint = simulation.steps_taken();
    }
    if (terminal && (s % 10 == 0 || s == options.steps)) {
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      std::printf("\rstep %lld/%lld  t = %.4f s  %.0f steps/s", static_cast<long long>(s),
                  static_cast<long long>(options.steps), simulation.time(),
                  static_cast<double>(s) / seconds);
      if (kept.materials[0].kind == MaterialKind::incompressible_fluid) {
        const PressureSolve solve = simulation.pressure_solve();
        std::printf("  pressure CG %d iterations, divergence left %.1e", solve.iterations,
                    solve.divergence);
      }
      std::printf("   ");
      std::fflush(stdout);
    }
  }
  if (terminal) {
    std::printf("\n");
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("ran %lld steps to t = %.4f s in %.2f s: %.3g particle-steps/s\n",
              static_cast<long long>(options.steps), simulation.time(), seconds,
              static_cast<double>(options.steps) * simulation.particle_count() /
                  (seconds > 0.0 ? seconds : 1.0));
  if (frames) {
    std::printf("wrote %d frames to %s (open particles.pvd and grid.pvd in ParaView)\n",
                frames->frames_written(), frames->directory().c_str());
  }
  if (last_checkpoint >= 0) {
    std::printf("checkpoint of step %lld in %s (resume with --restart)\n",
                static_cast<long long>(last_checkpoint), checkpoint_path(options).c_str());
  }
  if (options.capture) {
    const CaptureReport captured = simulation.capture_report();
    std::printf(
        "captured steps: %llu captures (%llu recaptures), %llu replays, %llu sizing steps, "
        "%s retained\n",
        static_cast<unsigned long long>(captured.captures),
        static_cast<unsigned long long>(captured.recaptures),
        static_cast<unsigned long long>(captured.replays),
        static_cast<unsigned long long>(captured.sizing_steps),
        memory::format_bytes(captured.retained_bytes).c_str());
  }
  if (options.memory_report) {
    print_memory_report(pool, arena);
  }
}

#ifdef ARENAFEM_WITH_MPI
/// The scene over the ranks of `comm` (DistributedSimulation): rank 0 prints the serial run's
/// lines after one that names the ranks and their slabs, then what moved between the ranks.
template <int D>
void run_distributed(const Setup& setup, const CommandLine& options,
                     const memory::Communicator& comm, memory::Pool& pool, memory::Arena& arena) {
  comm.raise_if_any_failed(
      !options.out.empty() || options.checkpoint_every > 0 || !options.restart.empty() ||
              options.capture
          ? std::string("under mpirun the MPM program writes no frames or checkpoints and steps "
                        "directly: drop --out, --checkpoint-every, --restart and --capture")
          : std::string());
  DistributedSimulation<D> simulation(setup, comm, pool, arena);
  const bool root = comm.rank() == 0;
  const std::int64_t particles = simulation.particle_count();
  const Setup& kept = simulation.local().setup();
  if (root) {
    std::printf("ranks: %d (slabs of cell layers along %s:", comm.size(), D == 2 ? "y" : "z");
    for (const Slab& slab : simulation.slabs()) {
      std::printf(" %d-%d", slab.first, slab.last);
    }
    std::printf(")\nscene %s %dD: %lld particles (%s), grid %d^%d, dt %.3g s, %lld steps\n",
                to_string(options.scene.kind).c_str(), D, static_cast<long long>(particles),
                to_string(kept.materials[0].kind).c_str(), kept.resolution, D, kept.dt,
                static_cast<long long>(options.steps));
  }
  // Open MPI hands its ranks a pseudo-terminal whatever mpirun writes to: a long run prints a
  // progress line every tenth of its steps instead of rewriting one line.
  const std::int64_t progress_every = options.steps >= 1000 ? options.steps / 10 : 0;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (std::int64_t s = 1; s <= options.steps; ++s) {
    simulation.step();
    if (root && progress_every > 0 && s % progress_every == 0) {
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      std::printf("step %lld/%lld  t = %.4f s  %.0f steps/s\n", static_cast<long long>(s),
                  static_cast<long long>(options.steps), simulation.time(),
                  static_cast<double>(s) / seconds);
      std::fflush(stdout);
    }
  }
  const double seconds = comm.max(std::chrono::duration<double>(Clock::now() - start).count());
  const std::int64_t now = simulation.particle_count();
  const std::vector<std::int64_t> local = comm.all_gather(simulation.local().particle_count());
  const std::int64_t moved = comm.sum(simulation.traffic().particles_sent);
  const std::int64_t border = comm.max(simulation.traffic().border_bytes_per_step);
  const memory::PoolStats stats = pool.stats();
  const std::vector<std::int64_t> live =
      comm.all_gather(static_cast<std::int64_t>(stats.live_bytes));
  const std::vector<std::int64_t> reserved =
      comm.all_gather(static_cast<std::int64_t>(stats.reserved_bytes));
  const std::vector<std::int64_t> upstream =
      comm.all_gather(static_cast<std::int64_t>(stats.upstream_allocations));
  const std::vector<std::int64_t> frees =
      comm.all_gather(static_cast<std::int64_t>(stats.upstream_frees));
  if (!root) {
    return;
  }
  std::printf("ran %lld steps to t = %.4f s in %.2f s: %.3g particle-steps/s\n",
              static_cast<long long>(options.steps), simulation.time(), seconds,
              static_cast<double>(options.steps) * static_cast<double>(now) /
                  (seconds > 0.0 ? seconds : 1.0));
  std::printf("particles per rank:");
  for (const std::int64_t count : local) {
    std::printf(" %lld", static_cast<long long>(count));
  }
  std::printf("; %lld moved between ranks; border sums send at most %s per rank and step\n",
              static_cast<long long>(moved),
              memory::format_bytes(static_cast<std::size_t>(border)).c_str());
  if (options.memory_report) {
    for (std::size_t r = 0; r < live.size(); ++r) {
      std::printf(
          "memory: rank %zu: pool live %s, reserved %s, upstream allocations %lld, frees %lld\n", r,
          memory::format_bytes(static_cast<std::size_t>(live[r])).c_str(),
          memory::format_bytes(static_cast<std::size_t>(reserved[r])).c_str(),
          static_cast<long long>(upstream[r]), static_cast<long long>(frees[r]));
    }
  }
}
#endif

}  // namespace

int run_command_line(int argc, char** argv, const Program& program) {
#ifdef ARENAFEM_WITH_MPI
  std::optional<memory::MpiSession> mpi;
  if (memory::launched_by_mpi()) {
    mpi.emplace(argc, argv);
  }
#endif
  try {
    const std::vector<std::string_view> arguments(argv + 1, argv + argc);
    const CommandLine options = parse_command_line(arguments, program);
    if (options.help) {
      print_help(program);
      return 0;
    }
#ifdef ARENAFEM_WITH_MPI
    if (mpi) {
      const memory::Communicator comm;
      if (comm.size() > 1) {
        Setup setup;
        comm.collective([&] { setup = make_scene(options.scene); });
        memory::Pool pool(memory::device_resource(), {.name = program.name});
        memory::Arena arena(pool, {"step", 16 << 20, 0});
        if (setup.dimension == 2) {
          run_distributed<2>(setup, options, comm, pool, arena);
        } else {
          run_distributed<3>(setup, options, comm, pool, arena);
        }
        return 0;
      }
    }
#endif
    std::optional<Checkpoint> resume;
    if (!options.restart.empty()) {
      resume = read_checkpoint(options.restart);
    }
    const Setup setup = resume ? resume->setup : make_scene(options.scene);
    if (!options.out.empty() || options.checkpoint_every > 0) {
      std::filesystem::create_directories(options.out.empty() ? "." : options.out);
    }
    // A stream of its own: a captured step cannot be captured on CUDA's legacy default stream.
    const memory::OwnedStream stream(memory::device_resource().device());
    memory::Pool pool(memory::device_resource(), {.name = program.name, .stream = stream.stream()});
    memory::Arena arena(pool, {"step", 16 << 20, 0});
    if (setup.dimension == 2) {
      run<2>(setup, resume, options, pool, arena);
    } else {
      run<3>(setup, resume, options, pool, arena);
    }
    return 0;
  } catch (const std::exception& error) {
#ifdef ARENAFEM_WITH_MPI
    if (mpi) {
      return apps::report_rank_error(error, 1);
    }
#endif
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}

}  // namespace afem::apps::mpm
