#pragma once

/// @file
/// The diffusion problem of diffusion.hpp over MPI ranks (ARENAFEM_MPI): rank 0 holds the mesh,
/// METIS partitions it, each rank assembles over its owned cells, and CG with Jacobi solves the
/// distributed system. The report is the whole problem's, the same on every rank.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "arenafem/apps/diffusion/diffusion.hpp"
#include "arenafem/fem/distributed_dofs.hpp"
#include "arenafem/fem/distributed_matrix.hpp"
#include "arenafem/geometry/distributed_mesh.hpp"
#include "arenafem/geometry/partition.hpp"
#include "arenafem/memory/communicator.hpp"

/// Calls X(CellType, Degree) for every case solve_distributed() is compiled for.
// clang-format off
#define AFEM_DIFFUSION_FOR_EACH_DISTRIBUTED_CASE(X)                                            \
  X(geometry::CellType::triangle, 1) X(geometry::CellType::triangle, 2)                        \
  X(geometry::CellType::quadrilateral, 1) X(geometry::CellType::quadrilateral, 2)              \
  X(geometry::CellType::tetrahedron, 1) X(geometry::CellType::tetrahedron, 2)                  \
  X(geometry::CellType::hexahedron, 1) X(geometry::CellType::hexahedron, 2)
// clang-format on

namespace afem::apps::diffusion {

/// The side tags of `mesh` (a rank's part) that are in `wanted`, or all of them when `all`.
inline geometry::SideTagSet local_side_tags(const geometry::MeshData& mesh,
                                            const geometry::SideTagSet& wanted, bool all) {
  std::vector<std::int32_t> tags(mesh.side_tags.begin(), mesh.side_tags.end());
  std::sort(tags.begin(), tags.end());
  tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
  std::erase_if(tags, [&](std::int32_t tag) { return !all && !wanted.contains(tag); });
  return geometry::SideTagSet(tags);
}

/// solve() over the ranks of `comm` for the mesh `global` (read on rank 0 only) with
/// degree-`Degree` Lagrange elements. Preconditioners: none or Jacobi (multigrid is refused).
/// Throws afem::Error, on every rank, for what solve() refuses and for a failure on any rank.
template <geometry::CellType Type, int Degree>
Report solve_distributed(const memory::Communicator& comm, const geometry::MeshData& global,
                         const Problem& problem, memory::Pool& pool, memory::Arena& scratch,
                         const Settings& settings = {}) {
  using Mesh = geometry::Mesh<Type>;
  using Space = fem::LagrangeSpace<Mesh, Degree>;
  constexpr int dim = Mesh::dimension;
  using Clock = std::chrono::steady_clock;
  comm.collective([&] {
    problem.check();
    AFEM_EXPECTS(settings.preconditioner != Preconditioner::multigrid,
                 "diffusion: multigrid runs on one process; over MPI ranks use --preconditioner "
                 "jacobi or none");
    AFEM_EXPECTS(settings.vtu.empty() && !settings.vertex_values,
                 "diffusion: --out writes from one process; run without mpirun to write it");
  });
  const auto start = Clock::now();
  const geometry::LocalMeshData part = geometry::distribute_mesh(comm, global);
  std::optional<Mesh> mesh;
  std::optional<Space> space;
  comm.collective([&] {
    mesh.emplace(part.mesh, pool, scratch);
    space.emplace(*mesh, pool, scratch);
  });
  const fem::DistributedDofs dofs = fem::distribute_dofs(comm, part, *space, global, pool, scratch);
  const double nu = problem.viscosity;

  // Everything below integrates over the owned cells only. Local work that can fail runs in
  // collective() so that a failure stops every rank.
  std::optional<geometry::CellBasedGeometryPartition<Mesh>> owned_cells;
  std::optional<quadrature::Cells<Mesh>> cells;
  std::optional<fem::SpaceRestriction<Space, quadrature::Cells<Mesh>>> restriction;
  fem::BsrMatrix<1> local(pool);
  comm.collective([&] {
    owned_cells.emplace(*mesh, pool);
    geometry::select_owned_cells(*owned_cells, part.owned_cells, pool, scratch);
    cells.emplace(*owned_cells);
    restriction.emplace(*space, *cells, scratch);
    const quadrature::RegularQuadrature quadrature(*cells, 2 * Degree, pool);
    fem::integrate(local, quadrature, *restriction, *restriction, DiffusionForm{nu}, scratch);
  });
  fem::DistributedMatrix<1> matrix(dofs, local, scratch);

  // The load of the owned cells, and the Dirichlet dofs marked from their sides (as 1.0), each
  // summed at the owners.
  const auto space_dofs = static_cast<std::size_t>(space->dof_count());
  const auto owned = static_cast<std::size_t>(dofs.owned_count());
  std::optional<fem::DiscreteField<Space>> field;
  std::optional<memory::Temporary<double>> load;
  std::optional<memory::Temporary<double>> marked_sides;
  std::optional<memory::Temporary<double>> rhs;
  std::optional<memory::Temporary<double>> marked;
  std::optional<memory::Temporary<double>> x;
  std::optional<memory::Temporary<double>> ghosts;
  std::optional<memory::Temporary<std::uint8_t>> mask;
  comm.collective([&] {
    field.emplace(*space);
    load.emplace(memory::borrow_temporary<double>(pool, space_dofs, "diffusion.load"));
    marked_sides.emplace(
        memory::borrow_temporary<double>(pool, space_dofs, "diffusion.marked_sides"));
    rhs.emplace(memory::borrow_temporary<double>(pool, owned, "diffusion.rhs"));
    marked.emplace(memory::borrow_temporary<double>(pool, owned, "diffusion.marked"));
    x.emplace(memory::borrow_temporary<double>(pool, owned, "diffusion.x"));
    ghosts.emplace(memory::borrow_temporary<double>(
        pool, static_cast<std::size_t>(dofs.ghost_count()), "diffusion.ghosts"));
    mask.emplace(memory::borrow_temporary<std::uint8_t>(pool, owned, "diffusion.mask"));
    fem::DiscreteField<Space>& u = *field;
    const memory::ArrayView<double> f = load->view();
    const auto add_side_load = [&](const geometry::SideTagSet& tags, auto form, int order) {
      if (tags.empty()) {
        return;
      }
      auto side_load = memory::borrow_temporary<double>(scratch, space_dofs, "diffusion.neumann");
      const geometry::TaggedBoundary<Mesh> sides(*mesh, tags, pool, scratch);
      const quadrature::BoundarySides domain(sides);
      const quadrature::RegularQuadrature side_quadrature(domain, order, pool);
      const fem::SpaceRestriction side_restriction(*space, domain, scratch);
      fem::integrate(side_load.view(), side_quadrature, side_restriction, form, scratch);
      fem::axpby(1.0, memory::ArrayView<const double>(side_load.view()), 1.0, f, scratch);
    };
    const quadrature::RegularQuadrature source_quadrature(*cells, 2 * Degree + 2, pool);
    if (problem.source) {
      fem::integrate(f, source_quadrature, *restriction, ConstantForm{*problem.source}, scratch);
      for (const auto& [tag, value] : problem.neumann) {
        add_side_load(local_side_tags(part.mesh, geometry::SideTagSet{tag}, false),
                      ConstantForm{value}, 2 * Degree);
      }
      fem::fill(u.dofs(), 0.0, scratch);
    } else {
      fem::integrate(f, source_quadrature, *restriction, SourceForm<dim>{nu}, scratch);
      if (!problem.dirichlet.empty()) {
        add_side_load(local_side_tags(part.mesh, {}, true), ExactFluxForm<dim>{nu}, 2 * Degree + 2);
      }
      fem::interpolate(u, ExactValue<dim>{}, scratch);
    }
    const geometry::SideTagSet dirichlet =
        local_side_tags(part.mesh, problem.dirichlet, problem.dirichlet.empty());
    const memory::ArrayView<double> sides = marked_sides->view();
    fem::fill(sides, 0.0, scratch);
    if (!dirichlet.empty()) {
      auto boundary =
          memory::borrow_temporary<std::uint8_t>(scratch, space_dofs, "diffusion.boundary");
      fem::boundary_dofs(*space, boundary.view(), dirichlet, scratch);
      for (std::size_t i = 0; i < space_dofs; ++i) {
        sides[i] = boundary.view()[i] != 0 ? 1.0 : 0.0;
      }
    }
  });
  dofs.accumulate(load->view(), rhs->view());
  dofs.accumulate(marked_sides->view(), marked->view());
  for (std::size_t i = 0; i < owned; ++i) {
    mask->view()[i] = marked->view()[i] > 0.0 ? 1 : 0;
  }
  fem::DiscreteField<Space>& u = *field;
  dofs.gather_owned(u.dofs(), x->view());
  matrix.project_dirichlet(rhs->view(), mask->view(), x->view(), scratch);
  const auto assembled = Clock::now();

  Report report;
  report.solve = fem::cg(matrix, memory::ArrayView<const double>(rhs->view()), x->view(), scratch,
                         solve_options(settings));
  const auto solved = Clock::now();
  report.cells = static_cast<std::int32_t>(part.global_cell_count);
  report.dofs = dofs.global_nodes();
  report.assemble_seconds = std::chrono::duration<double>(assembled - start).count();
  report.solve_seconds = std::chrono::duration<double>(solved - assembled).count();

  dofs.update_ghosts(x->view(), ghosts->view());
  dofs.to_space(x->view(), ghosts->view(), u.dofs());
  report.l2_error = std::numeric_limits<double>::quiet_NaN();
  report.h1_error = std::numeric_limits<double>::quiet_NaN();
  if (!problem.source) {
    const quadrature::RegularQuadrature error_quadrature(*cells, 2 * Degree + 4, pool);
    const Eigen::Vector2d errors =
        fem::integrate(error_quadrature, SquaredErrors<dim>{}, scratch, u);
    report.l2_error = std::sqrt(comm.sum(errors[0]));
    report.h1_error = std::sqrt(comm.sum(errors[1]));
  }
  const memory::ArrayView<const double> values = x->view();
  double lowest = std::numeric_limits<double>::infinity();
  double highest = -std::numeric_limits<double>::infinity();
  for (const double value : values) {
    lowest = std::min(lowest, value);
    highest = std::max(highest, value);
  }
  report.minimum = -comm.max(-lowest);
  report.maximum = comm.max(highest);
  return report;
}

// Compiled once in distributed.cpp.
#define AFEM_DIFFUSION_SOLVE_DISTRIBUTED(Type, Degree)                                       \
  extern template Report solve_distributed<Type, Degree>(                                    \
      const memory::Communicator&, const geometry::MeshData&, const Problem&, memory::Pool&, \
      memory::Arena&, const Settings&);
AFEM_DIFFUSION_FOR_EACH_DISTRIBUTED_CASE(AFEM_DIFFUSION_SOLVE_DISTRIBUTED)
#undef AFEM_DIFFUSION_SOLVE_DISTRIBUTED

}  // namespace afem::apps::diffusion
