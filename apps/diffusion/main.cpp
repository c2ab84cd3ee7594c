// diffusion: solves -div(nu grad u) = f with a manufactured solution and reports the errors, or
// with a constant source and boundary data on named sides.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "arenafem/apps/common/flag_values.hpp"
#include "arenafem/apps/diffusion/diffusion.hpp"
#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/gmsh.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/geometry/side_tag_set.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/ledger.hpp"
#ifdef ARENAFEM_WITH_MPI
#include "arenafem/apps/common/rank_errors.hpp"
#include "arenafem/apps/diffusion/distributed.hpp"
#include "arenafem/geometry/distributed_mesh.hpp"
#include "arenafem/memory/communicator.hpp"
#endif

namespace {

using namespace afem;

constexpr std::string_view usage = R"(usage: diffusion [options]

Solves -div(nu grad u) = f on the unit square/cube (or a Gmsh mesh) with Lagrange elements.
Without --source: the manufactured solution u = prod_d cos(pi x_d), Dirichlet data on the whole
boundary (or on the --dirichlet sides, its exact flux on the others); prints the L2 and H1 errors.
With --source F: f = F, u = 0 on the --dirichlet sides (default: the whole boundary), the flux
nu du/dn = G on each --neumann side, 0 on the others; prints the range of u_h.
Sides are named by tag: a number or a name, the Gmsh mesh's physical names of sides, or on the
unit box xmin, xmax, ymin, ymax, zmin, zmax (tags 1 to 6). Prints CG iterations and timings.

  --geometry grid|tri|quad|tet|hex   geometry of the unit box (default: grid)
  --dim 2|3                          dimension of --geometry grid (default: 2)
  --mesh FILE.msh                    a Gmsh 4.1 mesh instead of the unit box
  --degree 1|2                       polynomial degree (default: 1)
  --resolution N                     cells per axis of the unit box (default: 16)
  --viscosity NU                     diffusion coefficient, > 0 (default: 1)
  --tolerance T                      CG relative residual (default: 1e-10)
  --preconditioner none|jacobi|multigrid
                                     CG's preconditioner (default: jacobi); multigrid is
                                     geometric on a grid with degree 1, smoothed aggregation
                                     otherwise
  --dirichlet TAG[,TAG...]           the Dirichlet sides (default: the whole boundary)
  --neumann TAG=G[,TAG=G...]         flux nu du/dn = G on these sides (needs --source and
                                     --dirichlet); repeatable
  --source F                         a constant source instead of the manufactured solution
  --out FILE.vtu                     write u_h and u at the vertices
  --help                             this text
)";

struct Options {
  std::string geometry = "grid";
  int dimension = 2;
  std::string mesh;
  int degree = 1;
  int resolution = 16;
  double viscosity = 1.0;
  double tolerance = 1e-10;
  apps::diffusion::Preconditioner preconditioner = apps::diffusion::Preconditioner::jacobi;
  std::string out;
  std::vector<std::string> dirichlet;                   ///< tags as given
  std::vector<std::pair<std::string, double>> neumann;  ///< tag as given, flux
  std::optional<double> source;
};

/// The comma-separated items of `value`; throws for an empty item.
std::vector<std::string> split_list(std::string_view flag, std::string_view value) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = std::min(value.find(',', begin), value.size());
    const std::string_view item = value.substr(begin, end - begin);
    if (item.empty()) {
      throw Error("diffusion: " + std::string(flag) + " expects a comma-separated list, got '" +
                  std::string(value) + "'");
    }
    items.emplace_back(item);
    if (end == value.size()) {
      return items;
    }
    begin = end + 1;
  }
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(usage.data(), stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      throw Error("diffusion: " + std::string(flag) + " needs a value (see --help)");
    }
    const char* value = argv[++i];
    if (flag == "--geometry") {
      options.geometry = value;
      if (options.geometry != "grid" && options.geometry != "tri" && options.geometry != "quad" &&
          options.geometry != "tet" && options.geometry != "hex") {
        throw Error("diffusion: --geometry expects grid, tri, quad, tet or hex, got '" +
                    options.geometry + "'");
      }
    } else if (flag == "--dim") {
      options.dimension = static_cast<int>(apps::parse_integer(flag, value, 1, 1 << 20));
      if (options.dimension != 2 && options.dimension != 3) {
        throw Error("diffusion: --dim expects 2 or 3");
      }
    } else if (flag == "--mesh") {
      options.mesh = value;
    } else if (flag == "--degree") {
      options.degree = static_cast<int>(apps::parse_integer(flag, value, 1, 1 << 20));
      if (options.degree > 2) {
        throw Error("diffusion: --degree expects 1 or 2");
      }
    } else if (flag == "--resolution") {
      options.resolution = static_cast<int>(apps::parse_integer(flag, value, 1, 1 << 20));
    } else if (flag == "--viscosity") {
      options.viscosity = apps::parse_positive(flag, value);
    } else if (flag == "--tolerance") {
      options.tolerance = apps::parse_positive(flag, value);
    } else if (flag == "--preconditioner") {
      const std::string_view kind = value;
      if (kind == "none") {
        options.preconditioner = apps::diffusion::Preconditioner::none;
      } else if (kind == "jacobi") {
        options.preconditioner = apps::diffusion::Preconditioner::jacobi;
      } else if (kind == "multigrid") {
        options.preconditioner = apps::diffusion::Preconditioner::multigrid;
      } else {
        throw Error("diffusion: --preconditioner expects none, jacobi or multigrid, got '" +
                    std::string(value) + "'");
      }
    } else if (flag == "--out") {
      options.out = value;
    } else if (flag == "--dirichlet") {
      for (std::string& item : split_list(flag, value)) {
        options.dirichlet.push_back(std::move(item));
      }
    } else if (flag == "--neumann") {
      for (const std::string& item : split_list(flag, value)) {
        const std::size_t equals = item.find('=');
        if (equals == std::string::npos || equals == 0) {
          throw Error("diffusion: --neumann expects TAG=VALUE items, got '" + item + "'");
        }
        options.neumann.emplace_back(item.substr(0, equals),
                                     apps::parse_finite("--neumann", item.substr(equals + 1)));
      }
    } else if (flag == "--source") {
      options.source = apps::parse_finite(flag, value);
    } else {
      throw Error("diffusion: unknown option '" + std::string(flag) + "' (see --help)");
    }
  }
  return options;
}

/// The tag `text` names: a positive number, or a name of `names`. Throws afem::Error naming the
/// flag and the known names otherwise.
std::int32_t resolve_tag(std::string_view flag, const std::string& text,
                         const std::vector<std::pair<std::int32_t, std::string>>& names) {
  for (const auto& [tag, name] : names) {
    if (name == text) {
      return tag;
    }
  }
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    return static_cast<std::int32_t>(apps::parse_integer(flag, text, 1, INT32_MAX));
  }
  std::string known;
  for (const auto& [tag, name] : names) {
    known += (known.empty() ? "" : ", ") + name + " (" + std::to_string(tag) + ")";
  }
  throw Error("diffusion: " + std::string(flag) + ": no side is named '" + text +
              "'; expected a tag number or one of: " + (known.empty() ? "(no names)" : known));
}

/// The problem the options describe, with side names resolved by `names`.
apps::diffusion::Problem problem_of(
    const Options& options, const std::vector<std::pair<std::int32_t, std::string>>& names) {
  apps::diffusion::Problem problem;
  problem.viscosity = options.viscosity;
  problem.source = options.source;
  std::vector<std::int32_t> dirichlet;
  for (const std::string& text : options.dirichlet) {
    dirichlet.push_back(resolve_tag("--dirichlet", text, names));
  }
  try {
    problem.dirichlet = geometry::SideTagSet(dirichlet);
  } catch (const Error& error) {
    throw Error("diffusion: --dirichlet: " + std::string(error.what()));
  }
  for (const auto& [text, flux] : options.neumann) {
    problem.neumann.emplace_back(resolve_tag("--neumann", text, names), flux);
  }
  problem.check();
  return problem;
}

apps::diffusion::Settings settings_of(const Options& options) {
  return {.tolerance = options.tolerance,
          .preconditioner = options.preconditioner,
          .vtu = options.out,
          .vertex_values = false};
}

void print_report(const apps::diffusion::Report& report, const apps::diffusion::Problem& problem,
                  const Options& options, const std::string& name, memory::Pool& pool,
                  memory::Arena& scratch) {
  std::printf("geometry %s, degree %d: %d cells, %lld dofs\n", name.c_str(), options.degree,
              report.cells, static_cast<long long>(report.dofs));
  if (problem.source) {
    std::printf("u_h in [%.6e, %.6e]\n", report.minimum, report.maximum);
  } else {
    std::printf("L2 error %.6e  H1 error %.6e\n", report.l2_error, report.h1_error);
  }
  static constexpr const char* preconditioners[] = {"none", "Jacobi", "multigrid"};
  std::printf("CG (%s): %d iterations, relative residual %.3e\n",
              preconditioners[static_cast<int>(options.preconditioner)], report.solve.iterations,
              report.solve.residual);
  if (report.levels > 0) {
    std::printf("multigrid: %s, %d levels, setup %.3f s\n",
                report.geometric_multigrid ? "geometric" : "smoothed aggregation", report.levels,
                report.setup_seconds);
  }
  std::printf("assembly %.3f s, solve %.3f s\n", report.assemble_seconds, report.solve_seconds);
  if (!options.out.empty()) {
    std::printf("wrote %s\n", options.out.c_str());
  }
  const auto stats = pool.stats();
  std::printf("memory: pool reserved %s, arena peak %s\n",
              memory::format_bytes(stats.reserved_bytes).c_str(),
              memory::format_bytes(scratch.stats().peak_used_bytes).c_str());
}

template <class G>
void run(const G& geometry, const Options& options, const std::string& name,
         const std::vector<std::pair<std::int32_t, std::string>>& side_names, memory::Pool& pool,
         memory::Arena& scratch) {
  const apps::diffusion::Problem problem = problem_of(options, side_names);
  const apps::diffusion::Settings settings = settings_of(options);
  const apps::diffusion::Report report =
      options.degree == 1
          ? apps::diffusion::solve<G, 1>(geometry, problem, pool, scratch, settings)
          : apps::diffusion::solve<G, 2>(geometry, problem, pool, scratch, settings);
  print_report(report, problem, options, name, pool, scratch);
}

template <geometry::CellType Type>
void run_mesh(const geometry::MeshData& data, const Options& options, const std::string& name,
              memory::Pool& pool, memory::Arena& scratch) {
  const geometry::Mesh<Type> mesh(data, pool, scratch);
  run(mesh, options, name, data.side_tag_names, pool, scratch);
}

void run_data(const geometry::MeshData& data, const Options& options, const std::string& name,
              memory::Pool& pool, memory::Arena& scratch) {
  switch (data.cell_type) {
    case geometry::CellType::triangle:
      return run_mesh<geometry::CellType::triangle>(data, options, name, pool, scratch);
    case geometry::CellType::quadrilateral:
      return run_mesh<geometry::CellType::quadrilateral>(data, options, name, pool, scratch);
    case geometry::CellType::tetrahedron:
      return run_mesh<geometry::CellType::tetrahedron>(data, options, name, pool, scratch);
    case geometry::CellType::hexahedron:
      return run_mesh<geometry::CellType::hexahedron>(data, options, name, pool, scratch);
  }
}

/// The whole mesh the options describe (a grid as quadrilaterals or hexahedra) and its name.
std::pair<geometry::MeshData, std::string> whole_mesh(const Options& options) {
  const std::int32_t n = options.resolution;
  if (!options.mesh.empty()) {
    return {geometry::read_gmsh(options.mesh), options.mesh};
  }
  if (options.geometry == "grid") {
    const geometry::CellType type =
        options.dimension == 2 ? geometry::CellType::quadrilateral : geometry::CellType::hexahedron;
    return {geometry::box_mesh(type, {n, n, n}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}),
            options.dimension == 2 ? "grid 2D" : "grid 3D"};
  }
  const geometry::CellType type = options.geometry == "tri"    ? geometry::CellType::triangle
                                  : options.geometry == "quad" ? geometry::CellType::quadrilateral
                                  : options.geometry == "tet"  ? geometry::CellType::tetrahedron
                                                               : geometry::CellType::hexahedron;
  return {geometry::box_mesh(type, {n, n, n}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}), options.geometry};
}

#ifdef ARENAFEM_WITH_MPI
template <geometry::CellType Type>
apps::diffusion::Report solve_distributed(const memory::Communicator& comm,
                                          const geometry::MeshData& data,
                                          const apps::diffusion::Problem& problem,
                                          const Options& options, memory::Pool& pool,
                                          memory::Arena& scratch) {
  const apps::diffusion::Settings settings = settings_of(options);
  return options.degree == 1 ? apps::diffusion::solve_distributed<Type, 1>(comm, data, problem,
                                                                           pool, scratch, settings)
                             : apps::diffusion::solve_distributed<Type, 2>(comm, data, problem,
                                                                           pool, scratch, settings);
}

/// The solve over the ranks of `comm`: rank 0 reads or generates the mesh, every rank solves its
/// part, rank 0 prints what the serial program prints, and the rank count.
void run_distributed(const memory::Communicator& comm, const Options& options, memory::Pool& pool,
                     memory::Arena& scratch) {
  geometry::MeshData data;
  std::string name;
  comm.collective([&] {
    if (comm.rank() == 0) {
      std::tie(data, name) = whole_mesh(options);
    }
  });
  std::vector<std::int32_t> type = {static_cast<std::int32_t>(data.cell_type)};
  comm.broadcast(type, 0);
  std::vector<std::pair<std::int32_t, std::string>> side_names = data.side_tag_names;
  geometry::broadcast_tag_names(comm, side_names, 0);
  apps::diffusion::Problem problem;
  comm.collective([&] { problem = problem_of(options, side_names); });
  apps::diffusion::Report report;
  switch (static_cast<geometry::CellType>(type[0])) {
    case geometry::CellType::triangle:
      report = solve_distributed<geometry::CellType::triangle>(comm, data, problem, options, pool,
                                                               scratch);
      break;
    case geometry::CellType::quadrilateral:
      report = solve_distributed<geometry::CellType::quadrilateral>(comm, data, problem, options,
                                                                    pool, scratch);
      break;
    case geometry::CellType::tetrahedron:
      report = solve_distributed<geometry::CellType::tetrahedron>(comm, data, problem, options,
                                                                  pool, scratch);
      break;
    case geometry::CellType::hexahedron:
      report = solve_distributed<geometry::CellType::hexahedron>(comm, data, problem, options, pool,
                                                                 scratch);
      break;
  }
  if (comm.rank() == 0) {
    std::printf("ranks: %d (METIS partition, one ghost layer)\n", comm.size());
    print_report(report, problem, options, name, pool, scratch);
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
#ifdef ARENAFEM_WITH_MPI
  std::optional<memory::MpiSession> mpi;
  if (memory::launched_by_mpi()) {
    mpi.emplace(argc, argv);
  }
#endif
  try {
    const Options options = parse(argc, argv);
    memory::Pool pool(memory::device_resource(), {.name = "diffusion"});
    memory::Arena scratch(pool, {"step", 16 << 20, 0});
#ifdef ARENAFEM_WITH_MPI
    if (mpi) {
      const memory::Communicator comm;
      if (comm.size() > 1) {
        run_distributed(comm, options, pool, scratch);
        return 0;
      }
    }
#endif
    const std::int32_t n = options.resolution;
    if (options.mesh.empty() && options.geometry == "grid" && options.dimension == 2) {
      const geometry::Grid2D grid({0.0, 0.0}, {1.0 / n, 1.0 / n}, {n, n});
      run(grid, options, "grid 2D", geometry::box_side_tag_names(2), pool, scratch);
    } else if (options.mesh.empty() && options.geometry == "grid") {
      const geometry::Grid3D grid({0.0, 0.0, 0.0}, {1.0 / n, 1.0 / n, 1.0 / n}, {n, n, n});
      run(grid, options, "grid 3D", geometry::box_side_tag_names(3), pool, scratch);
    } else {
      const auto [data, name] = whole_mesh(options);
      run_data(data, options, name, pool, scratch);
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
