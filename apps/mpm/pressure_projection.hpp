#pragma once

/// @file
/// PressureProjection<D>: makes the grid velocity of the incompressible fluid discretely
/// divergence-free. The fluid fills each grid cell to a fraction theta_c (the particles' volume in
/// it over the cell's, at most 1). With B the divergence over the fluid,
/// B(q, phi_i) = sum_c theta_c int_c q div phi_i for the Q1 pressure functions q (on the grid's
/// vertices, whatever the velocity's basis: with quadratic B-spline velocities the pair is stable,
/// where B-spline pressures would leave pressure modes that no velocity sees) and the velocity
/// functions phi_i, M the lumped mass rho sum_c theta_c int_c phi_i, and W = M^-1 on the free
/// velocity components (0 on the normal components of wall nodes and on nodes without fluid), it
/// solves B W B^T p = -(1/dt) B u* by CG with Jacobi, p = 0 on nodes without fluid, and sets
/// u = u* + dt W B^T p. Then B u = -dt (B W B^T p - rhs): the velocity is divergence-free to the
/// solver's tolerance, and a fluid at rest in gravity is in exact discrete balance. The mass and
/// divergence come from the cells, not the particles: weighting them by the particles' own
/// positions makes small position errors grow (at a rate of sqrt(g / dx)). B is one BSR matrix of
/// 1 x D blocks, assembled over the grid each step (the pattern is built once), and B^T is its
/// transpose, refreshed in place; the solve applies the operator B W B^T with the fixed pressures
/// held, composed from B, W and B^T (formed explicitly it would couple nodes two cells apart),
/// preconditioned by the diagonal of B W B^T.
/// Used by Simulation<D> for the fluid on quadratic B-spline velocities (the Q1 fluid is staggered:
/// StaggeredVelocity and MacProjection); compiled by nvcc in the CUDA build.

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "arenafem/apps/mpm/grid_nodes.hpp"
#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/component_restriction.hpp"
#include "arenafem/fem/field.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/linear_operator.hpp"
#include "arenafem/fem/sample.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/fem/vector_ops.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/quadrature.hpp"

namespace afem::apps::mpm {

/// CG figures of the last projection and the discrete divergence it left: ||B u|| / ||B u*||
/// over the nodes with fluid.
struct ProjectionResult {
  fem::SolveResult solve;
  double divergence = 0.0;
};

namespace detail {

/// B(q, phi) = theta q div(phi): test q (pressure, scalar), trial phi (velocity, D components).
struct DivergenceForm {
  memory::ArrayView<const double> fraction;
  template <class Sample, class Test, class Trial>
  AFEM_HOST_DEVICE double operator()(const Sample& s, const Test& q, const Trial& phi) const {
    return fraction[static_cast<std::size_t>(s.cell)] *
           (q.basis_value * phi.basis_gradient[phi.component]);
  }
};

/// The lumped mass rho theta phi_i.
struct FluidMassForm {
  static constexpr bool reads_gradients = false;
  memory::ArrayView<const double> fraction;
  double density = 0.0;
  template <class Sample, class Test>
  AFEM_HOST_DEVICE double operator()(const Sample& s, const Test& v) const {
    return density * fraction[static_cast<std::size_t>(s.cell)] * v.basis_value;
  }
};

/// The free velocity components' inverse masses W (D per velocity node). A node is without fluid
/// when its mass is at most `min_mass`; the normal component of a node within `wall_layers`
/// layers of a wall is held by the wall, at zero: a held component that moved would put into
/// B u* a part that no pressure can balance wherever a pressure mode leaves every free component
/// at rest, and CG would diverge.
template <int D>
struct MarkFreeVelocity {
  GridNodes<D> nodes;
  int wall_layers = 0;
  double min_mass = 0.0;
  memory::ArrayView<const double> mass;
  memory::ArrayView<double> velocity;
  memory::ArrayView<double> inverse_mass;
  AFEM_HOST_DEVICE void operator()(std::size_t n) const {
    const bool fluid = mass[n] > min_mass;
    double at[D];
    nodes.position(static_cast<std::int32_t>(n), at);
    for (int d = 0; d < D; ++d) {
      const std::size_t slot = n * D + static_cast<std::size_t>(d);
      const bool wall = nodes.wall_side(at[d], nodes.resolution[d], wall_layers) != 0;
      inverse_mass[slot] = fluid && !wall ? 1.0 / mass[n] : 0.0;
      if (wall) {
        velocity[slot] = 0.0;
      }
    }
  }
};

/// The pressure's Dirichlet mask: pressure nodes whose mass is at most `min_mass` (no fluid).
struct MarkFixedPressure {
  double min_mass = 0.0;
  memory::ArrayView<const double> mass;
  memory::ArrayView<std::uint8_t> fixed_pressure;
  AFEM_HOST_DEVICE void operator()(std::size_t n) const {
    fixed_pressure[n] = mass[n] > min_mass ? 0 : 1;
  }
};

/// On pressure rows without fluid (`fixed_pressure`), or whose diagonal of B W B^T is not
/// positive (no particle sees their pressure): fixed, with 1 on the diagonal.
struct FixPressureRows {
  memory::ArrayView<std::uint8_t> fixed_pressure;
  memory::ArrayView<double> diagonal;
  AFEM_HOST_DEVICE void operator()(std::size_t row) const {
    if (fixed_pressure[row] != 0 || !(diagonal[row] > 0.0)) {
      fixed_pressure[row] = 1;
      diagonal[row] = 1.0;
    }
  }
};

/// out[n] = fixed[n] ? 0 : in[n]
struct FreeEntries {
  memory::ArrayView<const double> in;
  memory::ArrayView<const std::uint8_t> fixed;
  memory::ArrayView<double> out;
  AFEM_HOST_DEVICE void operator()(std::size_t n) const { out[n] = fixed[n] != 0 ? 0.0 : in[n]; }
};

}  // namespace detail

/// Owns the Q1 pressure space, the divergence matrix B, its transpose and B's column index
/// ("BsrMatrix.*") and the pressure field (the next solve's initial guess) in the pool, with the
/// grid's quadrature and restrictions, until destroyed. project() borrows its scratch from the
/// arena and gives it back. The velocity lives in `VelocitySpace`'s vector counterpart (Q1 or
/// quadratic B-splines on the grid; `VelocitySpace` is its scalar space), the pressure on the
/// grid's vertices.
template <int D, class VelocitySpace>
class PressureProjection {
public:
  using Grid = geometry::Grid<D>;
  using Domain = quadrature::Cells<Grid>;
  using PressureSpace = fem::LagrangeSpace<Grid, 1, 1>;

  /// `wall_layers`: node layers along each wall whose normal velocity the wall holds;
  /// `density`: the fluid's; `min_mass`: nodes with at most this mass hold no fluid.
  PressureProjection(const VelocitySpace& velocity, int wall_layers, double density,
                     double min_mass, memory::Pool& pool, memory::Arena& scratch)
      : wall_layers_(wall_layers),
        density_(density),
        min_mass_(min_mass),
        pressure_space_(velocity.geometry(), pool, scratch),
        cells_(velocity.geometry()),
        quadrature_(cells_, 2, pool),
        velocity_nodes_(grid_nodes(velocity)),
        velocity_restriction_(velocity, cells_, scratch),
        pressure_restriction_(pressure_space_, cells_, scratch),
        divergence_(pool),
        gradient_(pool),
        pressure_(pressure_space_) {}

  /// Projects `velocity` (u* on entry, D values per velocity node) given the fluid `fraction` of
  /// every grid cell. Throws fem::SolverError when CG fails (the velocity then has its wall-normal
  /// components zeroed and is otherwise unchanged).
  ProjectionResult project(memory::ArrayView<double> velocity,
                           memory::ArrayView<const double> fraction, double dt,
                           memory::Arena& scratch) {
    const auto velocity_nodes =
        static_cast<std::size_t>(velocity_restriction_.space().node_count());
    const auto pressure_nodes = static_cast<std::size_t>(pressure_space_.node_count());
    AFEM_EXPECTS(fraction.size() == static_cast<std::size_t>(cells_.element_count()) &&
                     velocity.size() == velocity_nodes * D,
                 "PressureProjection: " + std::to_string(fraction.size()) + " cell fractions and " +
                     std::to_string(velocity.size()) + " velocity values for a grid of " +
                     std::to_string(cells_.element_count()) + " cells and " +
                     std::to_string(velocity_nodes) + " velocity nodes");
    fem::integrate(divergence_, quadrature_, pressure_restriction_,
                   fem::with_components<D>(velocity_restriction_), detail::DivergenceForm{fraction},
                   scratch);
    fem::transpose(divergence_, gradient_, scratch);
    auto velocity_mass =
        memory::borrow_temporary<double>(scratch, velocity_nodes, "PressureProjection.mass");
    fem::integrate(velocity_mass.view(), quadrature_, velocity_restriction_,
                   detail::FluidMassForm{fraction, density_}, scratch);
    // Q1 velocities share their nodes with the pressure: their mass is the pressure's.
    constexpr bool shared_nodes = std::is_same_v<VelocitySpace, PressureSpace>;
    memory::Temporary<double> own_pressure_mass = [&] {
      if constexpr (shared_nodes) {
        return memory::Temporary<double>{};
      } else {
        auto mass = memory::borrow_temporary<double>(scratch, pressure_nodes,
                                                     "PressureProjection.pressure_mass");
        fem::integrate(mass.view(), quadrature_, pressure_restriction_,
                       detail::FluidMassForm{fraction, density_}, scratch);
        return mass;
      }
    }();
    const memory::ArrayView<const double> pressure_mass =
        shared_nodes ? velocity_mass.view() : own_pressure_mass.view();
    auto inverse_mass = memory::borrow_temporary<double>(scratch, velocity_nodes * D,
                                                         "PressureProjection.inverse_mass");
    auto fixed =
        memory::borrow_temporary<std::uint8_t>(scratch, pressure_nodes, "PressureProjection.fixed");
    auto diagonal =
        memory::borrow_temporary<double>(scratch, pressure_nodes, "PressureProjection.diagonal");
    auto rhs = memory::borrow_temporary<double>(scratch, pressure_nodes, "PressureProjection.rhs");
    auto policy = memory::arena_policy(scratch, "PressureProjection.thrust");
    const auto count = thrust::counting_iterator<std::size_t>(0);
    thrust::for_each_n(
        policy, count, velocity_nodes,
        detail::MarkFreeVelocity<D>{velocity_nodes_, wall_layers_, min_mass_, velocity_mass.view(),
                                    velocity, inverse_mass.view()});
    thrust::for_each_n(policy, count, pressure_nodes,
                       detail::MarkFixedPressure{min_mass_, pressure_mass, fixed.view()});
    fem::weighted_gram_diagonal(divergence_, inverse_mass.view(), diagonal.view(), scratch);
    thrust::for_each_n(policy, count, pressure_nodes,
                       detail::FixPressureRows{fixed.view(), diagonal.view()});
    const double divergence_before = free_divergence(velocity, fixed.view(), rhs.view(), scratch);
    fem::scale(rhs.view(), -1.0 / dt, scratch);  // rhs = -(1/dt) B u*
    thrust::for_each_n(policy, count, pressure_nodes,
                       detail::FreeEntries{pressure_.dofs(), fixed.view(), pressure_.dofs()});
    // W B^T, then B W B^T with the pressures without fluid held at zero.
    const auto gradient =
        fem::product(fem::scaling(inverse_mass.view()), fem::as_operator(gradient_));
    const auto schur = fem::with_diagonal(
        fem::with_fixed(fem::product(fem::as_operator(divergence_), gradient), fixed.view()),
        diagonal.view());
    ProjectionResult result;
    result.solve = fem::cg(
        schur, rhs.view(), pressure_.dofs(), scratch,
        {.tolerance = 1e-9, .max_iterations = 5000, .preconditioner = fem::Preconditioner::jacobi});
    // u += dt W B^T p
    auto correction = memory::borrow_temporary<double>(scratch, velocity_nodes * D,
                                                       "PressureProjection.correction");
    thrust::for_each_n(policy, count, pressure_nodes,
                       detail::FreeEntries{pressure_.dofs(), fixed.view(), rhs.view()});
    gradient.apply(rhs.view(), correction.view(), scratch);
    fem::axpby(dt, correction.view(), 1.0, velocity, scratch);
    const double divergence_after = free_divergence(velocity, fixed.view(), rhs.view(), scratch);
    result.divergence = divergence_before > 0.0 ? divergence_after / divergence_before : 0.0;
    return result;
  }

  /// The pressure of the last projection (the next one's initial guess), one value per grid vertex.
  [[nodiscard]] memory::ArrayView<double> pressure() { return pressure_.dofs(); }

private:
  /// out = B u on the free pressure rows, 0 on the fixed ones; gives ||out||.
  double free_divergence(memory::ArrayView<const double> u,
                         memory::ArrayView<const std::uint8_t> fixed, memory::ArrayView<double> out,
                         memory::Arena& scratch) const {
    fem::spmv(divergence_, u, out, scratch);
    auto policy = memory::arena_policy(scratch, "PressureProjection.thrust");
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), out.size(),
                       detail::FreeEntries{out, fixed, out});
    return fem::norm(out, scratch);
  }

  int wall_layers_;
  double density_;
  double min_mass_;
  PressureSpace pressure_space_;
  Domain cells_;
  quadrature::RegularQuadrature<Domain> quadrature_;
  GridNodes<D> velocity_nodes_;
  fem::SpaceRestriction<VelocitySpace, Domain> velocity_restriction_;
  fem::SpaceRestriction<PressureSpace, Domain> pressure_restriction_;
  fem::BsrMatrix<1, D> divergence_;
  fem::BsrMatrix<D, 1> gradient_;
  fem::DiscreteField<PressureSpace> pressure_;
};

}  // namespace afem::apps::mpm
