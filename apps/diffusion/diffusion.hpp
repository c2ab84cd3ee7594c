#pragma once

/// @file
/// The diffusion problem -div(nu grad u) = f on a geometry: either manufactured (u = prod_d
/// cos(pi x_d), Dirichlet data on the whole boundary or on tagged sides and the exact flux on the
/// others; the errors are measured) or with a constant source, u = 0 on tagged Dirichlet sides and
/// constant fluxes on tagged Neumann sides. Assemble, impose, solve. Used by the diffusion app and
/// its tests.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "arenafem/fem/boundary.hpp"
#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/field.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/interpolate.hpp"
#include "arenafem/fem/linear_operator.hpp"
#include "arenafem/fem/multigrid.hpp"
#include "arenafem/fem/sample.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/fem/stencil_operator.hpp"
#include "arenafem/fem/vector_ops.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/geometry/side_tag_set.hpp"
#include "arenafem/geometry/tagged_boundary.hpp"
#include "arenafem/geometry/vtu.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/quadrature.hpp"

/// Calls X(Geometry, Degree) for every case solve() is compiled for.
// clang-format off
#define AFEM_DIFFUSION_FOR_EACH_CASE(X)                                                  \
  X(geometry::Grid2D, 1) X(geometry::Grid2D, 2) X(geometry::Grid3D, 1)                   \
  X(geometry::Grid3D, 2) X(geometry::Trimesh, 1) X(geometry::Trimesh, 2)                 \
  X(geometry::Quadmesh, 1) X(geometry::Quadmesh, 2) X(geometry::Tetmesh, 1)              \
  X(geometry::Tetmesh, 2) X(geometry::Hexmesh, 1) X(geometry::Hexmesh, 2)
// clang-format on

namespace afem::apps::diffusion {

/// The manufactured solution u(x) = prod_d cos(pi x_d), its gradient and -Laplacian.
template <int D>
struct Exact {
  using Point = Eigen::Matrix<double, D, 1>;
  AFEM_HOST_DEVICE double operator()(const Point& x) const {
    double value = 1.0;
    for (int d = 0; d < D; ++d) {
      value *= std::cos(std::numbers::pi * x[d]);
    }
    return value;
  }
  AFEM_HOST_DEVICE Point gradient(const Point& x) const {
    Point g;
    for (int d = 0; d < D; ++d) {
      double value = -std::numbers::pi * std::sin(std::numbers::pi * x[d]);
      for (int e = 0; e < D; ++e) {
        value *= e == d ? 1.0 : std::cos(std::numbers::pi * x[e]);
      }
      g[d] = value;
    }
    return g;
  }
  AFEM_HOST_DEVICE double minus_laplacian(const Point& x) const {
    return D * std::numbers::pi * std::numbers::pi * (*this)(x);
  }
};

/// nu grad u . grad v
struct DiffusionForm {
  double viscosity = 1.0;
  static constexpr bool symmetric = true;
  template <class Sample, class Test, class Trial>
  AFEM_HOST_DEVICE double operator()(const Sample& /*s*/, const Test& v, const Trial& u) const {
    return viscosity * fem::dot(u.grad(), v.grad());
  }
};

/// f v with f = -div(nu grad u_exact)
template <int D>
struct SourceForm {
  double viscosity = 1.0;
  template <class Test>
  AFEM_HOST_DEVICE double operator()(const fem::Sample<D>& s, const Test& v) const {
    return viscosity * Exact<D>{}.minus_laplacian(s.x) * v.value();
  }
};

/// u_exact at the sample (for the Dirichlet values).
template <int D>
struct ExactValue {
  AFEM_HOST_DEVICE double operator()(const fem::Sample<D>& s) const { return Exact<D>{}(s.x); }
};

/// |u_h - u|^2 and |grad u_h - grad u|^2
template <int D>
struct SquaredErrors {
  template <class Field>
  AFEM_HOST_DEVICE Eigen::Matrix<double, 2, 1> operator()(const fem::Sample<D>& s,
                                                          const Field& u) const {
    const double e = u.value(s) - Exact<D>{}(s.x);
    return {e * e, (u.grad(s) - Exact<D>{}.gradient(s.x)).squaredNorm()};
  }
};

/// nu grad u_exact . n v: the manufactured solution's flux through a side.
template <int D>
struct ExactFluxForm {
  double viscosity = 1.0;
  template <class Test>
  AFEM_HOST_DEVICE double operator()(const fem::Sample<D>& s, const Test& v) const {
    return viscosity * Exact<D>{}.gradient(s.x).dot(s.normal) * v.value();
  }
};

/// A constant times v (a constant source, or constant Neumann data on a side).
struct ConstantForm {
  double value = 0.0;
  template <class Sample, class Test>
  AFEM_HOST_DEVICE double operator()(const Sample& /*s*/, const Test& v) const {
    return value * v.value();
  }
};

/// The data of a diffusion problem: the coefficient, where the Dirichlet sides are and either the
/// manufactured solution or a constant source with boundary data.
struct Problem {
  double viscosity = 1.0;
  /// The Dirichlet sides by tag; empty: the whole boundary.
  geometry::SideTagSet dirichlet;
  /// Without a source: the manufactured solution, u = u_exact on the Dirichlet sides and its flux
  /// nu grad u_exact . n on the others. With a source f (a constant): u = 0 on the Dirichlet
  /// sides, nu du/dn = g on the sides of each `neumann` (tag, g) and 0 on the other sides.
  std::optional<double> source;
  std::vector<std::pair<std::int32_t, double>> neumann;

  /// Throws afem::Error for Neumann data without a source, without Dirichlet tags (the whole
  /// boundary would be Dirichlet), on a Dirichlet tag or twice on one tag, and for a viscosity
  /// that is not positive.
  void check() const {
    AFEM_EXPECTS(viscosity > 0.0,
                 "diffusion: the viscosity is " + std::to_string(viscosity) + ", expected > 0");
    if (neumann.empty()) {
      return;
    }
    AFEM_EXPECTS(source.has_value(),
                 "diffusion: Neumann data needs a source (the manufactured problem takes its "
                 "flux from the exact solution)");
    AFEM_EXPECTS(!dirichlet.empty(),
                 "diffusion: Neumann data needs the Dirichlet sides named (without them the whole "
                 "boundary is Dirichlet)");
    for (std::size_t i = 0; i < neumann.size(); ++i) {
      const std::int32_t tag = neumann[i].first;
      AFEM_EXPECTS(!dirichlet.contains(tag),
                   "diffusion: side tag " + std::to_string(tag) + " is both Dirichlet and Neumann");
      for (std::size_t j = 0; j < i; ++j) {
        AFEM_EXPECTS(neumann[j].first != tag,
                     "diffusion: side tag " + std::to_string(tag) + " has Neumann data twice");
      }
    }
  }
};

/// The preconditioner of the CG solve: none, Jacobi, or a multigrid V-cycle (geometric on the
/// vertices of a grid with degree 1, smoothed aggregation otherwise).
enum class Preconditioner : std::uint8_t { none, jacobi, multigrid };

/// How to solve and what to keep.
struct Settings {
  double tolerance = 1e-10;  ///< CG relative residual
  Preconditioner preconditioner = Preconditioner::jacobi;
  std::string vtu;             ///< when not empty, vertex values of u_h (and u) are written there
  bool vertex_values = false;  ///< keep u_h at the vertices in the report
};

/// The CG options of `settings` (Jacobi for the multigrid case too: solve() passes the cycle
/// itself).
inline fem::SolveOptions solve_options(const Settings& settings) {
  return {.tolerance = settings.tolerance,
          .max_iterations = 20000,
          .preconditioner = settings.preconditioner == Preconditioner::none
                                ? fem::Preconditioner::none
                                : fem::Preconditioner::jacobi};
}

/// What one solve measured.
struct Report {
  std::int32_t cells = 0;
  std::int64_t dofs = 0;
  double l2_error = 0.0;  ///< manufactured problems only (NaN otherwise)
  double h1_error = 0.0;  ///< the H1 seminorm of the error; manufactured problems only
  double minimum = 0.0;   ///< of u_h over the dofs
  double maximum = 0.0;
  std::vector<double> vertex_values;  ///< u_h at the vertices, when Settings::vertex_values
  fem::SolveResult solve;
  double assemble_seconds = 0.0;
  double solve_seconds = 0.0;  ///< the multigrid setup included
  double setup_seconds = 0.0;  ///< of the multigrid hierarchy (0 without)
  int levels = 0;              ///< of the multigrid hierarchy (0 without)
  bool geometric_multigrid = false;
};

/// Solves `problem` on `geometry` with degree-`Degree` Lagrange elements and CG, preconditioned as
/// `settings` says.
/// Throws afem::Error for inconsistent data (Problem::check) and for a side tag no boundary side
/// has.
template <class G, int Degree>
Report solve(const G& geometry, const Problem& problem, memory::Pool& pool, memory::Arena& scratch,
             const Settings& settings = {}) {
  constexpr int dim = G::dimension;
  using Clock = std::chrono::steady_clock;
  problem.check();
  const auto start = Clock::now();
  using Space = fem::LagrangeSpace<G, Degree>;
  const Space space(geometry, pool, scratch);
  const quadrature::Cells cells(geometry);
  const quadrature::RegularQuadrature quadrature(cells, 2 * Degree, pool);
  const fem::SpaceRestriction restriction(space, cells, scratch);
  const double nu = problem.viscosity;

  fem::BsrMatrix<1> matrix(pool);
  fem::integrate(matrix, quadrature, restriction, restriction, DiffusionForm{nu}, scratch);
  fem::DiscreteField u(space);
  const auto dofs = static_cast<std::size_t>(space.dof_count());
  auto rhs = memory::borrow_temporary<double>(pool, dofs, "diffusion.rhs");
  const quadrature::RegularQuadrature source_quadrature(cells, 2 * Degree + 2, pool);
  auto boundary = memory::borrow_temporary<std::uint8_t>(pool, dofs, "diffusion.boundary");
  if (problem.dirichlet.empty()) {
    fem::boundary_dofs(space, boundary.view(), scratch);
  } else {
    fem::boundary_dofs(space, boundary.view(), problem.dirichlet, scratch);
  }
  if (problem.source) {
    fem::integrate(rhs.view(), source_quadrature, restriction, ConstantForm{*problem.source},
                   scratch);
    auto load = memory::borrow_temporary<double>(scratch, dofs, "diffusion.neumann");
    for (const auto& [tag, value] : problem.neumann) {
      const geometry::TaggedBoundary<G> sides(geometry, {tag}, pool, scratch);
      const quadrature::BoundarySides domain(sides);
      const quadrature::RegularQuadrature side_quadrature(domain, 2 * Degree, pool);
      const fem::SpaceRestriction side_restriction(space, domain, scratch);
      fem::integrate(load.view(), side_quadrature, side_restriction, ConstantForm{value}, scratch);
      fem::axpby(1.0, memory::ArrayView<const double>(load.view()), 1.0, rhs.view(), scratch);
    }
    fem::fill(u.dofs(), 0.0, scratch);
  } else {
    fem::integrate(rhs.view(), source_quadrature, restriction, SourceForm<dim>{nu}, scratch);
    if (!problem.dirichlet.empty()) {
      // The exact flux on every boundary side; on a Dirichlet side it only reaches Dirichlet rows,
      // which project_dirichlet replaces.
      auto load = memory::borrow_temporary<double>(scratch, dofs, "diffusion.neumann");
      const quadrature::BoundarySides domain(geometry);
      const quadrature::RegularQuadrature side_quadrature(domain, 2 * Degree + 2, pool);
      const fem::SpaceRestriction side_restriction(space, domain, scratch);
      fem::integrate(load.view(), side_quadrature, side_restriction, ExactFluxForm<dim>{nu},
                     scratch);
      fem::axpby(1.0, memory::ArrayView<const double>(load.view()), 1.0, rhs.view(), scratch);
    }
    fem::interpolate(u, ExactValue<dim>{}, scratch);
  }
  fem::project_dirichlet(matrix, rhs.view(), boundary.view(), u.dofs(), scratch);
  const auto assembled = Clock::now();

  Report report;
  const fem::SolveOptions options = solve_options(settings);
  constexpr bool on_grid = Degree == 1 && std::is_same_v<G, geometry::Grid<dim>>;
  const memory::ArrayView<const double> load(rhs.view());
  // CG's products: on a grid's vertices through the grid's stencil (the same bits, fewer bytes).
  if (settings.preconditioner == Preconditioner::multigrid) {
    const fem::Multigrid<1> multigrid = [&] {
      if constexpr (on_grid) {
        return fem::Multigrid<1>(matrix, geometry.resolution(), scratch);
      } else {
        return fem::Multigrid<1>(matrix, scratch);
      }
    }();
    report.setup_seconds = std::chrono::duration<double>(Clock::now() - assembled).count();
    report.levels = multigrid.level_count();
    report.geometric_multigrid = on_grid;
    const fem::StencilOperator* stencil = multigrid.fine_stencil();
    report.solve =
        stencil != nullptr
            ? fem::cg(*stencil, load, u.dofs(), scratch, options, multigrid)
            : fem::cg(fem::as_operator(matrix), load, u.dofs(), scratch, options, multigrid);
  } else if constexpr (on_grid) {
    report.solve = fem::cg(fem::StencilOperator(matrix, geometry.resolution(), scratch), load,
                           u.dofs(), scratch, options);
  } else {
    report.solve = fem::cg(fem::as_operator(matrix), load, u.dofs(), scratch, options);
  }
  const auto solved = Clock::now();
  report.cells = geometry.cell_count();
  report.dofs = space.dof_count();
  report.assemble_seconds = std::chrono::duration<double>(assembled - start).count();
  report.solve_seconds = std::chrono::duration<double>(solved - assembled).count();
  report.l2_error = std::numeric_limits<double>::quiet_NaN();
  report.h1_error = std::numeric_limits<double>::quiet_NaN();
  if (!problem.source) {
    const quadrature::RegularQuadrature error_quadrature(cells, 2 * Degree + 4, pool);
    const Eigen::Vector2d errors =
        fem::integrate(error_quadrature, SquaredErrors<dim>{}, scratch, u);
    report.l2_error = std::sqrt(errors[0]);
    report.h1_error = std::sqrt(errors[1]);
  }

  std::vector<double> values(dofs);
  memory::copy_to_host(std::span<double>(values), memory::ArrayView<const double>(u.dofs()),
                       pool.stream());
  pool.stream().synchronize();
  report.minimum = *std::min_element(values.begin(), values.end());
  report.maximum = *std::max_element(values.begin(), values.end());
  // Vertices are the space's first nodes, so the first vertex_count dofs are u_h at vertices.
  values.resize(static_cast<std::size_t>(geometry.vertex_count()));
  if (!settings.vtu.empty()) {
    const geometry::MeshData mesh = geometry.to_mesh_data();
    std::vector<geometry::VtuArray> fields = {{"u", 1, values}};
    std::vector<double> exact;
    if (!problem.source) {
      exact.resize(values.size());
      for (std::size_t v = 0; v < values.size(); ++v) {
        Eigen::Matrix<double, dim, 1> x;
        for (int d = 0; d < dim; ++d) {
          x[d] = mesh.positions[v * dim + static_cast<std::size_t>(d)];
        }
        exact[v] = Exact<dim>{}(x);
      }
      fields.push_back({"u_exact", 1, exact});
    }
    geometry::write_vtu(settings.vtu, mesh, fields, {});
  }
  if (settings.vertex_values) {
    report.vertex_values = std::move(values);
  }
  return report;
}

// Compiled once in diffusion.cpp, for every geometry and degree the app offers.
#define AFEM_DIFFUSION_SOLVE(G, Degree)                                                            \
  extern template Report solve<G, Degree>(const G&, const Problem&, memory::Pool&, memory::Arena&, \
                                          const Settings&);
AFEM_DIFFUSION_FOR_EACH_CASE(AFEM_DIFFUSION_SOLVE)
#undef AFEM_DIFFUSION_SOLVE

}  // namespace afem::apps::diffusion
