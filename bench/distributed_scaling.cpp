// distributed_scaling: the Q1 Laplacian (plus mass) of the unit square or cube over MPI ranks,
// timed part by part: mesh distribution and dof numbering, the first and a repeated assembly, the
// product, and a CG iteration with Jacobi. Prints the figures of the slowest rank (medians of the
// repetitions) and the bytes every product moves between ranks. Run it under mpirun with 1, 2, ...
// ranks on one problem (strong scaling) or on problems that grow with the ranks (weak scaling):
// scripts/bench-mpi.sh does both.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arenafem/fem/distributed_dofs.hpp"
#include "arenafem/fem/distributed_matrix.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/distributed_mesh.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/memory/communicator.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/quadrature.hpp"

namespace {

using namespace afem;

/// grad u . grad v + u v
struct ShiftedLaplacian {
  static constexpr bool symmetric = true;
  template <class Sample, class Test, class Trial>
  double operator()(const Sample& /*s*/, const Test& v, const Trial& u) const {
    return fem::dot(u.grad(), v.grad()) + u.value() * v.value();
  }
};

struct Options {
  int dimension = 2;
  std::int32_t resolution = 512;
  std::int32_t stretch = 1;  ///< cells along x are resolution * stretch (weak scaling)
  int repeat = 10;
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--dim" && (value == 2 || value == 3)) {
      options.dimension = value;
    } else if (flag == "--resolution" && value > 0) {
      options.resolution = value;
    } else if (flag == "--stretch" && value > 0) {
      options.stretch = value;
    } else if (flag == "--repeat" && value > 0) {
      options.repeat = value;
    } else {
      throw Error("distributed_scaling: unknown flag or bad value '" + std::string(flag) + " " +
                  argv[i + 1] + "' (flags: --dim 2|3 --resolution N --stretch K --repeat R)");
    }
  }
  return options;
}

/// The median over repetitions of the slowest rank's time of `work`.
template <class Work>
double median_seconds(const memory::Communicator& comm, int repeat, Work&& work) {
  std::vector<double> times;
  for (int r = 0; r < repeat; ++r) {
    MPI_Barrier(comm.handle());
    const double start = MPI_Wtime();
    work();
    times.push_back(comm.max(MPI_Wtime() - start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

template <geometry::CellType Type>
void run(const memory::Communicator& comm, const Options& options) {
  using Mesh = geometry::Mesh<Type>;
  using Space = fem::LagrangeSpace<Mesh, 1>;
  memory::Pool pool(memory::device_resource(), {.name = "distributed_scaling"});
  memory::Arena scratch(pool, {"step", 16 << 20, 0});
  const std::int32_t n = options.resolution;
  geometry::MeshData whole;
  if (comm.rank() == 0) {
    whole = geometry::box_mesh(Type, {n * options.stretch, n, n}, {0.0, 0.0, 0.0},
                               {static_cast<double>(options.stretch), 1.0, 1.0});
  }
  MPI_Barrier(comm.handle());
  const double start = MPI_Wtime();
  const geometry::LocalMeshData part = geometry::distribute_mesh(comm, whole);
  const Mesh mesh(part.mesh, pool, scratch);
  const Space space(mesh, pool, scratch);
  const fem::DistributedDofs dofs = fem::distribute_dofs(comm, part, space, whole, pool, scratch);
  const double setup = comm.max(MPI_Wtime() - start);
  whole = {};

  geometry::CellBasedGeometryPartition<Mesh> owned_cells(mesh, pool);
  geometry::select_owned_cells(owned_cells, part.owned_cells, pool, scratch);
  const quadrature::Cells cells(owned_cells);
  const quadrature::RegularQuadrature quadrature(cells, 2, pool);
  const fem::SpaceRestriction restriction(space, cells, scratch);
  fem::BsrMatrix<1> local(pool);
  std::optional<fem::DistributedMatrix<1>> matrix;
  const double first = median_seconds(comm, 1, [&] {
    fem::integrate(local, quadrature, restriction, restriction, ShiftedLaplacian{}, scratch);
    matrix.emplace(dofs, local, scratch);
  });
  const double repeated = median_seconds(comm, options.repeat, [&] {
    fem::integrate(local, quadrature, restriction, restriction, ShiftedLaplacian{}, scratch);
    matrix->assemble(local, scratch);
  });
  const auto owned = static_cast<std::size_t>(dofs.owned_count());
  std::vector<double> x(owned, 1.0);
  std::vector<double> y(owned, 0.0);
  const memory::ArrayView<const double> xv(x.data(), owned);
  const memory::ArrayView<double> yv(y.data(), owned);
  const double product =
      median_seconds(comm, 10 * options.repeat, [&] { matrix->apply(xv, yv, scratch); });
  std::fill(x.begin(), x.end(), 1.0);
  std::vector<double> solution(owned, 0.0);
  fem::SolveResult result;
  const double solve = median_seconds(comm, 1, [&] {
    std::fill(solution.begin(), solution.end(), 0.0);
    result = fem::cg(*matrix, xv, memory::ArrayView<double>(solution.data(), owned), scratch,
                     {.tolerance = 1e-8,
                      .max_iterations = 100000,
                      .preconditioner = fem::Preconditioner::jacobi});
  });
  const std::int64_t sent = comm.sum(dofs.ghost_update_bytes_sent());
  const std::int64_t most_ghosts = comm.max(std::int64_t{dofs.ghost_nodes()});
  const std::int64_t most_owned = comm.max(std::int64_t{dofs.owned_nodes()});
  const std::int64_t blocks = matrix->global_block_count();
  if (comm.rank() == 0) {
    std::printf(
        "{\"ranks\": %d, \"dim\": %d, \"dofs\": %lld, \"most_owned\": %lld, \"most_ghosts\": %lld, "
        "\"halo_bytes_per_product\": %lld, \"matrix_bytes\": %lld, \"setup_s\": %.4f, "
        "\"first_assembly_s\": %.4f, \"assembly_s\": %.4f, \"spmv_s\": %.6f, "
        "\"cg_iterations\": %d, \"cg_iteration_s\": %.6f}\n",
        comm.size(), options.dimension, static_cast<long long>(dofs.global_nodes()),
        static_cast<long long>(most_owned), static_cast<long long>(most_ghosts),
        static_cast<long long>(sent), static_cast<long long>(blocks) * 12, setup, first, repeated,
        product, result.iterations, solve / std::max(result.iterations, 1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const memory::MpiSession mpi(argc, argv);
  try {
    const Options options = parse(argc, argv);
    const memory::Communicator comm;
    if (options.dimension == 2) {
      run<geometry::CellType::quadrilateral>(comm, options);
    } else {
      run<geometry::CellType::hexahedron>(comm, options);
    }
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
