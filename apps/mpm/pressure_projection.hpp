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
/// positions makes small position errors grow (at a rate of sqrt(g / dx)). B is kept as one
/// scalar BSR matrix per component together with its transpose, assembled over the grid each
/// step (the pattern is built once); B W B^T is applied as their product (formed explicitly it
/// would couple nodes two cells apart). Used by Simulation<D>; compiled by nvcc in the CUDA build.

#include <thrust/copy.h>
#include <thrust/for_each.h>
#include <thrust/inner_product.h>
#include <thrust/iterator/counting_iterator.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "apps/mpm/grid_nodes.hpp"
#include "fem/bsr_matrix.hpp"
#include "fem/field.hpp"
#include "fem/integrate.hpp"
#include "fem/sample.hpp"
#include "fem/solvers.hpp"
#include "fem/space.hpp"
#include "fem/space_restriction.hpp"
#include "geometry/grid.hpp"
#include "memory/arena.hpp"
#include "memory/pool.hpp"
#include "memory/temporary.hpp"
#include "memory/thrust_allocator.hpp"
#include "quadrature/domain.hpp"
#include "quadrature/quadrature.hpp"

namespace afem::apps::mpm {

/// CG figures of the last projection and the discrete divergence it left: ||B u|| / ||B u*||
/// over the nodes with fluid.
struct ProjectionResult {
  fem::SolveResult solve;
  double divergence = 0.0;
};

namespace detail {

/// B_d(q, phi) = theta q d(phi)/dx_d: test q (pressure), trial phi (velocity component d).
struct DivergenceComponentForm {
  memory::ArrayView<const double> fraction;
  int component = 0;
  template <class Sample, class Test, class Trial>
  AFEM_HOST_DEVICE double operator()(const Sample& s, const Test& q, const Trial& phi) const {
    return fraction[static_cast<std::size_t>(s.cell)] *
           (q.basis_value * phi.basis_gradient[component]);
  }
};

/// A bilinear form with test and trial swapped: Transposed<F> assembles the transpose of F's
/// matrix from the very same products, summed in the same order, so bit for bit.
template <class Form>
struct Transposed {
  static constexpr bool reads_gradients = fem::detail::reads_gradients<Form>();
  Form form;
  template <class Sample, class Test, class Trial>
  AFEM_HOST_DEVICE double operator()(const Sample& s, const Test& v, const Trial& u) const {
    return form(s, u, v);
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

/// The views of one scalar BSR matrix per velocity component (a plain array: kernels copy it).
template <int D>
struct ComponentMatrices {
  fem::BsrView<1> component[D];
};

/// diagonal[q] = sum_d sum_i B_d(q, i)^2 W_d(i) on free rows, 1 on fixed ones; a free row with a
/// zero diagonal (no particle sees its pressure) is fixed too.
template <int D>
struct SchurDiagonal {
  ComponentMatrices<D> divergence;
  memory::ArrayView<const double> inverse_mass;
  memory::ArrayView<std::uint8_t> fixed_pressure;
  memory::ArrayView<double> diagonal;
  AFEM_HOST_DEVICE void operator()(std::int32_t r) const {
    const auto row = static_cast<std::size_t>(r);
    double sum = 0.0;
    for (int d = 0; d < D; ++d) {
      const fem::BsrView<1>& b = divergence.component[d];
      for (auto k = b.offsets[row]; k < b.offsets[row + 1]; ++k) {
        const auto entry = static_cast<std::size_t>(k);
        const auto column = static_cast<std::size_t>(b.columns[entry]);
        sum += b.values[entry] * b.values[entry] *
               inverse_mass[column * D + static_cast<std::size_t>(d)];
      }
    }
    if (fixed_pressure[row] != 0 || !(sum > 0.0)) {
      fixed_pressure[row] = 1;
      sum = 1.0;
    }
    diagonal[row] = sum;
  }
};

/// values[n] *= scale
struct Scale {
  double scale = 1.0;
  memory::ArrayView<double> values;
  AFEM_HOST_DEVICE void operator()(std::size_t n) const { values[n] *= scale; }
};

/// out[n] = fixed[n] ? 0 : in[n]
struct FreeEntries {
  memory::ArrayView<const double> in;
  memory::ArrayView<const std::uint8_t> fixed;
  memory::ArrayView<double> out;
  AFEM_HOST_DEVICE void operator()(std::size_t n) const { out[n] = fixed[n] != 0 ? 0.0 : in[n]; }
};

/// out = W B^T x with x read as 0 on the fixed pressure nodes (D values per velocity node).
template <int D>
struct ApplyGradient {
  ComponentMatrices<D> gradient;
  memory::ArrayView<const double> x;
  memory::ArrayView<const std::uint8_t> fixed;
  memory::ArrayView<const double> inverse_mass;
  memory::ArrayView<double> out;
  AFEM_HOST_DEVICE void operator()(std::int32_t r) const {
    const auto row = static_cast<std::size_t>(r);
    for (int d = 0; d < D; ++d) {
      const std::size_t slot = row * D + static_cast<std::size_t>(d);
      if (inverse_mass[slot] == 0.0) {
        out[slot] = 0.0;
        continue;
      }
      const fem::BsrView<1>& g = gradient.component[d];
      double sum = 0.0;
      for (auto k = g.offsets[row]; k < g.offsets[row + 1]; ++k) {
        const auto entry = static_cast<std::size_t>(k);
        const auto column = static_cast<std::size_t>(g.columns[entry]);
        sum += fixed[column] != 0 ? 0.0 : g.values[entry] * x[column];
      }
      out[slot] = inverse_mass[slot] * sum;
    }
  }
};

/// out = B u (u: D values per velocity node) on the free pressure nodes; on fixed ones out = x, or
/// 0 when x is empty.
template <int D>
struct ApplyDivergence {
  ComponentMatrices<D> divergence;
  memory::ArrayView<const double> u;
  memory::ArrayView<const std::uint8_t> fixed;
  memory::ArrayView<const double> x;
  memory::ArrayView<double> out;
  AFEM_HOST_DEVICE void operator()(std::int32_t r) const {
    const auto row = static_cast<std::size_t>(r);
    if (fixed[row] != 0) {
      out[row] = x.size() > 0 ? x[row] : 0.0;
      return;
    }
    double sum = 0.0;
    for (int d = 0; d < D; ++d) {
      const fem::BsrView<1>& b = divergence.component[d];
      for (auto k = b.offsets[row]; k < b.offsets[row + 1]; ++k) {
        const auto entry = static_cast<std::size_t>(k);
        const auto column = static_cast<std::size_t>(b.columns[entry]);
        sum += b.values[entry] * u[column * D + static_cast<std::size_t>(d)];
      }
    }
    out[row] = sum;
  }
};

/// values[k] += scale * in[k]
struct AddScaled {
  memory::ArrayView<const double> in;
  double scale = 1.0;
  memory::ArrayView<double> values;
  AFEM_HOST_DEVICE void operator()(std::size_t k) const { values[k] += scale * in[k]; }
};

/// The pressure operator B W B^T on the free pressure nodes and the identity on the fixed ones,
/// applied as two passes over the assembled B_d^T and B_d. Borrows everything it uses.
template <int D>
class SchurOperator {
public:
  SchurOperator(const ComponentMatrices<D>& divergence, const ComponentMatrices<D>& gradient,
                memory::ArrayView<const double> inverse_mass,
                memory::ArrayView<const std::uint8_t> fixed_pressure,
                memory::ArrayView<const double> diagonal, memory::ArrayView<double> product)
      : divergence_(divergence),
        gradient_(gradient),
        inverse_mass_(inverse_mass),
        fixed_pressure_(fixed_pressure),
        diagonal_(diagonal),
        product_(product) {}

  [[nodiscard]] std::int64_t rows() const { return static_cast<std::int64_t>(diagonal_.size()); }

  /// y = B W B^T x on free rows (x read as 0 on fixed ones), y = x on fixed rows.
  void apply(memory::ArrayView<const double> x, memory::ArrayView<double> y,
             memory::Arena& scratch) const {
    const auto pressure_rows = static_cast<std::int32_t>(diagonal_.size());
    const auto velocity_rows = static_cast<std::int32_t>(product_.size() / D);
    auto policy = memory::arena_policy(scratch, "PressureProjection.thrust");
    thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), velocity_rows,
                       ApplyGradient<D>{gradient_, x, fixed_pressure_, inverse_mass_, product_});
    thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), pressure_rows,
                       ApplyDivergence<D>{divergence_, product_, fixed_pressure_, x, y});
  }

  void diagonal(memory::ArrayView<double> d, memory::Arena& scratch) const {
    auto policy = memory::arena_policy(scratch, "PressureProjection.thrust");
    thrust::copy(policy, diagonal_.begin(), diagonal_.end(), d.begin());
  }

private:
  ComponentMatrices<D> divergence_;
  ComponentMatrices<D> gradient_;
  memory::ArrayView<const double> inverse_mass_;
  memory::ArrayView<const std::uint8_t> fixed_pressure_;
  memory::ArrayView<const double> diagonal_;
  memory::ArrayView<double> product_;
};

template <std::size_t... I>
auto make_matrices(memory::Pool& pool, std::index_sequence<I...> /*components*/) {
  return std::array<fem::BsrMatrix<1>, sizeof...(I)>{((void)I, fem::BsrMatrix<1>(pool))...};
}

}  // namespace detail

/// Owns the Q1 pressure space, the divergence matrices B_d and their transposes ("BsrMatrix.*")
/// and the pressure field (the next solve's initial guess) in the pool, with the grid's quadrature
/// and restrictions, until destroyed. project() borrows its scratch from the arena and gives it
/// back. The velocity lives in `VelocitySpace`'s vector counterpart (Q1 or quadratic B-splines on
/// the grid; `VelocitySpace` is its scalar space), the pressure on the grid's vertices.
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
        divergence_(detail::make_matrices(pool, std::make_index_sequence<D>{})),
        gradient_(detail::make_matrices(pool, std::make_index_sequence<D>{})),
        pressure_(pressure_space_) {}

  /// Projects `velocity` (u* on entry, D values per velocity node) given the fluid `fraction` of
  /// every grid cell. Throws fem::SolverError when CG fails (the velocity is then unchanged).
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
    for (std::size_t d = 0; d < D; ++d) {
      const auto component = static_cast<int>(d);
      fem::integrate(divergence_[d], quadrature_, pressure_restriction_, velocity_restriction_,
                     detail::DivergenceComponentForm{fraction, component}, scratch);
      fem::integrate(gradient_[d], quadrature_, velocity_restriction_, pressure_restriction_,
                     detail::Transposed<detail::DivergenceComponentForm>{{fraction, component}},
                     scratch);
    }
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
    auto product =
        memory::borrow_temporary<double>(scratch, velocity_nodes * D, "PressureProjection.product");
    auto policy = memory::arena_policy(scratch, "PressureProjection.thrust");
    const auto count = thrust::counting_iterator<std::size_t>(0);
    thrust::for_each_n(
        policy, count, velocity_nodes,
        detail::MarkFreeVelocity<D>{velocity_nodes_, wall_layers_, min_mass_, velocity_mass.view(),
                                    velocity, inverse_mass.view()});
    thrust::for_each_n(policy, count, pressure_nodes,
                       detail::MarkFixedPressure{min_mass_, pressure_mass, fixed.view()});
    detail::ComponentMatrices<D> divergence;
    detail::ComponentMatrices<D> gradient;
    for (std::size_t d = 0; d < D; ++d) {
      divergence.component[d] = divergence_[d].view();
      gradient.component[d] = gradient_[d].view();
    }
    const auto pressure_rows = static_cast<std::int32_t>(pressure_nodes);
    const auto velocity_rows = static_cast<std::int32_t>(velocity_nodes);
    const auto each_row = thrust::counting_iterator<std::int32_t>(0);
    thrust::for_each_n(
        policy, each_row, pressure_rows,
        detail::SchurDiagonal<D>{divergence, inverse_mass.view(), fixed.view(), diagonal.view()});
    // rhs = -(1/dt) B u*
    thrust::for_each_n(
        policy, each_row, pressure_rows,
        detail::ApplyDivergence<D>{divergence, velocity, fixed.view(), {}, rhs.view()});
    const double divergence_before = norm(rhs.view(), scratch);
    thrust::for_each_n(policy, count, pressure_nodes, detail::Scale{-1.0 / dt, rhs.view()});
    thrust::for_each_n(policy, count, pressure_nodes,
                       detail::FreeEntries{pressure_.dofs(), fixed.view(), pressure_.dofs()});
    const detail::SchurOperator<D> op(divergence, gradient, inverse_mass.view(), fixed.view(),
                                      diagonal.view(), product.view());
    ProjectionResult result;
    result.solve = fem::cg(
        op, rhs.view(), pressure_.dofs(), scratch,
        {.tolerance = 1e-9, .max_iterations = 5000, .preconditioner = fem::Preconditioner::jacobi});
    // u += dt W B^T p
    thrust::for_each_n(policy, each_row, velocity_rows,
                       detail::ApplyGradient<D>{gradient, pressure_.dofs(), fixed.view(),
                                                inverse_mass.view(), product.view()});
    thrust::for_each_n(policy, count, velocity_nodes * D,
                       detail::AddScaled{product.view(), dt, velocity});
    thrust::for_each_n(
        policy, each_row, pressure_rows,
        detail::ApplyDivergence<D>{divergence, velocity, fixed.view(), {}, rhs.view()});
    const double divergence_after = norm(rhs.view(), scratch);
    result.divergence = divergence_before > 0.0 ? divergence_after / divergence_before : 0.0;
    return result;
  }

  /// The pressure of the last projection (the next one's initial guess), one value per grid vertex.
  [[nodiscard]] memory::ArrayView<double> pressure() { return pressure_.dofs(); }

private:
  static double norm(memory::ArrayView<const double> x, memory::Arena& scratch) {
    auto policy = memory::arena_policy(scratch, "PressureProjection.thrust");
    return std::sqrt(thrust::inner_product(policy, x.begin(), x.end(), x.begin(), 0.0));
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
  std::array<fem::BsrMatrix<1>, D> divergence_;
  std::array<fem::BsrMatrix<1>, D> gradient_;
  fem::DiscreteField<PressureSpace> pressure_;
};

}  // namespace afem::apps::mpm
