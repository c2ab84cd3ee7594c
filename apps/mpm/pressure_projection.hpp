#pragma once

/// @file
/// PressureProjection<D>: makes a grid velocity divergence-free for the incompressible fluid.
/// Solves int grad p . grad q = -(1/dt) int_fluid q div u* for the pressure (per unit density) on
/// the Q1 nodes of the grid, with p = 0 on nodes between the walls that hold no fluid (air: the
/// free surface) and dp/dn = 0 on the walls, by CG with Jacobi on the Laplacian assembled over the
/// whole grid, then sets u = u* - dt G p with G p the nodal (lumped) gradient of p. Used by
/// Simulation<D>; compiled by nvcc in the CUDA build.

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>

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

namespace detail {

/// grad p . grad q
struct LaplaceForm {
  template <class Sample, class Test, class Trial>
  AFEM_HOST_DEVICE double operator()(const Sample& /*s*/, const Test& q, const Trial& p) const {
    return fem::dot(p.grad(), q.grad());
  }
};

/// scale * div u * q
struct DivergenceForm {
  double scale = 1.0;
  template <class Sample, class Test, class Field>
  AFEM_HOST_DEVICE double operator()(const Sample& s, const Test& q, const Field& u) const {
    return scale * u.div(s) * q.value();
  }
};

/// grad p . v, and 1 . v for the lumped node weights.
struct GradientForm {
  template <class Sample, class Test, class Field>
  AFEM_HOST_DEVICE double operator()(const Sample& s, const Test& v, const Field& p) const {
    return fem::dot(p.grad(s), v.value());
  }
};
struct NodeWeightForm {
  template <class Sample, class Test>
  AFEM_HOST_DEVICE double operator()(const Sample& /*s*/, const Test& v) const {
    return v.basis_value;
  }
};

/// Dirichlet mask and values of the pressure: nodes without fluid between the walls (air). Nodes
/// in the wall layers stay free, so that the walls act as dp/dn = 0.
template <int D>
struct MarkAirNodes {
  geometry::GridView<D> grid;
  int wall_layers = 0;
  memory::ArrayView<const double> mass;
  memory::ArrayView<std::uint8_t> mask;
  memory::ArrayView<double> zero;
  memory::ArrayView<double> pressure;
  AFEM_HOST_DEVICE void operator()(std::size_t n) const {
    bool inside = true;
    auto rest = static_cast<std::int32_t>(n);
    for (int d = 0; d < D; ++d) {
      const std::int32_t index = rest % (grid.resolution[d] + 1);
      rest /= grid.resolution[d] + 1;
      inside = inside && index > wall_layers && index < grid.resolution[d] - wall_layers;
    }
    const bool empty = inside && !(mass[n] > 0.0);
    mask[n] = empty ? 1 : 0;
    zero[n] = 0.0;
    if (empty) {
      pressure[n] = 0.0;
    }
  }
};

/// u -= dt * (grad p)_i / w_i on nodes with fluid.
template <int D>
struct SubtractGradient {
  memory::ArrayView<const double> mass;
  memory::ArrayView<const double> gradient;
  memory::ArrayView<const double> weight;
  memory::ArrayView<double> velocity;
  double dt = 0.0;
  AFEM_HOST_DEVICE void operator()(std::size_t n) const {
    if (!(mass[n] > 0.0)) {
      return;
    }
    for (std::size_t d = 0; d < D; ++d) {
      velocity[n * D + d] -= dt * gradient[n * D + d] / weight[n];
    }
  }
};

}  // namespace detail

/// Owns the Laplacian ("BsrMatrix.*"), the pressure field and the lumped node weights
/// ("PressureProjection.node_weights") in the pool, with the whole-grid quadrature and
/// restrictions, until destroyed. project() borrows its scratch from the arena and
/// gives it back.
template <int D>
class PressureProjection {
public:
  using Grid = geometry::Grid<D>;
  using ScalarSpace = fem::LagrangeSpace<Grid, 1, 1>;
  using VectorSpace = fem::LagrangeSpace<Grid, 1, D>;
  using Domain = quadrature::Cells<Grid>;

  /// `wall_layers`: node layers along each wall that belong to the walls.
  PressureProjection(const ScalarSpace& scalar, const VectorSpace& vector, int wall_layers,
                     memory::Pool& pool, memory::Arena& scratch)
      : wall_layers_(wall_layers),
        cells_(scalar.geometry()),
        quadrature_(cells_, 2, pool),
        scalar_restriction_(scalar, cells_, scratch),
        vector_restriction_(vector, cells_, scratch),
        laplacian_(pool),
        pressure_(scalar),
        weights_(memory::borrow_temporary<double>(pool,
                                                  static_cast<std::size_t>(scalar.node_count()),
                                                  "PressureProjection.node_weights")) {
    fem::integrate(weights_.view(), quadrature_, scalar_restriction_, detail::NodeWeightForm{},
                   scratch);
  }

  /// Projects `velocity` (u* on entry) given the grid's nodal `mass`; returns the CG result.
  /// Throws fem::SolverError when CG fails.
  fem::SolveResult project(fem::DiscreteField<VectorSpace>& velocity,
                           memory::ArrayView<const double> mass, double dt,
                           memory::Arena& scratch) {
    const auto nodes = static_cast<std::size_t>(pressure_.space().node_count());
    auto rhs = memory::borrow_temporary<double>(scratch, nodes, "PressureProjection.rhs");
    auto mask = memory::borrow_temporary<std::uint8_t>(scratch, nodes, "PressureProjection.mask");
    auto zero = memory::borrow_temporary<double>(scratch, nodes, "PressureProjection.zero");
    auto gradient =
        memory::borrow_temporary<double>(scratch, nodes * D, "PressureProjection.gradient");
    fem::integrate(laplacian_, quadrature_, scalar_restriction_, scalar_restriction_,
                   detail::LaplaceForm{}, scratch);
    fem::integrate(rhs.view(), quadrature_, scalar_restriction_, detail::DivergenceForm{-1.0 / dt},
                   scratch, velocity);
    {
      auto policy = memory::arena_policy(scratch, "PressureProjection.thrust");
      thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), nodes,
                         detail::MarkAirNodes<D>{pressure_.space().geometry().view(), wall_layers_,
                                                 mass, mask.view(), zero.view(), pressure_.dofs()});
    }
    fem::project_dirichlet(laplacian_, rhs.view(), mask.view(), zero.view(), scratch);
    const fem::SolveResult result = fem::cg(
        laplacian_, rhs.view(), pressure_.dofs(), scratch,
        {.tolerance = 1e-9, .max_iterations = 5000, .preconditioner = fem::Preconditioner::jacobi});
    fem::integrate(gradient.view(), quadrature_, vector_restriction_, detail::GradientForm{},
                   scratch, pressure_);
    auto policy = memory::arena_policy(scratch, "PressureProjection.thrust");
    thrust::for_each_n(
        policy, thrust::counting_iterator<std::size_t>(0), nodes,
        detail::SubtractGradient<D>{mass, gradient.view(), weights_.view(), velocity.dofs(), dt});
    return result;
  }

private:
  int wall_layers_;
  Domain cells_;
  quadrature::RegularQuadrature<Domain> quadrature_;
  fem::SpaceRestriction<ScalarSpace, Domain> scalar_restriction_;
  fem::SpaceRestriction<VectorSpace, Domain> vector_restriction_;
  fem::BsrMatrix<1> laplacian_;
  fem::DiscreteField<ScalarSpace> pressure_;
  memory::Temporary<double> weights_;  ///< int N_i per node
};

}  // namespace afem::apps::mpm
