// Embeds the finite elements: -Δu = f on a triangle mesh read from a Gmsh file, P2, with
// u = x² + y² (which P2 holds exactly), so that the error shows the solve is right.
#include <arenafem/fem/boundary.hpp>
#include <arenafem/fem/field.hpp>
#include <arenafem/fem/integrate.hpp>
#include <arenafem/fem/interpolate.hpp>
#include <arenafem/fem/solvers.hpp>
#include <arenafem/fem/space.hpp>
#include <arenafem/fem/space_restriction.hpp>
#include <arenafem/geometry/gmsh.hpp>
#include <arenafem/geometry/mesh.hpp>
#include <arenafem/memory/copy.hpp>
#include <arenafem/memory/device_resource.hpp>
#include <arenafem/quadrature/domain.hpp>
#include <arenafem/quadrature/quadrature.hpp>

#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

namespace fem = afem::fem;
namespace geo = afem::geometry;
namespace mem = afem::memory;
namespace quad = afem::quadrature;

struct Laplacian {
  static constexpr bool symmetric = true;
  template <class S, class V, class U>
  AFEM_HOST_DEVICE double operator()(const S&, const V& v, const U& u) const {
    return fem::dot(u.grad(), v.grad());
  }
};

/// f = -Δ(x² + y²) = -4.
struct Load {
  template <class S, class V>
  AFEM_HOST_DEVICE double operator()(const S&, const V& v) const {
    return -4.0 * v.value();
  }
};

struct Exact {
  AFEM_HOST_DEVICE double operator()(const fem::Sample<2>& s) const {
    return s.x[0] * s.x[0] + s.x[1] * s.x[1];
  }
};

struct SquaredError {
  template <class Field>
  AFEM_HOST_DEVICE double operator()(const fem::Sample<2>& s, const Field& u) const {
    const double e = u.value(s) - Exact{}(s);
    return e * e;
  }
};

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: embed_poisson MESH.msh\n");
    return 2;
  }
  mem::Pool pool(mem::device_resource(), {.name = "embed.poisson"});
  mem::Arena step(pool, {"embed.step", 16 << 20, 0});
  const geo::Trimesh mesh(geo::read_gmsh(argv[1]), pool, step);
  const fem::LagrangeSpace<geo::Trimesh, 2> space(mesh, pool, step);
  const quad::Cells cells(mesh);
  const quad::RegularQuadrature q(cells, 4, pool);
  const fem::SpaceRestriction restriction(space, cells, step);

  fem::BsrMatrix<1> a(pool);
  fem::integrate(a, q, restriction, restriction, Laplacian{}, step);
  const auto dofs = static_cast<std::size_t>(space.dof_count());
  auto b = mem::borrow_temporary<double>(pool, dofs, "embed.rhs");
  fem::integrate(b.view(), q, restriction, Load{}, step);
  auto boundary = mem::borrow_temporary<std::uint8_t>(pool, dofs, "embed.boundary");
  fem::boundary_dofs(space, boundary.view(), step);
  fem::DiscreteField g(space);
  fem::interpolate(g, Exact{}, step);  // the boundary values
  fem::project_dirichlet(a, b.view(), boundary.view(), g.dofs(), step);
  fem::DiscreteField u(space);
  const std::vector<double> zeros(dofs, 0.0);  // CG starts from 0
  mem::copy_to_device(u.dofs(), std::span<const double>(zeros), pool.stream());
  const fem::SolveResult solve = fem::cg(a, b.view(), u.dofs(), step, {.tolerance = 1e-12});
  const double error = std::sqrt(fem::integrate(q, SquaredError{}, step, u));
  std::printf("embed poisson: %d triangles, %d dofs, CG %d iterations, L2 error %.2e\n",
              mesh.cell_count(), space.dof_count(), solve.iterations, error);
  if (!(error < 1e-8) || solve.iterations == 0) {
    std::fprintf(stderr, "embed poisson: the error is too large\n");
    return 1;
  }
  std::printf("embed poisson: ok\n");
  return 0;
}
