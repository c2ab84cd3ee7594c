// bench_fem: Q1 Laplacian assembly on a 1024^2 grid and a 100^3 hex mesh, P1 on a ~1M-tet mesh,
// compared side by side with an assembly of the same element matrices through Eigen's
// setFromTriplets; SpMV (with the bytes it moves); CG to 1e-8, and CG with Jacobi on the stiffness
// plus mass matrices of the 1024^2 grid and the 100^3 hex mesh (the peer runner's problem).
// Single-threaded unless the name says otherwise.
#include <benchmark/benchmark.h>

#include <Eigen/Sparse>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <type_traits>
#include <vector>

#include "arenafem/fem/boundary.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/multigrid.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/fem/stencil_operator.hpp"
#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/quadrature.hpp"

#if !AFEM_HAS_CUDA && defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using namespace afem;

/// grad u . grad v, every pair of each element matrix evaluated (no symmetry declared).
struct AllPairsLaplaceForm {
  template <class S, class V, class U>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const V& v, const U& u) const {
    return fem::dot(u.grad(), v.grad());
  }
};

/// The same form declared symmetric: half of each element matrix, mirrored.
struct LaplaceForm : AllPairsLaplaceForm {
  static constexpr bool symmetric = true;
};

void set_threads(int count) {
#if !AFEM_HAS_CUDA && defined(_OPENMP)
  omp_set_num_threads(count);
#else
  (void)count;
#endif
}

/// One problem: geometry, Q1/P1 space, cell domain, quadrature of order 2, restriction, and an
/// assembled matrix (plan built). Built once per geometry and kept for all benchmarks.
template <class G>
struct Problem {
  using Space = fem::LagrangeSpace<G, 1>;
  using Domain = quadrature::Cells<G>;
  memory::Pool pool{memory::device_resource(), {.name = "bench_fem"}};
  memory::Arena arena{pool, {"step", 64 << 20, 0}};
  std::unique_ptr<G> geometry;
  std::unique_ptr<Space> space;
  std::unique_ptr<Domain> cells;
  std::unique_ptr<quadrature::RegularQuadrature<Domain>> q;
  std::unique_ptr<fem::SpaceRestriction<Space, Domain>> restriction;
  std::unique_ptr<fem::BsrMatrix<1>> matrix;

  explicit Problem(std::unique_ptr<G> g) : geometry(std::move(g)) {
    space = std::make_unique<Space>(*geometry, pool, arena);
    cells = std::make_unique<Domain>(*geometry);
    q = std::make_unique<quadrature::RegularQuadrature<Domain>>(*cells, 2, pool);
    restriction = std::make_unique<fem::SpaceRestriction<Space, Domain>>(*space, *cells, arena);
    matrix = std::make_unique<fem::BsrMatrix<1>>(pool);
    fem::integrate(*matrix, *q, *restriction, *restriction, LaplaceForm{}, arena);
  }
};

Problem<geometry::Grid2D>& grid_problem() {
  static Problem<geometry::Grid2D> problem(std::make_unique<geometry::Grid2D>(
      std::array<double, 2>{0.0, 0.0}, std::array<double, 2>{1.0 / 1024, 1.0 / 1024},
      std::array<std::int32_t, 2>{1024, 1024}));
  return problem;
}

/// The 3D peer problem's unit cube as a 100^3 grid (the same Q1 space as hex_problem's mesh).
Problem<geometry::Grid3D>& grid3_problem() {
  static Problem<geometry::Grid3D> problem(std::make_unique<geometry::Grid3D>(
      std::array<double, 3>{0.0, 0.0, 0.0}, std::array<double, 3>{0.01, 0.01, 0.01},
      std::array<std::int32_t, 3>{100, 100, 100}));
  return problem;
}

template <geometry::CellType Type>
Problem<geometry::Mesh<Type>>& mesh_problem(std::int32_t n) {
  static memory::Pool setup_pool(memory::device_resource(), {.name = "bench_fem.setup"});
  static memory::Arena setup_arena(setup_pool, {"setup", 64 << 20, 0});
  static Problem<geometry::Mesh<Type>> problem(std::make_unique<geometry::Mesh<Type>>(
      geometry::box_mesh(Type, {n, n, n}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}), setup_pool,
      setup_arena));
  return problem;
}

auto& hex_problem() {
  return mesh_problem<geometry::CellType::hexahedron>(100);
}
auto& tet_problem() {
  return mesh_problem<geometry::CellType::tetrahedron>(55);
}

template <class P>
void report(benchmark::State& state, const P& problem) {
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["cells/s"] =
      benchmark::Counter(iterations * problem.geometry->cell_count(), benchmark::Counter::kIsRate);
  state.counters["dofs/s"] =
      benchmark::Counter(iterations * problem.space->node_count(), benchmark::Counter::kIsRate);
}

/// integrate() with the triplet plan cached (steady state): element matrices + segment sums.
template <class P, class Form = LaplaceForm>
void assemble(benchmark::State& state, P& problem, int threads) {
  set_threads(threads);
  for (auto _ : state) {
    fem::integrate(*problem.matrix, *problem.q, *problem.restriction, *problem.restriction, Form{},
                   problem.arena);
    benchmark::DoNotOptimize(problem.matrix->view().values.data());
  }
  report(state, problem);
  set_threads(2);
}

/// integrate() into a fresh matrix: plan (sort of the triplets) + element matrices + sums.
template <class P>
void assemble_first(benchmark::State& state, P& problem) {
  set_threads(1);
  for (auto _ : state) {
    fem::BsrMatrix<1> matrix(problem.pool);
    fem::integrate(matrix, *problem.q, *problem.restriction, *problem.restriction, LaplaceForm{},
                   problem.arena);
    benchmark::DoNotOptimize(matrix.view().values.data());
  }
  report(state, problem);
  set_threads(2);
}

/// The same element matrices (same kernel), assembled through Eigen's setFromTriplets.
template <class P>
void assemble_eigen(benchmark::State& state, P& problem) {
  set_threads(1);
  using Element = typename P::Space::Element;
  constexpr int n = Element::node_count;
  const std::int32_t elements = problem.cells->element_count();
  const auto total = static_cast<std::size_t>(elements) * n * n;
  const auto nodes = test_nodes(problem);
  std::vector<Eigen::Triplet<double>> triplets;
  triplets.reserve(total);
  const auto size = static_cast<Eigen::Index>(problem.space->node_count());
  for (auto _ : state) {
    const memory::ArenaScope scope(problem.arena);
    auto values = memory::borrow_temporary<double>(problem.arena, total, "bench.element_matrices");
    fem::detail::element_matrices<1, 1, Element, Element>(values.view(), *problem.q, LaplaceForm{},
                                                          problem.arena);
    const double* v = values.data();
    triplets.clear();
    for (std::size_t t = 0; t < total; ++t) {
      const std::size_t e = t / (static_cast<std::size_t>(n) * n);
      const std::size_t i = (t / n) % n;
      const std::size_t j = t % n;
      triplets.emplace_back(nodes[e * n + i], nodes[e * n + j], v[t]);
    }
    Eigen::SparseMatrix<double, Eigen::RowMajor> matrix(size, size);
    matrix.setFromTriplets(triplets.begin(), triplets.end());
    benchmark::DoNotOptimize(matrix.valuePtr());
  }
  report(state, problem);
  set_threads(2);
}

/// The element-matrix stage alone (what both assemblies share).
template <class P>
void element_stage(benchmark::State& state, P& problem) {
  set_threads(1);
  using Element = typename P::Space::Element;
  constexpr int n = Element::node_count;
  const auto total = static_cast<std::size_t>(problem.cells->element_count()) * n * n;
  for (auto _ : state) {
    const memory::ArenaScope scope(problem.arena);
    auto values = memory::borrow_temporary<double>(problem.arena, total, "bench.element_matrices");
    fem::detail::element_matrices<1, 1, Element, Element>(values.view(), *problem.q, LaplaceForm{},
                                                          problem.arena);
    benchmark::DoNotOptimize(values.data());
  }
  report(state, problem);
  set_threads(2);
}

template <class P>
std::vector<std::int32_t> test_nodes(const P& problem) {
  const auto view = problem.restriction->view().element_nodes;
  return {view.begin(), view.end()};  // CPU backend: host-readable memory
}

void BM_AssembleGridQ1(benchmark::State& state) {
  assemble(state, grid_problem(), 1);
}
void BM_AssembleGridQ1_2threads(benchmark::State& state) {
  assemble(state, grid_problem(), 2);
}
void BM_AssembleGridQ1_FirstWithPlan(benchmark::State& state) {
  assemble_first(state, grid_problem());
}
void BM_AssembleGridQ1_Eigen(benchmark::State& state) {
  assemble_eigen(state, grid_problem());
}
void BM_AssembleHexQ1(benchmark::State& state) {
  assemble(state, hex_problem(), 1);
}
void BM_AssembleHexQ1_AllPairs(benchmark::State& state) {
  assemble<decltype(hex_problem()), AllPairsLaplaceForm>(state, hex_problem(), 1);
}
void BM_AssembleHexQ1_2threads(benchmark::State& state) {
  assemble(state, hex_problem(), 2);
}
void BM_AssembleHexQ1_FirstWithPlan(benchmark::State& state) {
  assemble_first(state, hex_problem());
}
void BM_AssembleHexQ1_Eigen(benchmark::State& state) {
  assemble_eigen(state, hex_problem());
}
void BM_ElementMatricesGridQ1(benchmark::State& state) {
  element_stage(state, grid_problem());
}
void BM_ElementMatricesHexQ1(benchmark::State& state) {
  element_stage(state, hex_problem());
}
void BM_ElementMatricesTetP1(benchmark::State& state) {
  element_stage(state, tet_problem());
}
void BM_AssembleTetP1(benchmark::State& state) {
  assemble(state, tet_problem(), 1);
}
void BM_AssembleTetP1_2threads(benchmark::State& state) {
  assemble(state, tet_problem(), 2);
}
void BM_AssembleTetP1_FirstWithPlan(benchmark::State& state) {
  assemble_first(state, tet_problem());
}
void BM_AssembleTetP1_Eigen(benchmark::State& state) {
  assemble_eigen(state, tet_problem());
}

/// y = A x on a problem's Q1 Laplacian. Reports the bytes one product must move at least (the
/// matrix's values, columns and offsets, x read once, y written) and that over the time.
template <class P>
void spmv(benchmark::State& state, P& problem) {
  set_threads(static_cast<int>(state.range(0)));
  const auto n = static_cast<std::size_t>(problem.matrix->rows());
  auto x = memory::borrow_temporary<double>(problem.pool, n, "bench.x");
  auto y = memory::borrow_temporary<double>(problem.pool, n, "bench.y");
  std::fill(x.data(), x.data() + n, 1.0);
  for (auto _ : state) {
    fem::spmv(*problem.matrix, x.view(), y.view(), problem.arena);
    benchmark::DoNotOptimize(y.data());
  }
  constexpr int b = decltype(problem.matrix->view())::block_row_size;
  const auto blocks = static_cast<double>(problem.matrix->block_count());
  const double bytes =
      blocks * (sizeof(double) * b * b + sizeof(std::int32_t)) +
      static_cast<double>(problem.matrix->block_rows() + 1) * sizeof(std::int32_t) +
      2.0 * static_cast<double>(n) * sizeof(double);
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["rows/s"] =
      benchmark::Counter(iterations * static_cast<double>(n), benchmark::Counter::kIsRate);
  state.counters["bytes_per_spmv"] = bytes;
  state.counters["bytes/s"] = benchmark::Counter(iterations * bytes, benchmark::Counter::kIsRate,
                                                 benchmark::Counter::OneK::kIs1000);
  set_threads(2);
}

void BM_SpmvGridQ1(benchmark::State& state) {
  spmv(state, grid_problem());
}
void BM_SpmvHexQ1(benchmark::State& state) {
  spmv(state, hex_problem());
}
void BM_SpmvGrid3Q1(benchmark::State& state) {
  spmv(state, grid3_problem());
}

/// y = A x on a grid problem's Q1 Laplacian through a StencilOperator (the same bits as spmv);
/// reports the rows per second and the share of rows taken from the stencil.
template <class P>
void stencil_spmv(benchmark::State& state, P& problem) {
  set_threads(static_cast<int>(state.range(0)));
  const auto n = static_cast<std::size_t>(problem.matrix->rows());
  auto x = memory::borrow_temporary<double>(problem.pool, n, "bench.x");
  auto y = memory::borrow_temporary<double>(problem.pool, n, "bench.y");
  std::fill(x.data(), x.data() + n, 1.0);
  const fem::StencilOperator op(*problem.matrix, problem.geometry->resolution(), problem.arena);
  for (auto _ : state) {
    op.apply(x.view(), y.view(), problem.arena);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["rows/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(n),
                         benchmark::Counter::kIsRate);
  state.counters["stencil_share"] = static_cast<double>(op.stencil_rows()) / static_cast<double>(n);
  set_threads(2);
}

void BM_StencilSpmvGridQ1(benchmark::State& state) {
  stencil_spmv(state, grid_problem());
}
void BM_StencilSpmvGrid3Q1(benchmark::State& state) {
  stencil_spmv(state, grid3_problem());
}

/// grad u . grad v + u v: the Laplacian plus the mass matrix, symmetric positive definite without
/// boundary conditions.
struct StiffnessMassForm {
  static constexpr bool symmetric = true;
  template <class S, class V, class U>
  AFEM_HOST_DEVICE double operator()(const S& /*s*/, const V& v, const U& u) const {
    return fem::dot(u.grad(), v.grad()) + fem::dot(u.value(), v.value());
  }
};

/// The peer runner's CG problem on a problem's mesh: the Q1 stiffness plus mass matrix, b = 1 and
/// x, in the problem's pool.
struct PeerCgSystem {
  fem::BsrMatrix<1> matrix;
  memory::Temporary<double> b;
  memory::Temporary<double> x;
};

template <class P>
PeerCgSystem peer_cg_system(P& problem) {
  PeerCgSystem system{fem::BsrMatrix<1>(problem.pool), {}, {}};
  fem::integrate(system.matrix, *problem.q, *problem.restriction, *problem.restriction,
                 StiffnessMassForm{}, problem.arena);
  const auto n = static_cast<std::size_t>(system.matrix.rows());
  memory::replace_owned(system.b, memory::borrow_temporary<double>(problem.pool, n, "bench.b"));
  memory::replace_owned(system.x, memory::borrow_temporary<double>(problem.pool, n, "bench.x"));
  std::fill(system.b.data(), system.b.data() + n, 1.0);
  return system;
}

/// CG with Jacobi on a problem's Q1 stiffness plus mass matrix, right-hand side 1, from x = 0 to
/// a relative residual of 1e-8: the peer runner's CG problem. Reports the iterations and the time
/// per iteration (s/iteration).
template <class P>
void cg_jacobi(benchmark::State& state, P& problem) {
  set_threads(static_cast<int>(state.range(0)));
  PeerCgSystem system = peer_cg_system(problem);
  const fem::BsrMatrix<1>& matrix = system.matrix;
  const auto n = static_cast<std::size_t>(matrix.rows());
  const memory::ArrayView<const double> b = system.b.view();
  const memory::ArrayView<double> x = system.x.view();
  int iterations = 0;
  double total = 0.0;
  for (auto _ : state) {
    std::fill(x.data(), x.data() + n, 0.0);
    iterations = fem::cg(matrix, b, x, problem.arena,
                         {.tolerance = 1e-8,
                          .max_iterations = 100000,
                          .preconditioner = fem::Preconditioner::jacobi})
                     .iterations;
    total += iterations;
  }
  state.counters["cg_iterations"] = iterations;
  state.counters["s/iteration"] =
      benchmark::Counter(total, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  set_threads(2);
}

void BM_CgJacobiGridQ1(benchmark::State& state) {
  cg_jacobi(state, grid_problem());
}
void BM_CgJacobiHexQ1(benchmark::State& state) {
  cg_jacobi(state, hex_problem());
}

/// CG preconditioned by a multigrid V-cycle on the peer runner's CG problem (as cg_jacobi),
/// the hierarchy's setup included in the time: geometric on the grid (`geometric`), smoothed
/// aggregation otherwise. Reports the iterations, the levels and the setup's share of the time.
template <class P>
void cg_multigrid(benchmark::State& state, P& problem, bool geometric) {
  set_threads(static_cast<int>(state.range(0)));
  PeerCgSystem system = peer_cg_system(problem);
  const fem::BsrMatrix<1>& matrix = system.matrix;
  const auto n = static_cast<std::size_t>(matrix.rows());
  const memory::ArrayView<const double> b = system.b.view();
  const memory::ArrayView<double> x = system.x.view();
  int iterations = 0;
  int levels = 0;
  double setup = 0.0;
  double total = 0.0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::fill(x.data(), x.data() + n, 0.0);
    using G = typename P::Space::Geometry;
    constexpr bool on_grid = std::is_same_v<G, geometry::Grid<G::dimension>>;
    const fem::SolveOptions options{.tolerance = 1e-8, .max_iterations = 1000};
    if constexpr (on_grid) {
      if (geometric) {
        // Geometric: the levels and CG's own products go through the grid's stencil.
        const auto cells = problem.geometry->resolution();
        const fem::Multigrid<1> mg(matrix, cells, problem.arena);
        const auto built = std::chrono::steady_clock::now();
        iterations = fem::cg(*mg.fine_stencil(), b, x, problem.arena, options, mg).iterations;
        levels = mg.level_count();
        setup += std::chrono::duration<double>(built - start).count();
        total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        continue;
      }
    }
    const fem::Multigrid<1> mg(matrix, problem.arena);
    const auto built = std::chrono::steady_clock::now();
    iterations = fem::cg(fem::as_operator(matrix), b, x, problem.arena, options, mg).iterations;
    levels = mg.level_count();
    setup += std::chrono::duration<double>(built - start).count();
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  state.counters["cg_iterations"] = iterations;
  state.counters["levels"] = levels;
  state.counters["setup_share"] = setup / total;
  set_threads(2);
}

void BM_CgMultigridGridQ1(benchmark::State& state) {
  cg_multigrid(state, grid_problem(), true);
}
void BM_CgMultigridGrid3Q1(benchmark::State& state) {
  cg_multigrid(state, grid3_problem(), true);
}
void BM_CgAggregationGridQ1(benchmark::State& state) {
  cg_multigrid(state, grid_problem(), false);
}
void BM_CgAggregationHexQ1(benchmark::State& state) {
  cg_multigrid(state, hex_problem(), false);
}

/// CG (Jacobi) to 1e-8 on a 256^2 grid's Q1 Laplacian with zero Dirichlet data.
void BM_CgGridQ1_256(benchmark::State& state) {
  set_threads(static_cast<int>(state.range(0)));
  static Problem<geometry::Grid2D> problem(std::make_unique<geometry::Grid2D>(
      std::array<double, 2>{0.0, 0.0}, std::array<double, 2>{1.0 / 256, 1.0 / 256},
      std::array<std::int32_t, 2>{256, 256}));
  const auto n = static_cast<std::size_t>(problem.matrix->rows());
  auto b = memory::borrow_temporary<double>(problem.pool, n, "bench.b");
  auto x = memory::borrow_temporary<double>(problem.pool, n, "bench.x");
  auto mask = memory::borrow_temporary<std::uint8_t>(problem.pool, n, "bench.mask");
  auto zero = memory::borrow_temporary<double>(problem.pool, n, "bench.zero");
  std::fill(zero.data(), zero.data() + n, 0.0);
  fem::boundary_dofs(*problem.space, mask.view(), problem.arena);
  int iterations = 0;
  for (auto _ : state) {
    state.PauseTiming();
    fem::integrate(*problem.matrix, *problem.q, *problem.restriction, *problem.restriction,
                   LaplaceForm{}, problem.arena);
    std::fill(b.data(), b.data() + n, 1.0 / static_cast<double>(n));
    std::fill(x.data(), x.data() + n, 0.0);
    fem::project_dirichlet(*problem.matrix, b.view(), mask.view(), zero.view(), problem.arena);
    state.ResumeTiming();
    iterations = fem::cg(*problem.matrix, b.view(), x.view(), problem.arena,
                         {.tolerance = 1e-8, .max_iterations = 100000})
                     .iterations;
  }
  state.counters["cg_iterations"] = iterations;
  set_threads(2);
}

constexpr double min_seconds = 1.0;

}  // namespace

BENCHMARK(BM_AssembleGridQ1)->Unit(benchmark::kMillisecond)->MinTime(min_seconds)->UseRealTime();
BENCHMARK(BM_AssembleGridQ1_Eigen)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_AssembleGridQ1_FirstWithPlan)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_AssembleGridQ1_2threads)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_AssembleHexQ1)->Unit(benchmark::kMillisecond)->MinTime(min_seconds)->UseRealTime();
BENCHMARK(BM_AssembleHexQ1_AllPairs)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_AssembleHexQ1_Eigen)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_AssembleHexQ1_FirstWithPlan)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_AssembleHexQ1_2threads)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_AssembleTetP1)->Unit(benchmark::kMillisecond)->MinTime(min_seconds)->UseRealTime();
BENCHMARK(BM_AssembleTetP1_Eigen)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_AssembleTetP1_FirstWithPlan)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_AssembleTetP1_2threads)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_ElementMatricesGridQ1)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_ElementMatricesHexQ1)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_ElementMatricesTetP1)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_SpmvGridQ1)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_SpmvHexQ1)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_CgJacobiGridQ1)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(BM_CgJacobiHexQ1)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_CgMultigridGridQ1)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();
BENCHMARK(BM_SpmvGrid3Q1)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_StencilSpmvGridQ1)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_StencilSpmvGrid3Q1)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();
BENCHMARK(BM_CgMultigridGrid3Q1)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();
BENCHMARK(BM_CgAggregationGridQ1)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();
BENCHMARK(BM_CgAggregationHexQ1)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();
BENCHMARK(BM_CgGridQ1_256)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(min_seconds)
    ->UseRealTime();

BENCHMARK_MAIN();
