#pragma once

/// @file
/// StaggeredVelocity<D>: the grid velocity of the incompressible fluid on a MAC grid. Component d
/// lives on the centres of the faces normal to axis d: the vertices of a grid shifted by half a
/// cell along every other axis, with one cell more along them (so that its lattice is
/// MacLattice's faces of component d and covers the box). Each component is a scalar Q1 space on
/// its grid with its own PicQuadrature, so that the transfers go through integrate() and
/// interpolate() as the collocated ones do; the pressure projection is MacProjection's.
/// Used by Simulation<D>; compiled by nvcc in the CUDA build.

#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>

#include "arenafem/apps/mpm/mac_projection.hpp"
#include "arenafem/apps/mpm/rebin_particles.hpp"
#include "arenafem/apps/mpm/setup.hpp"
#include "arenafem/fem/field.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/interpolate.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/partition.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/pic_quadrature.hpp"

namespace afem::apps::mpm {

namespace detail {

/// Face velocity of component d = momentum / mass + gravity_dt, 0 where the face holds no mass
/// (MacProjection then holds the faces the walls hold).
template <int D>
struct UpdateFaces {
  memory::ArrayView<const double> mass;
  memory::ArrayView<double> velocity;  ///< the momentum on entry
  double gravity_dt = 0.0;
  double min_mass = 0.0;
  AFEM_HOST_DEVICE void operator()(std::size_t f) const {
    velocity[f] = mass[f] > min_mass ? velocity[f] / mass[f] + gravity_dt : 0.0;
  }
};

/// The velocity at each grid vertex: component d averaged over the 2^(D-1) faces of component d
/// around the vertex (for output).
template <int D>
struct FacesToVertices {
  MacLattice<D> lattice;
  MacVelocity<D> faces;
  memory::ArrayView<double> vertices;  ///< D values per vertex
  AFEM_HOST_DEVICE void operator()(std::size_t n) const {
    std::int32_t at[D];
    std::int64_t rest = static_cast<std::int64_t>(n);
    for (int a = 0; a < D; ++a) {
      at[a] = static_cast<std::int32_t>(rest % (lattice.cells[a] + 1));
      rest /= lattice.cells[a] + 1;
    }
    for (int d = 0; d < D; ++d) {
      double sum = 0.0;
      for (int corner = 0; corner < (1 << (D - 1)); ++corner) {
        std::int64_t f = 0;
        int bit = 0;
        for (int a = D - 1; a >= 0; --a) {
          std::int32_t i = at[a];
          if (a != d) {
            i += (corner >> bit++) & 1;
          }
          f = f * lattice.face_layers(d, a) + i;
        }
        sum += faces.component[d][static_cast<std::size_t>(f)];
      }
      vertices[n * D + static_cast<std::size_t>(d)] = sum / (1 << (D - 1));
    }
  }
};

}  // namespace detail

/// Owns, for each velocity component, its shifted grid, scalar Q1 space, active-cell partition,
/// restriction, PicQuadrature and the mass and velocity fields on its faces, and the
/// MacProjection, all in the pool, until destroyed. Every step borrows its scratch from the arena.
template <int D>
class StaggeredVelocity {
public:
  using Grid = geometry::Grid<D>;
  using Space = fem::LagrangeSpace<Grid, 1, 1>;
  using Domain = quadrature::Cells<Grid>;

  /// The faces of each component of `grid`'s cells; `setup` gives the walls, the held layers and
  /// the fluid's density.
  StaggeredVelocity(const Grid& grid, const Setup& setup, PressurePreconditioner preconditioner,
                    std::int32_t max_particles, memory::Pool& pool, memory::Arena& scratch)
      : lattice_(lattice_of(grid, setup)),
        projection_(lattice_, grid.view().cell_size[0], setup.materials[0].density, preconditioner,
                    pool) {
    for (int d = 0; d < D; ++d) {
      components_[static_cast<std::size_t>(d)] =
          std::make_unique<Component>(component_grid(grid, d), pool, scratch, max_particles);
    }
  }

  /// Locates and bins the particles into each component's grid.
  void rebin(memory::ArrayView<const double> positions, memory::ArrayView<const double> volumes,
             memory::Arena& arena) {
    for (auto& c : components_) {
      detail::rebin_particles(c->quadrature, c->partition, c->restriction, c->grid.cell_count(),
                              positions, volumes, arena);
    }
  }

  /// Component d's face masses and momenta: `mass_form` and `momentum_form(d)` integrated over its
  /// particles.
  template <class MassForm, class MomentumForm>
  void particle_to_grid(const MassForm& mass_form, const MomentumForm& momentum_form,
                        memory::Arena& arena) {
    for (int d = 0; d < D; ++d) {
      Component& c = *components_[static_cast<std::size_t>(d)];
      fem::integrate(
          std::tuple{fem::LinearForm{c.mass.dofs(), c.restriction, mass_form},
                     fem::LinearForm{c.velocity.dofs(), c.restriction, momentum_form(d)}},
          c.quadrature, arena);
    }
  }

  /// The face velocities from the momenta with gravity, then projected to be divergence-free
  /// over the cells `fluid` marks.
  MacProjectionResult update(const std::array<double, 3>& gravity, double dt, double min_mass,
                             memory::ArrayView<const std::uint8_t> fluid, memory::Arena& arena) {
    auto policy = memory::arena_policy(arena, "Mpm.thrust");
    for (int d = 0; d < D; ++d) {
      Component& c = *components_[static_cast<std::size_t>(d)];
      thrust::for_each_n(
          policy, thrust::counting_iterator<std::size_t>(0), c.velocity.dofs().size(),
          detail::UpdateFaces<D>{c.mass.dofs(), c.velocity.dofs(),
                                 gravity[static_cast<std::size_t>(d)] * dt, min_mass});
    }
    return projection_.project(faces(), fluid, dt, arena);
  }

  /// Writes `integrand(sample, velocity component d)` at every particle into out_d (one value
  /// block per particle, as interpolate() writes them) for each d.
  template <class Integrand>
  void interpolate(const std::array<memory::ArrayView<double>, D>& out, const Integrand& integrand,
                   memory::Arena& arena) const {
    for (int d = 0; d < D; ++d) {
      const Component& c = *components_[static_cast<std::size_t>(d)];
      fem::interpolate(out[static_cast<std::size_t>(d)], c.quadrature, integrand, arena,
                       c.velocity);
    }
  }

  /// The velocity averaged at the vertices of the cells (D values per vertex).
  void to_vertices(memory::ArrayView<double> vertices, memory::Arena& arena) {
    auto policy = memory::arena_policy(arena, "Mpm.thrust");
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), vertices.size() / D,
                       detail::FacesToVertices<D>{lattice_, faces(), vertices});
  }

  [[nodiscard]] MacVelocity<D> faces() {
    MacVelocity<D> v;
    for (int d = 0; d < D; ++d) {
      v.component[d] = components_[static_cast<std::size_t>(d)]->velocity.dofs();
    }
    return v;
  }
  /// Component d's face velocities.
  [[nodiscard]] memory::ArrayView<const double> face_values(int d) const {
    return components_[static_cast<std::size_t>(d)]->velocity.dofs();
  }
  [[nodiscard]] memory::ArrayView<double> pressure() { return projection_.pressure(); }
  [[nodiscard]] const MacLattice<D>& lattice() const { return lattice_; }

private:
  /// One velocity component's grid and what its transfers need.
  struct Component {
    Component(const Grid& g, memory::Pool& pool, memory::Arena& scratch, std::int32_t max_particles)
        : grid(g),
          space(grid, pool, scratch),
          partition(grid, pool, {.max_cells = grid.cell_count(), .sides = false}),
          cells(partition),
          restriction(space, cells, scratch),
          mass(space),
          velocity(space),
          quadrature(cells, pool, {.max_particles = max_particles}) {}
    Grid grid;
    Space space;
    geometry::CellBasedGeometryPartition<Grid> partition;
    Domain cells;
    fem::SpaceRestriction<Space, Domain> restriction;
    fem::DiscreteField<Space> mass;
    fem::DiscreteField<Space> velocity;
    quadrature::PicQuadrature<Grid> quadrature;
  };

  static MacLattice<D> lattice_of(const Grid& grid, const Setup& setup) {
    MacLattice<D> lattice;
    for (int d = 0; d < D; ++d) {
      lattice.cells[d] = grid.view().resolution[d];
    }
    lattice.wall_layers = setup.boundary_cells;
    for (int a = 0; a < 2 * D; ++a) {
      lattice.closed[a] = setup.boundaries[static_cast<std::size_t>(a)] != Boundary::open;
      lattice.sticky[a] = setup.boundaries[static_cast<std::size_t>(a)] == Boundary::sticky;
    }
    return lattice;
  }

  /// Shifted by half a cell down along every axis but d, with one cell more along them.
  static Grid component_grid(const Grid& grid, int d) {
    std::array<double, D> origin{};
    std::array<double, D> size{};
    std::array<std::int32_t, D> resolution{};
    for (int a = 0; a < D; ++a) {
      const auto k = static_cast<std::size_t>(a);
      size[k] = grid.view().cell_size[a];
      origin[k] = grid.view().origin[a] - (a == d ? 0.0 : 0.5 * size[k]);
      resolution[k] = grid.view().resolution[a] + (a == d ? 0 : 1);
    }
    return Grid(origin, size, resolution);
  }

  MacLattice<D> lattice_;
  MacProjection<D> projection_;
  std::array<std::unique_ptr<Component>, D> components_;
};

}  // namespace afem::apps::mpm
