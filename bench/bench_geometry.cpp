/// @file
/// Speed and allocation behaviour of the backend meshes (CPU backend: Thrust on OpenMP):
///
///   BM_TopologyHex  Hexmesh::rebuild_topology of a 100 x 100 x 100 box (1 000 000 hexahedra)
///   BM_TopologyTet  Tetmesh::rebuild_topology of a 55 x 55 x 55 box (6 tets per grid cube:
///                   998 250 tetrahedra)
///   BM_LookupTet    Tetmesh::lookup of 1 000 000 points in that tet mesh
///   BM_LookupHex    Hexmesh::lookup of 1 000 000 points in that hex mesh
///
/// Every mesh is the box [0, 1]^3 from box_mesh. Each benchmark has its own Pool, Arena (the
/// per-step scratch, reset by an ArenaScope after each iteration) and mesh, built on its first run,
/// outside the timing, and kept until the program ends, so repetitions do not build them again.
/// The setup also runs the measured call once, so that the pool and the arena already hold every
/// block an iteration needs. One iteration is one rebuild, or one lookup of all points. The lookup
/// points (fixed seed) lie in the pool's memory: 95 % uniform in the box, 5 % uniform in
/// [-0.5, 1.5]^3 outside it; the result buffers (cell, reference coordinates) are pool memory
/// borrowed once.
///
/// Reported (times are wall-clock: the work runs on all OpenMP threads): items_per_second, cells
/// per second for a rebuild and points per second for a lookup; `upstream_allocs_per_rebuild` /
/// `upstream_allocs_per_lookup`, the pool's upstream allocations during the timed loop per
/// iteration (0 means no call to the system allocator once warm); `found_fraction`, the share of
/// lookup points found in a cell (about 0.95); `reserved_MiB`, what the pool holds from upstream
/// (mesh buffers, arena chunks, points and results) at the end.
///
/// Building a 1M-cell mesh (host validation, topology, lookup bins) takes a few seconds; each
/// benchmark then runs for at least 2 s (one iteration when a single one takes longer), so the
/// whole binary takes about a minute on two cores. Run (the CPU is shared and noisy: use
/// repetitions and compare medians):
///
///   build/release/bench/bench_geometry --benchmark_repetitions=5
///       --benchmark_report_aggregates_only=true   (one line)
///
/// Add --benchmark_filter=Lookup to run a subset, --benchmark_format=json for scripts.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/temporary.hpp"

namespace {

namespace geo = afem::geometry;
namespace mem = afem::memory;

constexpr std::int32_t hex_resolution = 100;  // 100^3 = 1 000 000 hexahedra
constexpr std::int32_t tet_resolution = 55;   // 6 * 55^3 = 998 250 tetrahedra
constexpr std::size_t point_count = 1'000'000;
constexpr double outside_fraction = 0.05;
constexpr std::uint64_t point_seed = 0x5eed'6e0e'afe3'0002ULL;
constexpr int dim = 3;
constexpr std::size_t point_values = point_count * dim;  // coordinates of all points
constexpr double mebibyte = 1024.0 * 1024.0;
constexpr double min_seconds = 2.0;  // per benchmark run, after its setup

constexpr std::int32_t resolution(geo::CellType type) {
  return type == geo::CellType::hexahedron ? hex_resolution : tet_resolution;
}

/// The host form of the box mesh of `Type`, generated once per process.
template <geo::CellType Type>
const geo::MeshData& box_data() {
  static const geo::MeshData data = [] {
    const std::int32_t n = resolution(Type);
    return geo::box_mesh(Type, {n, n, n}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0});
  }();
  return data;
}

/// The lookup points on the host, generated once per process: `dim` values per point.
const std::vector<double>& lookup_points() {
  static const std::vector<double> points = [] {
    std::mt19937_64 rng(point_seed);
    std::uniform_real_distribution<double> inside(0.0, 1.0);
    std::uniform_real_distribution<double> around(-0.5, 1.5);
    std::bernoulli_distribution is_outside(outside_fraction);
    std::vector<double> values;
    values.reserve(point_values);
    for (std::size_t p = 0; p < point_count; ++p) {
      std::array<double, dim> x{};
      if (is_outside(rng)) {
        bool in_box = true;
        while (in_box) {  // rejection: a point of [-0.5, 1.5]^3 outside [0, 1]^3
          in_box = true;
          for (double& value : x) {
            value = around(rng);
            in_box = in_box && value >= 0.0 && value <= 1.0;
          }
        }
      } else {
        for (double& value : x) {
          value = inside(rng);
        }
      }
      values.insert(values.end(), x.begin(), x.end());
    }
    return values;
  }();
  return points;
}

/// One Pool, one Arena over it and a box mesh in the pool's memory.
template <geo::CellType Type>
struct MeshSetup {
  mem::Pool pool{mem::device_resource(), mem::PoolOptions{.name = "bench.geometry", .stream = {}}};
  mem::Arena arena{pool, mem::ArenaOptions{.name = "bench.geometry.scratch",
                                           .chunk_bytes = std::size_t{4} << 20,
                                           .capacity_bytes = 0}};
  geo::Mesh<Type> mesh{box_data<Type>(), pool, arena};
};

/// The setup of BM_Topology*: a mesh whose topology was rebuilt once (the pool now holds the
/// blocks of both the old and the new buffers).
template <geo::CellType Type>
struct TopologySetup : MeshSetup<Type> {
  TopologySetup() {
    this->mesh.rebuild_topology(this->arena);
    this->arena.reset();
  }
};

/// The setup of BM_Lookup*: points and result buffers in the pool's memory, looked up once.
template <geo::CellType Type>
struct LookupSetup : MeshSetup<Type> {
  mem::Temporary<double> points =
      mem::borrow_temporary<double>(this->pool, point_values, "bench.points");
  mem::Temporary<std::int32_t> cells =
      mem::borrow_temporary<std::int32_t>(this->pool, point_count, "bench.cells");
  mem::Temporary<double> coords =
      mem::borrow_temporary<double>(this->pool, point_values, "bench.coords");

  LookupSetup() {
    mem::copy_to_device(points.view(), std::span<const double>(lookup_points()),
                        this->pool.stream());
    this->mesh.lookup(points.view(), result(), this->arena);
    this->arena.reset();
  }
  [[nodiscard]] geo::LookupResult result() { return {cells.view(), coords.view()}; }
};

/// The setup of one benchmark, built on its first run and kept (for MinTime's runs and for
/// repetitions) until the program ends.
template <class Setup>
Setup& setup_of() {
  static Setup setup;
  return setup;
}

/// A counter shown as its total over the timed loop divided by the number of iterations.
benchmark::Counter per_iteration(std::uint64_t total) {
  return benchmark::Counter(static_cast<double>(total), benchmark::Counter::kAvgIterations);
}

double reserved_mib(const mem::Pool& pool) {
  return static_cast<double>(pool.stats().reserved_bytes) / mebibyte;
}

// ---------------------------------------------------------------------------------------------

template <geo::CellType Type>
void run_topology(benchmark::State& state) {
  auto& setup = setup_of<TopologySetup<Type>>();
  const std::uint64_t upstream_before = setup.pool.stats().upstream_allocations;
  for (auto _ : state) {
    const mem::ArenaScope scope(setup.arena);
    setup.mesh.rebuild_topology(setup.arena);
  }
  state.counters["upstream_allocs_per_rebuild"] =
      per_iteration(setup.pool.stats().upstream_allocations - upstream_before);
  state.counters["reserved_MiB"] = reserved_mib(setup.pool);
  state.SetItemsProcessed(state.iterations() *
                          static_cast<benchmark::IterationCount>(setup.mesh.cell_count()));
}

template <geo::CellType Type>
void run_lookup(benchmark::State& state) {
  auto& setup = setup_of<LookupSetup<Type>>();
  const mem::ArrayView<const double> points = setup.points.view();
  const geo::LookupResult result = setup.result();
  const std::uint64_t upstream_before = setup.pool.stats().upstream_allocations;
  for (auto _ : state) {
    const mem::ArenaScope scope(setup.arena);
    setup.mesh.lookup(points, result, setup.arena);
  }
  state.counters["upstream_allocs_per_lookup"] =
      per_iteration(setup.pool.stats().upstream_allocations - upstream_before);

  std::vector<std::int32_t> found(point_count);
  mem::copy_to_host(std::span<std::int32_t>(found),
                    mem::ArrayView<const std::int32_t>(result.cells), setup.pool.stream());
  const auto found_count =
      std::count_if(found.begin(), found.end(), [](std::int32_t cell) { return cell >= 0; });
  state.counters["found_fraction"] =
      static_cast<double>(found_count) / static_cast<double>(point_count);
  state.counters["reserved_MiB"] = reserved_mib(setup.pool);
  state.SetItemsProcessed(state.iterations() * static_cast<benchmark::IterationCount>(point_count));
}

void BM_TopologyHex(benchmark::State& state) {
  run_topology<geo::CellType::hexahedron>(state);
}
void BM_TopologyTet(benchmark::State& state) {
  run_topology<geo::CellType::tetrahedron>(state);
}
void BM_LookupTet(benchmark::State& state) {
  run_lookup<geo::CellType::tetrahedron>(state);
}
void BM_LookupHex(benchmark::State& state) {
  run_lookup<geo::CellType::hexahedron>(state);
}

}  // namespace

// Real (wall-clock) time: the work runs on all OpenMP threads, not only the timing thread.
BENCHMARK(BM_TopologyHex)->Unit(benchmark::kMillisecond)->MinTime(min_seconds)->UseRealTime();
BENCHMARK(BM_TopologyTet)->Unit(benchmark::kMillisecond)->MinTime(min_seconds)->UseRealTime();
BENCHMARK(BM_LookupTet)->Unit(benchmark::kMillisecond)->MinTime(min_seconds)->UseRealTime();
BENCHMARK(BM_LookupHex)->Unit(benchmark::kMillisecond)->MinTime(min_seconds)->UseRealTime();

BENCHMARK_MAIN();
