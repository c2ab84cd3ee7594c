#pragma once

/// @file
/// The diffusion problem -div(nu grad u) = f on a geometry with Dirichlet data on its whole
/// boundary, u = prod_d cos(pi x_d) manufactured: assemble, impose, solve, measure the error.
/// Used by the diffusion app and its convergence tests.

#include <chrono>
#include <cmath>
#include <numbers>
#include <string>

#include "fem/boundary.hpp"
#include "fem/bsr_matrix.hpp"
#include "fem/field.hpp"
#include "fem/integrate.hpp"
#include "fem/interpolate.hpp"
#include "fem/sample.hpp"
#include "fem/solvers.hpp"
#include "fem/space.hpp"
#include "fem/space_restriction.hpp"
#include "geometry/grid.hpp"
#include "geometry/mesh.hpp"
#include "geometry/vtu.hpp"
#include "memory/arena.hpp"
#include "memory/copy.hpp"
#include "memory/pool.hpp"
#include "quadrature/domain.hpp"
#include "quadrature/quadrature.hpp"

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

/// What one solve measured.
struct Report {
  std::int32_t cells = 0;
  std::int64_t dofs = 0;
  double l2_error = 0.0;
  double h1_error = 0.0;  ///< the H1 seminorm of the error
  fem::SolveResult solve;
  double assemble_seconds = 0.0;
  double solve_seconds = 0.0;
};

/// Solves the problem on `geometry` with degree-`Degree` Lagrange elements to a relative residual
/// of `tolerance`; writes `vtu` (vertex values of u_h and u) when not empty.
template <class G, int Degree>
Report solve(const G& geometry, double viscosity, memory::Pool& pool, memory::Arena& scratch,
             double tolerance = 1e-10, const std::string& vtu = {}) {
  constexpr int dim = G::dimension;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  using Space = fem::LagrangeSpace<G, Degree>;
  const Space space(geometry, pool, scratch);
  const quadrature::Cells cells(geometry);
  const quadrature::RegularQuadrature quadrature(cells, 2 * Degree, pool);
  const fem::SpaceRestriction restriction(space, cells, scratch);

  fem::BsrMatrix<1> matrix(pool);
  fem::integrate(matrix, quadrature, restriction, restriction, DiffusionForm{viscosity}, scratch);
  fem::DiscreteField u(space);
  const auto dofs = static_cast<std::size_t>(space.dof_count());
  auto rhs = memory::borrow_temporary<double>(pool, dofs, "diffusion.rhs");
  const quadrature::RegularQuadrature source_quadrature(cells, 2 * Degree + 2, pool);
  fem::integrate(rhs.view(), source_quadrature, restriction, SourceForm<dim>{viscosity}, scratch);
  auto boundary = memory::borrow_temporary<std::uint8_t>(pool, dofs, "diffusion.boundary");
  fem::boundary_dofs(space, boundary.view(), scratch);
  fem::interpolate(u, ExactValue<dim>{}, scratch);
  fem::project_dirichlet(matrix, rhs.view(), boundary.view(), u.dofs(), scratch);
  const auto assembled = Clock::now();

  Report report;
  report.solve = fem::cg(matrix, rhs.view(), u.dofs(), scratch,
                         {.tolerance = tolerance,
                          .max_iterations = 20000,
                          .preconditioner = fem::Preconditioner::jacobi});
  const auto solved = Clock::now();
  const quadrature::RegularQuadrature error_quadrature(cells, 2 * Degree + 4, pool);
  const Eigen::Vector2d errors = fem::integrate(error_quadrature, SquaredErrors<dim>{}, scratch, u);
  report.cells = geometry.cell_count();
  report.dofs = space.dof_count();
  report.l2_error = std::sqrt(errors[0]);
  report.h1_error = std::sqrt(errors[1]);
  report.assemble_seconds = std::chrono::duration<double>(assembled - start).count();
  report.solve_seconds = std::chrono::duration<double>(solved - assembled).count();

  if (!vtu.empty()) {
    // Vertices are the space's first nodes, so the first vertex_count dofs are u_h at vertices.
    const geometry::MeshData mesh = geometry.to_mesh_data();
    std::vector<double> values(dofs);
    memory::copy_to_host(std::span<double>(values), memory::ArrayView<const double>(u.dofs()),
                         pool.stream());
    pool.stream().synchronize();
    const auto vertices = static_cast<std::size_t>(geometry.vertex_count());
    std::vector<double> uh(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(vertices));
    std::vector<double> exact(vertices);
    for (std::size_t v = 0; v < vertices; ++v) {
      Eigen::Matrix<double, dim, 1> x;
      for (int d = 0; d < dim; ++d) {
        x[d] = mesh.positions[v * dim + static_cast<std::size_t>(d)];
      }
      exact[v] = Exact<dim>{}(x);
    }
    geometry::write_vtu(vtu, mesh, {{"u", 1, uh}, {"u_exact", 1, exact}}, {});
  }
  return report;
}

// Compiled once in diffusion.cpp, for every geometry and degree the app offers.
#define AFEM_DIFFUSION_SOLVE(G, Degree)                                                            \
  extern template Report solve<G, Degree>(const G&, double, memory::Pool&, memory::Arena&, double, \
                                          const std::string&);
AFEM_DIFFUSION_FOR_EACH_CASE(AFEM_DIFFUSION_SOLVE)
#undef AFEM_DIFFUSION_SOLVE

}  // namespace afem::apps::diffusion
