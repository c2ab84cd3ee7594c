// memory_stability: runs an MPM scene for many steps and shows that its memory stays flat. The
// steps run captured (StepMode::captured, --capture) unless --direct. Every --every steps it prints
// host RSS, the pool's live and reserved bytes, the step arena's high-water mark, the upstream
// allocations since the last line, the calls to the host's malloc made inside the steps since the
// last line, and the captured step's captures, replays, recaptures and retained bytes; it writes
// the same as CSV and an SVG plot, ends with a JSON summary, and exits with 1 when, after the
// warm-up steps, any upstream allocation happened or the reserved bytes changed (on the CPU
// backend also when a step that did not capture called the host's malloc).
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "arenafem/apps/mpm/options.hpp"
#ifdef ARENAFEM_WITH_MPI
#include "arenafem/apps/common/rank_errors.hpp"
#include "arenafem/apps/mpm/distributed_simulation.hpp"
#include "arenafem/memory/communicator.hpp"
#endif
#include "arenafem/apps/mpm/scene.hpp"
#include "arenafem/apps/mpm/simulation.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/ledger.hpp"
#include "arenafem/memory/owned_stream.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"

// Calls to the host allocator, counted by interposing malloc, calloc and realloc (glibc's own
// entry points do the work). operator new goes through malloc, so it is counted too.
extern "C" {
void* __libc_malloc(std::size_t size);                     // NOLINT
void* __libc_calloc(std::size_t count, std::size_t size);  // NOLINT
void* __libc_realloc(void* pointer, std::size_t size);     // NOLINT
}

namespace {
std::atomic<std::uint64_t> malloc_calls{0};
/// Calls made while this thread is inside MPI (counted apart: MPI's allocations are its own).
std::atomic<std::uint64_t> mpi_malloc_calls{0};
thread_local int inside_mpi = 0;

void count_malloc() {
  (inside_mpi > 0 ? mpi_malloc_calls : malloc_calls).fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
// NOLINTBEGIN(cppcoreguidelines-no-malloc)
void* malloc(std::size_t size) {
  count_malloc();
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) {
  count_malloc();
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, std::size_t size) {
  count_malloc();
  return __libc_realloc(pointer, size);
}
// NOLINTEND(cppcoreguidelines-no-malloc)
}

#ifdef ARENAFEM_WITH_MPI
// The MPI calls a distributed step makes, and MPI's start, through MPI's profiling interface
// (each calls its PMPI_ twin), marking the calling thread as inside MPI meanwhile.
namespace {
template <class Call>
int in_mpi(Call&& call) {
  ++inside_mpi;
  const int code = call();
  --inside_mpi;
  return code;
}

/// What a thread that MPI starts runs: its mallocs are MPI's for its whole life.
struct MpiThreadStart {
  void* (*routine)(void*);
  void* argument;
};

/// Start records of the threads MPI creates, one slot each (MPI starts a handful); a thread
/// beyond them runs unmarked, its mallocs then counted as the program's.
std::array<MpiThreadStart, 64> mpi_thread_starts{};
std::atomic<std::size_t> mpi_threads_started{0};

void* run_as_mpi_thread(void* raw) {
  inside_mpi = 1;
  const MpiThreadStart start = *static_cast<const MpiThreadStart*>(raw);
  return start.routine(start.argument);
}
}  // namespace

extern "C" {
// Threads created from inside MPI (its progress and event threads, started in MPI_Init_thread)
// are marked as MPI's.
int pthread_create(pthread_t* thread, const pthread_attr_t* attributes, void* (*routine)(void*),
                   void* argument) {
  using Create = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const auto next =
      reinterpret_cast<Create>(dlsym(RTLD_NEXT, "pthread_create"));  // NOLINT(*-reinterpret-cast)
  const std::size_t slot =
      inside_mpi == 0 ? mpi_thread_starts.size() : mpi_threads_started.fetch_add(1);
  if (slot >= mpi_thread_starts.size()) {
    return next(thread, attributes, routine, argument);
  }
  mpi_thread_starts[slot] = {routine, argument};
  return next(thread, attributes, run_as_mpi_thread, &mpi_thread_starts[slot]);
}
int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  return in_mpi([&] { return PMPI_Init_thread(argc, argv, required, provided); });
}
int MPI_Isend(const void* buffer, int count, MPI_Datatype type, int rank, int tag, MPI_Comm comm,
              MPI_Request* request) {
  return in_mpi([&] { return PMPI_Isend(buffer, count, type, rank, tag, comm, request); });
}
int MPI_Irecv(void* buffer, int count, MPI_Datatype type, int rank, int tag, MPI_Comm comm,
              MPI_Request* request) {
  return in_mpi([&] { return PMPI_Irecv(buffer, count, type, rank, tag, comm, request); });
}
int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  return in_mpi([&] { return PMPI_Waitall(count, requests, statuses); });
}
int MPI_Alltoall(const void* send, int send_count, MPI_Datatype send_type, void* receive,
                 int receive_count, MPI_Datatype receive_type, MPI_Comm comm) {
  return in_mpi([&] {
    return PMPI_Alltoall(send, send_count, send_type, receive, receive_count, receive_type, comm);
  });
}
int MPI_Allreduce(const void* send, void* receive, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  return in_mpi([&] { return PMPI_Allreduce(send, receive, count, type, op, comm); });
}
}
#endif

namespace afem {
namespace {

struct Options {
  apps::mpm::SceneOptions scene;
  std::int64_t steps = 5000;
  std::int64_t every = 100;
  std::int64_t warmup = 10;
  std::filesystem::path out = "memory_stability";
  /// The floor opens and an emitter adds a block of particles whenever there is room.
  bool emit_drain = false;
  /// Every this many steps a block of particles is added, or the block added before removed, so
  /// that the captured step is captured anew (0: never).
  std::int64_t recapture_every = 0;
  apps::mpm::StepMode mode = apps::mpm::StepMode::captured;
  bool help = false;
};

/// One printed line.
struct Sample {
  std::int64_t step = 0;
  double host_rss = 0.0;  ///< bytes
  double pool_live = 0.0;
  double reserved = 0.0;
  double arena_high_water = 0.0;
  double capture_bytes = 0.0;              ///< retained by the captured step
  std::uint64_t upstream_allocations = 0;  ///< since the previous line
  std::uint64_t host_allocations = 0;  ///< malloc calls inside the steps since the previous line
  apps::mpm::CaptureReport captured;   ///< the captured step's counters so far
};

void print_help() {
  std::printf(
      "memory_stability: run an MPM scene and show that its memory stays flat\n\n"
      "usage: memory_stability [options]\n%s"
      "  --steps N                 time steps (default 5000)\n"
      "  --every N                 steps between lines (default 100)\n"
      "  --warmup N                steps before memory must stay flat (default 10)\n"
      "  --out DIR                 where memory.csv, memory.svg and summary.json go\n"
      "                            (default ./memory_stability)\n"
      "  --capture                 run each step captured: a CUDA graph on a GPU, the\n"
      "                            recorded launch list on the CPU (the default)\n"
      "  --direct                  run each step directly\n"
      "  --incompressible          a fluid scene's fluid made incompressible: a pressure\n"
      "                            projection (CG) each step; run it --direct\n"
      "  --emit-drain              open the floor (particles leave through it) and emit a\n"
      "                            block of particles every few steps, up to a capacity of\n"
      "                            1.5 times the scene's count\n"
      "  --recapture-every N       every N steps add a block of particles, or remove the one\n"
      "                            added before: the particle count changes, and the\n"
      "                            captured step is captured anew\n"
      "  --help                    this text\n\n"
      "Exit status 1 when, after the warm-up, an upstream allocation happened or the pool's\n"
      "reserved bytes changed (on the CPU backend also when a step that did not capture\n"
      "called the host's malloc).\n",
      apps::mpm::scene_flags_help(apps::mpm::Program{.name = "memory_stability"}).c_str());
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      options.help = true;
      continue;
    }
    if (flag == "--emit-drain") {
      options.emit_drain = true;
      continue;
    }
    if (flag == "--incompressible") {
      options.scene.incompressible = true;
      continue;
    }
    if (flag == "--capture" || flag == "--direct") {
      options.mode =
          flag == "--capture" ? apps::mpm::StepMode::captured : apps::mpm::StepMode::direct;
      continue;
    }
    if (i + 1 >= argc) {
      throw Error("memory_stability: " + std::string(flag) + " needs a value (see --help)");
    }
    const std::string_view value = argv[++i];
    if (apps::mpm::parse_scene_flag(flag, value, options.scene)) {
      continue;
    }
    if (flag == "--steps") {
      options.steps = apps::parse_integer(flag, value, 1, std::int64_t{1} << 40);
    } else if (flag == "--every") {
      options.every = apps::parse_integer(flag, value, 1, std::int64_t{1} << 40);
    } else if (flag == "--warmup") {
      options.warmup = apps::parse_integer(flag, value, 1, std::int64_t{1} << 40);
    } else if (flag == "--out") {
      options.out = std::string(value);
    } else if (flag == "--recapture-every") {
      options.recapture_every = apps::parse_integer(flag, value, 1, std::int64_t{1} << 40);
    } else {
      throw Error("memory_stability: unknown option '" + std::string(flag) + "' (see --help)");
    }
  }
  if (options.emit_drain && options.recapture_every > 0) {
    throw Error(
        "memory_stability: --emit-drain and --recapture-every change the particles each "
        "their own way; give one of them");
  }
  if (options.warmup >= options.steps) {
    throw Error("memory_stability: --warmup " + std::to_string(options.warmup) +
                " leaves no steps to measure of --steps " + std::to_string(options.steps));
  }
  return options;
}

/// Resident set size of this process in bytes (0 where /proc is missing).
double host_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  long long total = 0;
  long long resident = 0;
  statm >> total >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double mib(double bytes) {
  return bytes / (1024.0 * 1024.0);
}

/// Memory over steps as an SVG line chart (MiB against step), one line per series.
void write_svg(const std::filesystem::path& file, const std::vector<Sample>& samples,
               std::int64_t warmup, const std::string& title) {
  struct Series {
    const char* name;
    const char* color;
    double Sample::*value;
  };
  const Series series[] = {{"host RSS", "#1f77b4", &Sample::host_rss},
                           {"pool reserved", "#d62728", &Sample::reserved},
                           {"pool live", "#2ca02c", &Sample::pool_live},
                           {"arena high water", "#ff7f0e", &Sample::arena_high_water},
                           {"captured step", "#9467bd", &Sample::capture_bytes}};
  const double width = 800;
  const double height = 420;
  const double left = 70;
  const double right = 190;
  const double top = 40;
  const double bottom = 50;
  double top_value = 1.0;
  for (const Sample& s : samples) {
    for (const Series& line : series) {
      top_value = std::max(top_value, mib(s.*line.value));
    }
  }
  top_value *= 1.15;
  const double last_step = static_cast<double>(std::max<std::int64_t>(samples.back().step, 1));
  const auto x_of = [&](double step) { return left + (width - left - right) * step / last_step; };
  const auto y_of = [&](double value) {
    return top + (height - top - bottom) * (1.0 - value / top_value);
  };
  std::ofstream out(file);
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << left << "\" y=\"22\" font-size=\"15\">" << title << "</text>\n";
  for (int tick = 0; tick <= 4; ++tick) {
    const double value = top_value * tick / 4.0;
    out << "<line x1=\"" << left << "\" x2=\"" << width - right << "\" y1=\"" << y_of(value)
        << "\" y2=\"" << y_of(value) << "\" stroke=\"#ddd\"/>\n"
        << "<text x=\"" << left - 8 << "\" y=\"" << y_of(value) + 4 << "\" text-anchor=\"end\">"
        << std::round(value * 10.0) / 10.0 << "</text>\n";
  }
  out << "<text x=\"18\" y=\"" << (top + height - bottom) / 2 << "\" transform=\"rotate(-90 18 "
      << (top + height - bottom) / 2 << ")\" text-anchor=\"middle\">MiB</text>\n"
      << "<text x=\"" << (left + width - right) / 2 << "\" y=\"" << height - 12
      << "\" text-anchor=\"middle\">step (warm-up: first " << warmup << ")</text>\n"
      << "<text x=\"" << left << "\" y=\"" << height - bottom + 16 << "\">0</text>\n"
      << "<text x=\"" << width - right << "\" y=\"" << height - bottom + 16
      << "\" text-anchor=\"end\">" << samples.back().step << "</text>\n";
  int row = 0;
  for (const Series& line : series) {
    out << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << line.color << "\" points=\"";
    for (const Sample& s : samples) {
      out << x_of(static_cast<double>(s.step)) << ',' << y_of(mib(s.*line.value)) << ' ';
    }
    const double y = top + 10 + 20 * row++;
    out << "\"/>\n<line x1=\"" << width - right + 15 << "\" x2=\"" << width - right + 40
        << "\" y1=\"" << y << "\" y2=\"" << y << "\" stroke-width=\"2\" stroke=\"" << line.color
        << "\"/>\n<text x=\"" << width - right + 46 << "\" y=\"" << y + 4 << "\">" << line.name
        << "</text>\n";
  }
  // The captured step's counters at the end of the run, under the legend.
  const apps::mpm::CaptureReport& captured = samples.back().captured;
  const double y = top + 20 + 20 * row;
  out << "<text x=\"" << width - right + 15 << "\" y=\"" << y << "\">captures " << captured.captures
      << "</text>\n<text x=\"" << width - right + 15 << "\" y=\"" << y + 18 << "\">recaptures "
      << captured.recaptures << "</text>\n<text x=\"" << width - right + 15 << "\" y=\"" << y + 36
      << "\">replays " << captured.replays << "</text>\n";
  out << "</svg>\n";
  if (!out) {
    throw Error("memory_stability: cannot write " + file.string());
  }
}

/// A block of particles high in the box, falling at 1 m/s, a tenth of the box wide and as high
/// as it moves in `period` steps, on the lattice of the scene's particles.
apps::mpm::ParticleBatch emitter_block(const apps::mpm::Setup& setup, int particles_per_cell,
                                       std::int64_t period) {
  const int dim = setup.dimension;
  const double spacing = setup.cell_size() / particles_per_cell;
  const double speed = 1.0;
  const double height = std::max(spacing, speed * setup.time_step() * static_cast<double>(period));
  apps::mpm::ParticleBatch block;
  const auto rows = static_cast<int>(std::ceil(height / spacing));
  const auto across = static_cast<int>(std::ceil(0.1 * setup.extent[0] / spacing));
  const int depth = dim == 3 ? across : 1;
  for (int k = 0; k < depth; ++k) {
    for (int j = 0; j < rows; ++j) {
      for (int i = 0; i < across; ++i) {
        const double x[3] = {0.45 + (i + 0.5) * spacing, 0.85 - (j + 0.5) * spacing,
                             0.45 + (k + 0.5) * spacing};
        for (int d = 0; d < dim; ++d) {
          block.positions.push_back(setup.origin[static_cast<std::size_t>(d)] +
                                    x[d] * setup.extent[static_cast<std::size_t>(d)]);
          block.velocities.push_back(d == 1 ? -speed : 0.0);
        }
        block.volumes.push_back(std::pow(spacing, dim));
      }
    }
  }
  return block;
}

/// What memory_stability watches after the warm-up: the pool's upstream allocations and frees
/// since the warm-up's last step, the range of its reserved bytes from then on, and the time.
struct AfterWarmup {
  std::uint64_t warm_allocations = 0;
  std::uint64_t warm_frees = 0;
  std::size_t reserved_min = 0;
  std::size_t reserved_max = 0;
  std::chrono::steady_clock::time_point start;

  /// Called after every step; returns whether `step` ended the warm-up.
  bool after_step(std::int64_t step, std::int64_t warmup, const memory::PoolStats& stats) {
    if (step == warmup) {
      warm_allocations = stats.upstream_allocations;
      warm_frees = stats.upstream_frees;
      reserved_min = reserved_max = stats.reserved_bytes;
      start = std::chrono::steady_clock::now();
      return true;
    }
    if (step > warmup) {
      reserved_min = std::min(reserved_min, stats.reserved_bytes);
      reserved_max = std::max(reserved_max, stats.reserved_bytes);
    }
    return false;
  }
  [[nodiscard]] std::uint64_t allocations(const memory::PoolStats& stats) const {
    return stats.upstream_allocations - warm_allocations;
  }
  [[nodiscard]] std::uint64_t frees(const memory::PoolStats& stats) const {
    return stats.upstream_frees - warm_frees;
  }
  [[nodiscard]] double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

template <int D>
int run(const Options& options) {
  apps::mpm::Setup scene = apps::mpm::make_scene(options.scene);
  constexpr std::int64_t emit_period = 20;
  apps::mpm::ParticleBatch block;
  const auto base_count = static_cast<std::int32_t>(scene.particles.count());
  if (options.emit_drain) {
    scene.boundaries[static_cast<std::size_t>(apps::mpm::Face::y_low)] = apps::mpm::Boundary::open;
    scene.capacity = scene.particles.count() * 3 / 2;
    block = emitter_block(scene, options.scene.particles_per_cell, emit_period);
  } else if (options.recapture_every > 0) {
    block = emitter_block(scene, options.scene.particles_per_cell, options.recapture_every);
    scene.capacity = scene.particles.count() + block.count();
  }
  const memory::OwnedStream stream(memory::device_resource().device());
  memory::Pool pool(memory::device_resource(), {.name = "mpm", .stream = stream.stream()});
  memory::Arena arena(pool, {"step", 16 << 20, 0});
  apps::mpm::Simulation<D> simulation(scene, pool, arena);
  simulation.set_step_mode(options.mode);
  // --recapture-every: the flags that remove the block added last.
  memory::Temporary<std::uint8_t> remove_block;
  if (options.recapture_every > 0) {
    const auto capacity = static_cast<std::size_t>(simulation.capacity());
    std::vector<std::uint8_t> flags(capacity, 0);
    std::fill(flags.begin() + base_count, flags.end(), std::uint8_t{1});
    memory::replace_owned(remove_block, memory::borrow_temporary<std::uint8_t>(
                                            pool, capacity, "memory_stability.remove"));
    memory::copy_to_device(remove_block.view(), std::span<const std::uint8_t>(flags),
                           pool.stream());
    pool.stream().synchronize();
  }
  std::filesystem::create_directories(options.out);
  const bool captured = options.mode == apps::mpm::StepMode::captured;
  const std::string scene_name = apps::mpm::to_string(options.scene.kind) +
                                 (options.emit_drain ? " (emit and drain)" : "") +
                                 (options.recapture_every > 0 ? " (block added and removed)" : "") +
                                 (captured ? ", captured" : ", direct");
  std::printf(
      "memory_stability: scene %s %dD, %d particles, grid %d^%d, %lld steps, warm-up %lld\n",
      scene_name.c_str(), D, simulation.particle_count(), scene.resolution, D,
      static_cast<long long>(options.steps), static_cast<long long>(options.warmup));
  std::int64_t emitted = 0;
  std::int32_t fewest = simulation.particle_count();
  std::int32_t most = fewest;

  std::vector<Sample> samples;
  samples.reserve(static_cast<std::size_t>(options.steps / options.every) + 2);
  std::uint64_t step_allocations = 0;     // malloc calls inside simulation.step()
  std::uint64_t capture_allocations = 0;  // the same in steps that captured or sized a capture
  std::uint64_t last_step_allocations = 0;
  std::uint64_t warm_step_allocations = 0;
  std::uint64_t last_upstream = pool.stats().upstream_allocations;
  AfterWarmup watch;
  double warm_rss = 0.0;
  const auto record = [&](std::int64_t step) {
    const memory::PoolStats stats = pool.stats();
    Sample s;
    s.step = step;
    s.host_rss = host_rss_bytes();
    s.pool_live = static_cast<double>(stats.live_bytes);
    s.reserved = static_cast<double>(stats.reserved_bytes);
    s.arena_high_water = static_cast<double>(arena.stats().peak_used_bytes);
    s.upstream_allocations = stats.upstream_allocations - last_upstream;
    last_upstream = stats.upstream_allocations;
    s.host_allocations = step_allocations - last_step_allocations;
    last_step_allocations = step_allocations;
    s.captured = simulation.capture_report();
    s.capture_bytes = static_cast<double>(s.captured.retained_bytes);
    samples.push_back(s);
    std::printf(
        "step %lld host_rss=%.2f MiB pool_live=%.2f MiB reserved=%.2f MiB arena_hw=%.2f "
        "MiB upstream_allocs=+%llu host_mallocs=+%llu captures=%llu replays=%llu "
        "recaptures=%llu capture_bytes=%.2f MiB\n",
        static_cast<long long>(step), mib(s.host_rss), mib(s.pool_live), mib(s.reserved),
        mib(s.arena_high_water), static_cast<unsigned long long>(s.upstream_allocations),
        static_cast<unsigned long long>(s.host_allocations),
        static_cast<unsigned long long>(s.captured.captures),
        static_cast<unsigned long long>(s.captured.replays),
        static_cast<unsigned long long>(s.captured.recaptures), mib(s.capture_bytes));
    std::fflush(stdout);
  };

  record(0);
  for (std::int64_t step = 1; step <= options.steps; ++step) {
    const std::uint64_t before = malloc_calls.load(std::memory_order_relaxed);
    if (options.emit_drain && step % emit_period == 0 &&
        simulation.particle_count() + block.count() <= simulation.capacity()) {
      simulation.add_particles(block);
      emitted += block.count();
    }
    if (options.recapture_every > 0 && step % options.recapture_every == 0) {
      if (simulation.particle_count() == base_count) {
        simulation.add_particles(block);
      } else {
        simulation.remove_particles(remove_block.view());
      }
    }
    const apps::mpm::CaptureReport captured_before = simulation.capture_report();
    simulation.step();
    const apps::mpm::CaptureReport captured_after = simulation.capture_report();
    // A capture (or the direct step that sizes one) builds its recording on the host.
    const bool capturing = captured_after.captures != captured_before.captures ||
                           captured_after.sizing_steps != captured_before.sizing_steps;
    (capturing ? capture_allocations : step_allocations) +=
        malloc_calls.load(std::memory_order_relaxed) - before;
    fewest = std::min(fewest, simulation.particle_count());
    most = std::max(most, simulation.particle_count());
    if (watch.after_step(step, options.warmup, pool.stats())) {
      warm_step_allocations = step_allocations;
      warm_rss = host_rss_bytes();
    }
    if (step % options.every == 0 || step == options.steps) {
      record(step);
    }
  }
  const double seconds = watch.seconds();
  const memory::PoolStats stats = pool.stats();
  const std::uint64_t allocations = watch.allocations(stats);
  const std::uint64_t frees = watch.frees(stats);
  const std::size_t reserved_min = watch.reserved_min;
  const std::size_t reserved_max = watch.reserved_max;
  const std::uint64_t mallocs = step_allocations - warm_step_allocations;
  // On the CPU backend a step calls no host allocator either (on CUDA the runtime may).
  const bool flat = allocations == 0 && frees == 0 && reserved_min == reserved_max &&
                    (afem::has_cuda || mallocs == 0);

  {
    std::ofstream csv(options.out / "memory.csv");
    csv << "step,host_rss_bytes,pool_live_bytes,reserved_bytes,arena_high_water_bytes,"
           "upstream_allocations,host_mallocs_in_steps,captures,replays,recaptures,"
           "capture_retained_bytes\n";
    for (const Sample& s : samples) {
      csv << s.step << ',' << static_cast<long long>(s.host_rss) << ','
          << static_cast<long long>(s.pool_live) << ',' << static_cast<long long>(s.reserved) << ','
          << static_cast<long long>(s.arena_high_water) << ',' << s.upstream_allocations << ','
          << s.host_allocations << ',' << s.captured.captures << ',' << s.captured.replays << ','
          << s.captured.recaptures << ',' << s.captured.retained_bytes << '\n';
    }
  }
  write_svg(options.out / "memory.svg", samples, options.warmup,
            "arenafem MPM " + scene_name + " " + std::to_string(D) + "D, " +
                std::to_string(simulation.particle_count()) + " particles: memory per step");

  const memory::LedgerSnapshot ledger = pool.ledger();
  std::string json = "{\n";
  const auto field = [&json](const std::string& name, const std::string& value) {
    json += "  \"" + name + "\": " + value + ",\n";
  };
  field("scene", "\"" + scene_name + "\"");
  field("dimension", std::to_string(D));
  field("particles", std::to_string(simulation.particle_count()));
  if (options.emit_drain) {
    field("particles_emitted", std::to_string(emitted));
    field("particles_drained", std::to_string(simulation.particles_left()));
    field("particles_fewest", std::to_string(fewest));
    field("particles_most", std::to_string(most));
    field("capacity", std::to_string(simulation.capacity()));
  }
  if (options.recapture_every > 0) {
    field("particle_count_changes", std::to_string(options.steps / options.recapture_every));
  }
  const apps::mpm::CaptureReport report = simulation.capture_report();
  field("step_mode", captured ? "\"captured\"" : "\"direct\"");
  field("captures", std::to_string(report.captures));
  field("recaptures", std::to_string(report.recaptures));
  field("replays", std::to_string(report.replays));
  field("sizing_steps", std::to_string(report.sizing_steps));
  field("capture_retained_bytes", std::to_string(report.retained_bytes));
  field("host_mallocs_in_captures", std::to_string(capture_allocations));
  field("steps", std::to_string(options.steps));
  field("warmup_steps", std::to_string(options.warmup));
  field("upstream_allocations_after_warmup", std::to_string(allocations));
  field("upstream_frees_after_warmup", std::to_string(frees));
  field("host_mallocs_in_steps_after_warmup", std::to_string(mallocs));
  field("reserved_bytes_min_after_warmup", std::to_string(reserved_min));
  field("reserved_bytes_max_after_warmup", std::to_string(reserved_max));
  field("host_rss_growth_bytes",
        std::to_string(static_cast<long long>(host_rss_bytes() - warm_rss)));
  field("steps_per_second",
        std::to_string(static_cast<double>(options.steps - options.warmup) / seconds));
  json += "  \"live_bytes_by_label\": {";
  bool first = true;
  for (const memory::LedgerEntry& entry : ledger.entries) {
    if (entry.live_bytes > 0) {
      json += std::string(first ? "\n" : ",\n") + "    \"" + entry.label +
              "\": " + std::to_string(entry.live_bytes);
      first = false;
    }
  }
  json += "\n  },\n  \"flat\": " + std::string(flat ? "true" : "false") + "\n}\n";
  std::ofstream(options.out / "summary.json") << json;
  std::printf("%s", json.c_str());
  std::printf("wrote %s, %s and %s\n", (options.out / "memory.csv").c_str(),
              (options.out / "memory.svg").c_str(), (options.out / "summary.json").c_str());
  if (!flat) {
    std::fprintf(stderr,
                 "memory_stability: memory moved after the warm-up: %llu upstream allocations, "
                 "%llu frees, reserved %zu..%zu bytes, %llu host mallocs in steps\n",
                 static_cast<unsigned long long>(allocations),
                 static_cast<unsigned long long>(frees), reserved_min, reserved_max,
                 static_cast<unsigned long long>(mallocs));
    return 1;
  }
  std::printf(
      "memory is flat: no upstream allocation%s and constant reserved bytes after step "
      "%lld\n",
      afem::has_cuda ? "" : ", no host malloc in a step", static_cast<long long>(options.warmup));
  return 0;
}

#ifdef ARENAFEM_WITH_MPI
/// The scene over the ranks of `comm` (DistributedSimulation, direct steps): every rank measures
/// its own pool, arena and host allocator; rank 0 prints each line with every rank's figures and
/// writes the CSV (one row per rank and line) and the summary. Exit status 1 on every rank when
/// memory moved on any rank after the warm-up (upstream allocations, reserved bytes, or malloc
/// calls in a step outside MPI; those inside MPI are MPI's and reported apart).
template <int D>
int run_distributed(const Options& options, const memory::Communicator& comm) {
  AFEM_EXPECTS(options.mode == apps::mpm::StepMode::direct,
               "memory_stability: a run over MPI ranks steps directly (a captured step cannot "
               "exchange messages); give --direct");
  AFEM_EXPECTS(!options.emit_drain && options.recapture_every == 0,
               "memory_stability: --emit-drain and --recapture-every run on one process");
  const apps::mpm::Setup scene = apps::mpm::make_scene(options.scene);
  memory::Pool pool(memory::device_resource(), {.name = "mpm"});
  memory::Arena arena(pool, {"step", 16 << 20, 0});
  apps::mpm::DistributedSimulation<D> simulation(scene, comm, pool, arena);
  const bool root = comm.rank() == 0;
  const std::int64_t particles = simulation.particle_count();
  if (root) {
    std::printf("memory_stability: scene %s %dD over %d ranks (slabs of cell layers along %s:",
                apps::mpm::to_string(options.scene.kind).c_str(), D, comm.size(),
                D == 2 ? "y" : "z");
    for (const apps::mpm::Slab& slab : simulation.slabs()) {
      std::printf(" %d-%d", slab.first, slab.last);
    }
    std::printf("), %lld particles, grid %d^%d, %lld steps, warm-up %lld, direct\n",
                static_cast<long long>(particles), scene.resolution, D,
                static_cast<long long>(options.steps), static_cast<long long>(options.warmup));
  }
  std::filesystem::create_directories(options.out);
  std::ofstream csv;
  if (root) {
    csv.open(options.out / "memory.csv");
    csv << "step,rank,particles,host_rss_bytes,pool_live_bytes,reserved_bytes,"
           "arena_high_water_bytes,upstream_allocations,host_mallocs_in_steps,"
           "mpi_mallocs_in_steps\n";
  }
  std::uint64_t step_mallocs = 0;
  std::uint64_t step_mpi_mallocs = 0;
  std::uint64_t last_upstream = pool.stats().upstream_allocations;
  std::uint64_t last_mallocs = 0;
  std::uint64_t last_mpi_mallocs = 0;
  AfterWarmup watch;
  std::uint64_t warm_mallocs = 0;
  std::uint64_t warm_mpi_mallocs = 0;
  // Every rank's value of `value` as text: "a/b/c".
  const auto per_rank = [&comm](std::int64_t value) {
    std::string text;
    for (const std::int64_t v : comm.all_gather(value)) {
      if (!text.empty()) {
        text += '/';
      }
      text += std::to_string(v);
    }
    return text;
  };
  const auto record = [&](std::int64_t step) {
    const memory::PoolStats stats = pool.stats();
    const std::vector<std::int64_t> row = {
        step,
        simulation.local().particle_count(),
        static_cast<std::int64_t>(host_rss_bytes()),
        static_cast<std::int64_t>(stats.live_bytes),
        static_cast<std::int64_t>(stats.reserved_bytes),
        static_cast<std::int64_t>(arena.stats().peak_used_bytes),
        static_cast<std::int64_t>(stats.upstream_allocations - last_upstream),
        static_cast<std::int64_t>(step_mallocs - last_mallocs),
        static_cast<std::int64_t>(step_mpi_mallocs - last_mpi_mallocs)};
    last_upstream = stats.upstream_allocations;
    last_mallocs = step_mallocs;
    last_mpi_mallocs = step_mpi_mallocs;
    std::vector<std::vector<std::int64_t>> columns;
    columns.reserve(row.size());
    for (const std::int64_t value : row) {
      columns.push_back(comm.all_gather(value));
    }
    if (!root) {
      return;
    }
    for (int r = 0; r < comm.size(); ++r) {
      csv << step << ',' << r;
      for (std::size_t c = 1; c < columns.size(); ++c) {
        csv << ',' << columns[c][static_cast<std::size_t>(r)];
      }
      csv << '\n';
    }
    const auto ranks = [&columns](std::size_t c, bool in_mib) {
      std::string text;
      for (const std::int64_t v : columns[c]) {
        char value[32];
        if (in_mib) {
          std::snprintf(value, sizeof value, "%.2f", mib(static_cast<double>(v)));
        } else {
          std::snprintf(value, sizeof value, "%lld", static_cast<long long>(v));
        }
        if (!text.empty()) {
          text += '/';
        }
        text += value;
      }
      return text;
    };
    std::printf(
        "step %lld particles=%s host_rss=%s MiB pool_live=%s MiB reserved=%s MiB "
        "upstream_allocs=+%s host_mallocs=+%s mpi_mallocs=+%s\n",
        static_cast<long long>(step), ranks(1, false).c_str(), ranks(2, true).c_str(),
        ranks(3, true).c_str(), ranks(4, true).c_str(), ranks(6, false).c_str(),
        ranks(7, false).c_str(), ranks(8, false).c_str());
    std::fflush(stdout);
  };
  record(0);
  for (std::int64_t step = 1; step <= options.steps; ++step) {
    const std::uint64_t before = malloc_calls.load(std::memory_order_relaxed);
    const std::uint64_t before_mpi = mpi_malloc_calls.load(std::memory_order_relaxed);
    simulation.step();
    step_mallocs += malloc_calls.load(std::memory_order_relaxed) - before;
    step_mpi_mallocs += mpi_malloc_calls.load(std::memory_order_relaxed) - before_mpi;
    if (watch.after_step(step, options.warmup, pool.stats())) {
      warm_mallocs = step_mallocs;
      warm_mpi_mallocs = step_mpi_mallocs;
    }
    if (step % options.every == 0 || step == options.steps) {
      record(step);
    }
  }
  const double seconds = watch.seconds();
  const memory::PoolStats stats = pool.stats();
  const auto upstream = static_cast<std::int64_t>(watch.allocations(stats));
  const auto frees = static_cast<std::int64_t>(watch.frees(stats));
  const auto mallocs = static_cast<std::int64_t>(step_mallocs - warm_mallocs);
  const auto mpi_mallocs = static_cast<std::int64_t>(step_mpi_mallocs - warm_mpi_mallocs);
  const auto reserved_change = static_cast<std::int64_t>(watch.reserved_max - watch.reserved_min);
  const bool flat = upstream == 0 && frees == 0 && reserved_change == 0 && mallocs == 0;
  const std::int64_t flat_ranks = comm.sum(std::int64_t{flat ? 1 : 0});
  const apps::mpm::TrafficReport traffic = simulation.traffic();
  const std::string json =
      "{\n  \"scene\": \"" + apps::mpm::to_string(options.scene.kind) + "\",\n" +
      "  \"dimension\": " + std::to_string(D) + ",\n  \"ranks\": " + std::to_string(comm.size()) +
      ",\n  \"particles\": " + std::to_string(simulation.particle_count()) +
      ",\n  \"step_mode\": \"direct\",\n" + "  \"steps\": " + std::to_string(options.steps) +
      ",\n  \"warmup_steps\": " + std::to_string(options.warmup) +
      ",\n  \"per_rank\": {\n    \"particles\": \"" +
      per_rank(simulation.local().particle_count()) +
      "\",\n    \"upstream_allocations_after_warmup\": \"" + per_rank(upstream) +
      "\",\n    \"upstream_frees_after_warmup\": \"" + per_rank(frees) +
      "\",\n    \"reserved_bytes_change_after_warmup\": \"" + per_rank(reserved_change) +
      "\",\n    \"host_mallocs_in_steps_after_warmup\": \"" + per_rank(mallocs) +
      "\",\n    \"mpi_mallocs_in_steps_after_warmup\": \"" + per_rank(mpi_mallocs) +
      "\",\n    \"particles_sent\": \"" + per_rank(traffic.particles_sent) +
      "\",\n    \"border_bytes_per_step\": \"" + per_rank(traffic.border_bytes_per_step) +
      "\"\n  },\n  \"steps_per_second\": " +
      std::to_string(static_cast<double>(options.steps - options.warmup) / seconds) +
      ",\n  \"flat\": " + (flat_ranks == comm.size() ? "true" : "false") + "\n}\n";
  if (root) {
    std::ofstream(options.out / "summary.json") << json;
    std::printf("%s", json.c_str());
    std::printf("wrote %s and %s\n", (options.out / "memory.csv").c_str(),
                (options.out / "summary.json").c_str());
  }
  if (flat_ranks != comm.size()) {
    if (!flat) {
      std::fprintf(stderr,
                   "memory_stability: rank %d: memory moved after the warm-up: %lld upstream "
                   "allocations, %lld frees, reserved bytes changed by %lld, %lld host mallocs in "
                   "steps\n",
                   comm.rank(), static_cast<long long>(upstream), static_cast<long long>(frees),
                   static_cast<long long>(reserved_change), static_cast<long long>(mallocs));
    }
    return 1;
  }
  if (root) {
    std::printf(
        "memory is flat on every rank: no upstream allocation, constant reserved bytes and no "
        "host malloc outside MPI in a step after step %lld\n",
        static_cast<long long>(options.warmup));
  }
  return 0;
}
#endif

}  // namespace
}  // namespace afem

int main(int argc, char** argv) {
  using namespace afem;
#ifdef ARENAFEM_WITH_MPI
  std::optional<memory::MpiSession> mpi;
  if (memory::launched_by_mpi()) {
    mpi.emplace(argc, argv);
  }
#endif
  try {
    const Options options = parse(argc, argv);
    if (options.help) {
      print_help();
      return 0;
    }
#ifdef ARENAFEM_WITH_MPI
    if (mpi) {
      const memory::Communicator comm;
      if (comm.size() > 1) {
        return options.scene.dimension == 2 ? run_distributed<2>(options, comm)
                                            : run_distributed<3>(options, comm);
      }
    }
#endif
    return options.scene.dimension == 2 ? run<2>(options) : run<3>(options);
  } catch (const std::exception& error) {
#ifdef ARENAFEM_WITH_MPI
    if (mpi) {
      return apps::report_rank_error(error, 2);
    }
#endif
    std::fprintf(stderr, "%s\n", error.what());
    return 2;
  }
}
