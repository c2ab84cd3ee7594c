// Simulation<D>: the MPM step. Compiled by nvcc in the CUDA build.
#include "arenafem/apps/mpm/simulation.hpp"

#include "arenafem/apps/mpm/checkpoint.hpp"
#include "arenafem/apps/mpm/grid_nodes.hpp"
#include "arenafem/apps/mpm/pressure_projection.hpp"
#include "arenafem/apps/mpm/staggered_velocity.hpp"

#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/scan.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "arenafem/fem/bspline_space.hpp"
#include "arenafem/fem/component_restriction.hpp"
#include "arenafem/fem/field.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/interpolate.hpp"
#include "arenafem/fem/sample.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/partition.hpp"
#include "arenafem/memory/capture_cache.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/thrust_allocator.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/pic_quadrature.hpp"

namespace afem::apps::mpm {

template <int D>
geometry::Grid<D> setup_grid(const Setup& setup) {
  std::array<double, D> origin{};
  std::array<double, D> size{};
  std::array<std::int32_t, D> resolution{};
  for (std::size_t d = 0; d < D; ++d) {
    origin[d] = setup.origin[d];
    size[d] = setup.cell_size();
    resolution[d] = setup.cells(static_cast<int>(d));
  }
  return geometry::Grid<D>(origin, size, resolution);
}

template geometry::Grid<2> setup_grid<2>(const Setup& setup);
template geometry::Grid<3> setup_grid<3>(const Setup& setup);

namespace detail {

template <int D>
using Matrix = Eigen::Matrix<double, D, D>;
template <int D>
using Vector = Eigen::Matrix<double, D, 1>;

/// Row-major D x D matrix of particle `p` in a buffer of D * D values per particle.
template <int D>
AFEM_HOST_DEVICE Matrix<D> load_matrix(memory::ArrayView<const double> values, std::size_t p) {
  // Read as one row-major block: scalar stores to the stack would stall the vector loads of the
  // products that use it.
  return Eigen::Map<const Eigen::Matrix<double, D, D, Eigen::RowMajor>>(&values[p * D * D]);
}

template <int D>
AFEM_HOST_DEVICE void store_matrix(const Matrix<D>& m, memory::ArrayView<double> values,
                                   std::size_t p) {
  Eigen::Map<Eigen::Matrix<double, D, D, Eigen::RowMajor>> out(&values[p * D * D]);
  out = m;
}

template <int D>
AFEM_HOST_DEVICE Vector<D> load_vector(memory::ArrayView<const double> values, std::size_t p) {
  Vector<D> v;
  for (int d = 0; d < D; ++d) {
    v[d] = values[p * D + static_cast<std::size_t>(d)];
  }
  return v;
}

/// The fraction of each active cell the particles fill: their volume over the cell's, at most 1
/// (summed in the binning's order).
template <class CellsView>
struct FluidFraction {
  quadrature::PicQuadratureView particles;
  CellsView cells;
  memory::ArrayView<double> fraction;
  AFEM_HOST_DEVICE void operator()(std::int32_t e) const {
    double volume = 0.0;
    for (std::int32_t p = 0; p < particles.point_count(e); ++p) {
      volume += particles.weight(e, p);
    }
    const std::int32_t cell = cells.element_cell(e);
    const double filled = volume / cells.geometry.cell_measure(cell);
    fraction[static_cast<std::size_t>(cell)] = filled < 1.0 ? filled : 1.0;
  }
};

/// The material of a particle: the only one of the run, or the one its index names.
struct MaterialLookup {
  memory::ArrayView<const MaterialView> table;
  memory::ArrayView<const std::int32_t> index;
  AFEM_HOST_DEVICE const MaterialView& operator()(std::size_t p) const {
    return table.size() == 1 ? table[0] : table[static_cast<std::size_t>(index[p])];
  }
};

/// Grid mass: rho0 N_i, weighted by the particle's initial volume (its quadrature weight).
struct MassForm {
  static constexpr bool reads_gradients = false;
  MaterialLookup materials;
  template <class Sample>
  AFEM_HOST_DEVICE double prepare(const Sample& s) const {
    return materials(s.index).density;
  }
  template <class Test>
  AFEM_HOST_DEVICE double operator()(const double& density, const Test& v) const {
    return density * v.basis_value;
  }
};

/// Grid momentum after the step's forces, component c of node i, weighted by V0_p, with f_p the
/// external force (when there are forces). APIC (`Mls` false):
/// (rho0 (v_p + C_p (x_i - x_p)) + dt f_p / V0_p)_c N_i - dt (tau_p grad N_i)_c.
/// MLS-MPM on quadratic B-splines (`Mls`): the force of the stress through grad N_i ~
/// N_i M^-1 (x_i - x_p), M = diag(h_d^2 / 4) the basis's moment matrix (the same for every x_p),
/// folded into the affine momentum, (rho0 v_p + dt f_p / V0_p + (rho0 C_p - dt tau_p M^-1)
/// (x_i - x_p))_c N_i: it reads no basis gradient. The particle's part (its momentum, affine
/// momentum and Kirchhoff stress) is prepared once per particle.
template <int D, bool Mls>
struct MomentumForm {
  static constexpr bool reads_gradients = !Mls;
  static constexpr bool tests_by_node = true;
  MaterialLookup materials;
  memory::ArrayView<const double> velocities;
  memory::ArrayView<const double> affine;
  memory::ArrayView<const double> deformation;
  memory::ArrayView<const double> forces;
  double dt = 0.0;
  Vector<D> inverse_moment = Vector<D>::Zero();  ///< the diagonal of M^-1 (MLS-MPM)

  /// What the form needs of a particle, found once per particle: the affine momentum field
  /// m + A (x - x_p) as its value at the origin, m - A x_p, and A, so that a node's momentum is
  /// one product A x_i away (losing about log10(|x_p| / h) of 16 digits to cancellation: 2 on a
  /// unit box of 128 cells).
  struct Particle {
    Vector<D> momentum_at_origin;
    Matrix<D> affine_momentum;
    Matrix<D> stress_impulse;  ///< dt tau
    /// Whether tau is a multiple of the identity (isotropic_stress): a node then takes one
    /// product by its diagonal entry instead of D x D.
    bool isotropic = false;
  };
  template <class Sample>
  AFEM_HOST_DEVICE AFEM_INLINE Particle prepare(const Sample& s) const {
    const std::size_t p = s.index;
    const MaterialView& material = materials(p);
    Particle particle{material.density * load_vector<D>(velocities, p),
                      material.density * load_matrix<D>(affine, p),
                      dt * kirchhoff_stress<D>(material, load_matrix<D>(deformation, p)),
                      isotropic_stress(material.kind)};
    if constexpr (Mls) {
      particle.affine_momentum -= particle.stress_impulse * inverse_moment.asDiagonal();
    }
    if (!forces.empty()) {
      particle.momentum_at_origin += (dt / s.weight) * load_vector<D>(forces, p);
    }
    particle.momentum_at_origin -= particle.affine_momentum * s.x;
    return particle;
  }
  /// All D components of node i at once.
  AFEM_HOST_DEVICE Vector<D> operator()(const Particle& particle,
                                        const fem::NodeBasis<D>& node) const {
    Vector<D> value =
        (particle.momentum_at_origin + particle.affine_momentum * node.node_position) *
        node.basis_value;
    if constexpr (!Mls) {
      if (particle.isotropic) {
        value -= particle.stress_impulse(0, 0) * node.basis_gradient;
      } else {
        value -= particle.stress_impulse * node.basis_gradient;
      }
    }
    return value;
  }
};

/// Grid velocity from momentum and mass, gravity, and the closed faces of the box (momentum and
/// velocity may be the same buffer).
template <int D>
struct UpdateGrid {
  GridNodes<D> nodes;
  memory::ArrayView<const double> mass;
  memory::ArrayView<const double> momentum;
  memory::ArrayView<double> velocity;
  double gravity_dt[D] = {};
  double min_mass = 0.0;
  Boundary boundaries[2 * D] = {};
  int boundary_cells = 2;
  bool closed = true;  ///< some face is not open
  AFEM_HOST_DEVICE void operator()(std::int32_t node) const {
    const auto n = static_cast<std::size_t>(node);
    const double m = mass[n];
    Vector<D> v = Vector<D>::Zero();
    if (m > min_mass) {
      for (int d = 0; d < D; ++d) {
        v[d] = momentum[n * D + static_cast<std::size_t>(d)] / m + gravity_dt[d];
      }
    }
    if (closed && m > min_mass) {  // the faces only ever zero components: nothing to do at rest
      double at[D];
      nodes.position(node, at);
      for (int d = 0; d < D; ++d) {
        const int side = nodes.wall_side(at[d], nodes.resolution[d], boundary_cells);
        if (side == 0) {
          continue;
        }
        const Boundary face = boundaries[2 * d + (side > 0 ? 1 : 0)];
        if (face != Boundary::open && (side < 0 ? v[d] < 0.0 : v[d] > 0.0)) {
          if (face == Boundary::sticky) {
            v.setZero();
          } else {
            v[d] = 0.0;
          }
        }
      }
    }
    for (int d = 0; d < D; ++d) {
      velocity[n * D + static_cast<std::size_t>(d)] = v[d];
    }
  }
};

/// The incompressible fluid's grid momentum on the faces of velocity component `component`:
/// (rho0 (v_p + C_p (x_i - x_p)) + dt f_p / V0_p)_c N_i, weighted by V0_p. The fluid has no stress
/// (its pressure comes from the projection), so the basis gradients are not read. As in the MPM's
/// momentum form, the affine part is kept as its value at the origin, one product per node
/// (losing about log10(|x_p| / h) digits to cancellation, as there).
template <int D>
struct FluidMomentumForm {
  static constexpr bool reads_gradients = false;
  MaterialLookup materials;
  memory::ArrayView<const double> velocities;
  memory::ArrayView<const double> affine;
  memory::ArrayView<const double> forces;
  double dt = 0.0;
  int component = 0;

  /// What the form needs of a particle, found once per particle.
  struct Particle {
    double momentum_at_origin = 0.0;  ///< the momentum minus row `component` of rho0 C_p x_p
    Vector<D> affine_momentum;        ///< row `component` of rho0 C_p
  };
  template <class Sample>
  AFEM_HOST_DEVICE Particle prepare(const Sample& s) const {
    const std::size_t p = s.index;
    const double density = materials(p).density;
    const auto c = static_cast<std::size_t>(component);
    Particle particle{density * velocities[p * D + c], Vector<D>::Zero()};
    for (std::size_t a = 0; a < D; ++a) {
      particle.affine_momentum[static_cast<Eigen::Index>(a)] =
          density * affine[(p * D + c) * D + a];
    }
    if (!forces.empty()) {
      particle.momentum_at_origin += (dt / s.weight) * forces[p * D + c];
    }
    particle.momentum_at_origin -= particle.affine_momentum.dot(s.x);
    return particle;
  }
  template <class Test>
  AFEM_HOST_DEVICE double operator()(const Particle& particle, const Test& v) const {
    return (particle.momentum_at_origin + particle.affine_momentum.dot(v.node_position)) *
           v.basis_value;
  }
};

/// A scalar grid velocity's value and gradient at a particle.
template <int D>
struct ValueAndGradientAt {
  template <class Sample, class Field>
  AFEM_HOST_DEVICE Eigen::Matrix<double, D + 1, 1> operator()(const Sample& s,
                                                              const Field& u) const {
    Eigen::Matrix<double, D + 1, 1> out;
    out[0] = u.value(s);
    out.template tail<D>() = u.grad(s);
    return out;
  }
};

/// Particle p's new velocity component d and row d of its affine velocity (the velocity gradient)
/// from the D blocks of value and gradient that ValueAndGradientAt wrote.
template <int D>
struct GatherStaggered {
  memory::ArrayView<const double> blocks[D];
  memory::ArrayView<double> velocities;
  memory::ArrayView<double> affine;
  AFEM_HOST_DEVICE void operator()(std::size_t p) const {
    for (int d = 0; d < D; ++d) {
      const auto k = static_cast<std::size_t>(d);
      velocities[p * D + k] = blocks[d][p * (D + 1)];
      for (int a = 0; a < D; ++a) {
        affine[(p * D + k) * D + static_cast<std::size_t>(a)] =
            blocks[d][p * (D + 1) + 1 + static_cast<std::size_t>(a)];
      }
    }
  }
};

/// 1 on the cells that hold particles (the active ones) outside the wall layers (a particle held
/// on a wall's plane can round into the layer), 0 elsewhere.
template <int D, class CellsView>
struct MarkFluidCells {
  CellsView cells;
  MacLattice<D> lattice;
  memory::ArrayView<std::uint8_t> fluid;
  AFEM_HOST_DEVICE void operator()(std::int32_t e) const {
    const std::int32_t cell = cells.element_cell(e);
    std::int32_t k[D];
    lattice.cell_coords(cell, k);
    if (lattice.inside_walls(k)) {
      fluid[static_cast<std::size_t>(cell)] = 1;
    }
  }
};

/// MLS-MPM's grid-to-particle transfer: gives the particle's affine velocity C = B M^-1 (B the
/// first moment of the grid velocity about the particle) and records its velocity, found in the
/// same sums, in `velocities` (the particle's slot: interpolate visits each binned particle once,
/// and rebinning removes or rejects every particle outside the grid).
/// Written straight to their arrays, the two skip a pass that split them out of one buffer of
/// D + D * D values per particle.
template <int D>
struct VelocityAndAffineAt {
  Vector<D> inverse_moment = Vector<D>::Zero();
  memory::ArrayView<double> velocities;
  template <class Sample, class Field>
  AFEM_HOST_DEVICE Matrix<D> operator()(const Sample& s, const Field& u) const {
    const auto at = u.value_and_moment(s);
    for (int d = 0; d < D; ++d) {
      velocities[s.index * D + static_cast<std::size_t>(d)] = at.value[d];
    }
    return at.moment * inverse_moment.asDiagonal();
  }
};

/// The grid velocity gradient at a particle (row c: the gradient of component c).
struct VelocityGradientAt {
  template <class Sample, class Field>
  AFEM_HOST_DEVICE auto operator()(const Sample& s, const Field& u) const {
    return u.grad(s);
  }
};

/// Grid momentum of the particles' new velocities alone: rho0 v_p N_i, weighted by V0_p, where
/// v_p is the grid velocity at the particle, found once per particle and recorded in `velocities`
/// (the particle's slot: each particle is prepared once).
template <int D>
struct RemapForm {
  static constexpr bool reads_gradients = false;
  static constexpr bool tests_by_node = true;
  memory::ArrayView<double> velocities;
  MaterialLookup materials;
  template <class Sample, class Field>
  AFEM_HOST_DEVICE Vector<D> prepare(const Sample& s, const Field& u) const {
    const Vector<D> v = u.value(s);
    for (int d = 0; d < D; ++d) {
      velocities[s.index * D + static_cast<std::size_t>(d)] = v[d];
    }
    return materials(s.index).density * v;
  }
  AFEM_HOST_DEVICE Vector<D> operator()(const Vector<D>& momentum,
                                        const fem::NodeBasis<D>& node) const {
    return momentum * node.basis_value;
  }
};

/// The end of a particle's step, after its affine matrix C took its new value: v = the new
/// velocity, F = project((I + dt C) F), x += dt v kept between the closed faces (lower and upper
/// are infinite along open ones).
template <int D>
struct UpdateParticles {
  MaterialLookup materials;
  memory::ArrayView<const double> new_velocities;
  memory::ArrayView<const double> affine;
  memory::ArrayView<double> positions;
  memory::ArrayView<double> velocities;
  memory::ArrayView<double> deformation;
  double dt = 0.0;
  double lower[D] = {};
  double upper[D] = {};
  AFEM_HOST_DEVICE void operator()(std::size_t p) const {
    // F <- (I + dt grad v) F coefficient by coefficient, with no Eigen temporary on the stack:
    // perf put the Eigen form's samples on loads of such temporaries (written as scalars, read
    // back as vectors), and its 2D kernel ran only 1.05-1.2x faster on 2 threads than on 1 (1.7x
    // now; README, "The particle update on 2 threads").
    const std::size_t base = p * D * D;
    double a[D][D];
    for (int i = 0; i < D; ++i) {
      for (int k = 0; k < D; ++k) {
        a[i][k] = (i == k ? 1.0 : 0.0) + dt * affine[base + static_cast<std::size_t>(i * D + k)];
      }
    }
    Matrix<D> f;
    for (int j = 0; j < D; ++j) {
      for (int i = 0; i < D; ++i) {
        double sum = a[i][0] * deformation[base + static_cast<std::size_t>(j)];
        for (int k = 1; k < D; ++k) {
          sum += a[i][k] * deformation[base + static_cast<std::size_t>(k * D + j)];
        }
        f(i, j) = sum;
      }
    }
    store_matrix<D>(project_deformation<D>(materials(p), f), deformation, p);
    for (int d = 0; d < D; ++d) {
      const auto k = p * D + static_cast<std::size_t>(d);
      velocities[k] = new_velocities[k];
      const double x = positions[k] + dt * new_velocities[k];
      positions[k] = x < lower[d] ? lower[d] : (x > upper[d] ? upper[d] : x);
    }
  }
};

/// Flags the particles outside the grid (1), those at a non-finite position (2) and the others
/// (0).
template <int D>
struct FlagOutside {
  typename geometry::Grid<D>::View grid;
  memory::ArrayView<const double> positions;
  memory::ArrayView<std::uint8_t> outside;
  AFEM_HOST_DEVICE void operator()(std::size_t p) const {
    typename geometry::Grid<D>::View::Point x;
    for (int d = 0; d < D; ++d) {
      x[d] = positions[p * D + static_cast<std::size_t>(d)];
    }
    std::int32_t cell = -1;
    typename geometry::Grid<D>::View::Coords xi;
    bool finite = true;
    for (int d = 0; d < D; ++d) {
      finite = finite && std::isfinite(x[d]);
    }
    outside[p] = !finite ? 2 : grid.locate(x, cell, xi) ? 0 : 1;
  }
};

/// 1 for a particle that stays, 0 for one removed.
struct Keeps {
  AFEM_HOST_DEVICE std::int32_t operator()(std::uint8_t remove) const {
    return remove == 0 ? 1 : 0;
  }
};

/// Whether a particle's removal flag is set.
struct Flagged {
  AFEM_HOST_DEVICE bool operator()(std::uint8_t remove) const { return remove != 0; }
};

/// What SimulationState::move_particles() moves the particles through: room for every array.
struct GatherScratch {
  memory::Temporary<double> values;         ///< D per particle
  memory::Temporary<std::int32_t> indices;  ///< one per particle
};

/// Moves `width` values of every particle that stays (`stride` apart per particle in `from`) to
/// its slot among those that stay.
template <class T>
struct GatherKept {
  memory::ArrayView<const std::uint8_t> remove;
  memory::ArrayView<const std::int32_t> slot;
  memory::ArrayView<const T> from;
  memory::ArrayView<T> to;
  std::size_t width = 1;
  std::size_t stride = 1;
  AFEM_HOST_DEVICE void operator()(std::size_t p) const {
    if (remove[p] == 0) {
      const auto s = static_cast<std::size_t>(slot[p]);
      for (std::size_t k = 0; k < width; ++k) {
        to[s * width + k] = from[p * stride + k];
      }
    }
  }
};

/// Copies `width` values of particle order[k] (particle k when `order` is empty), `from_stride`
/// apart per particle in `from`, to slot k, `to_stride` apart per particle in `to`.
template <class T>
struct CopyParticles {
  memory::ArrayView<const std::int32_t> order;
  memory::ArrayView<const T> from;
  memory::ArrayView<T> to;
  std::size_t width = 1;
  std::size_t from_stride = 1;
  std::size_t to_stride = 1;
  AFEM_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t p = order.empty() ? k : static_cast<std::size_t>(order[k]);
    for (std::size_t c = 0; c < width; ++c) {
      to[k * to_stride + c] = from[p * from_stride + c];
    }
  }
};

/// The deformation of added particles: J^(1/D) I from their volume ratio J.
template <int D>
struct IsotropicDeformation {
  memory::ArrayView<const double> volume_ratios;
  memory::ArrayView<double> deformation;
  AFEM_HOST_DEVICE void operator()(std::size_t p) const {
    const double stretch = std::pow(volume_ratios[p], 1.0 / D);
    for (int r = 0; r < D; ++r) {
      for (int c = 0; c < D; ++c) {
        deformation[p * D * D + static_cast<std::size_t>(r * D + c)] = r == c ? stretch : 0.0;
      }
    }
  }
};

template <int D>
geometry::Grid<D> make_grid(const Setup& setup) {
  AFEM_EXPECTS(setup.dimension == D, "Simulation<" + std::to_string(D) + ">: Setup.dimension is " +
                                         std::to_string(setup.dimension));
  validate_setup(setup);
  return setup_grid<D>(setup);
}

/// The setup a simulation keeps: no particles, the time step and the capacity resolved.
inline Setup resolved(const Setup& setup) {
  Setup kept = setup;
  kept.particles = ParticleBatch{};
  kept.dt = setup.time_step();
  kept.capacity = setup.particle_capacity();
  return kept;
}

/// The kernels' constants of each material of `setup`.
inline std::vector<MaterialView> material_views(const Setup& setup) {
  std::vector<MaterialView> views;
  for (const Material& m : setup.materials) {
    views.emplace_back(m);
  }
  return views;
}

template <class T>
memory::Temporary<T> upload(memory::Pool& pool, const std::vector<T>& values, const char* label) {
  auto buffer = memory::borrow_temporary<T>(pool, values.size(), label);
  memory::copy_to_device(buffer.view(), std::span<const T>(values), pool.stream());
  pool.stream().synchronize();
  return buffer;
}

template <class T>
std::vector<T> download(memory::Pool& pool, memory::ArrayView<const T> values) {
  std::vector<T> host(values.size());
  memory::copy_to_host(std::span<T>(host), values, pool.stream());
  return host;
}

}  // namespace detail

namespace detail {

/// The spaces of the Q1 grid: vertices carry the mass and velocity.
template <int D>
struct Q1Spaces {
  using Scalar = fem::LagrangeSpace<geometry::Grid<D>, 1, 1>;
  using Vector = fem::LagrangeSpace<geometry::Grid<D>, 1, D>;
  /// The grid whose vertices are the nodes (for output).
  static geometry::Grid<D> node_grid(const geometry::Grid<D>& grid) { return grid; }
};

/// The spaces of quadratic B-splines: cell centres and a ghost layer carry them.
template <int D>
struct BSplineSpaces {
  using Scalar = fem::BSplineSpace<geometry::Grid<D>, 1>;
  using Vector = fem::BSplineSpace<geometry::Grid<D>, D>;
  static geometry::Grid<D> node_grid(const geometry::Grid<D>& grid) {
    std::array<double, D> origin{};
    std::array<double, D> size{};
    std::array<std::int32_t, D> resolution{};
    for (std::size_t d = 0; d < D; ++d) {
      size[d] = grid.view().cell_size[d];
      origin[d] = grid.view().origin[d] - 0.5 * size[d];
      resolution[d] = grid.view().resolution[d] + 1;
    }
    return geometry::Grid<D>(origin, size, resolution);
  }
};

/// What a Simulation<D> owns whatever its grid basis: the setup, the grid and the particles.
template <int D>
class SimulationState {
public:
  using Grid = geometry::Grid<D>;

  SimulationState(const Setup& setup, memory::Pool& pool, memory::Arena& step_arena);
  SimulationState(const SimulationState&) = delete;
  SimulationState& operator=(const SimulationState&) = delete;
  SimulationState(SimulationState&&) = delete;
  SimulationState& operator=(SimulationState&&) = delete;
  virtual ~SimulationState() = default;

  virtual void rebin() = 0;
  /// Locates and bins the particles into the cells selected before, without selecting cells
  /// (the captured step's rebin: no device-to-host read).
  virtual void bin_particles() = 0;
  /// Selects every cell of the grid as active (the captured step's fixed shape) and restricts
  /// the spaces to them; reads counts back, so it runs outside captures.
  virtual void select_all_cells() = 0;
  virtual void particle_to_grid() = 0;
  virtual void update_grid() = 0;
  virtual void grid_to_particle() = 0;
  [[nodiscard]] virtual GridState grid_state() const = 0;
  [[nodiscard]] virtual std::int32_t active_cell_count() const = 0;
  [[nodiscard]] virtual std::int32_t outside_count() const = 0;
  [[nodiscard]] virtual geometry::MeshData grid_mesh() const = 0;
  /// The incompressible fluid's pressure (empty for other materials).
  [[nodiscard]] virtual memory::ArrayView<double> pressure() = 0;
  [[nodiscard]] ParticleState particles() const;
  [[nodiscard]] ParticleViews views();
  [[nodiscard]] MaterialLookup materials() const {
    return {material_table_.view(), materials_.view().subview(0, count())};
  }
  [[nodiscard]] std::size_t count() const { return static_cast<std::size_t>(particle_count_); }
  [[nodiscard]] std::size_t capacity() const { return static_cast<std::size_t>(capacity_); }

  /// Nodes with at most this mass take no velocity.
  [[nodiscard]] double min_grid_mass() const {
    double density = std::numeric_limits<double>::infinity();
    for (const Material& m : setup_.materials) {
      density = std::min(density, m.density);
    }
    return 1e-12 * density * std::pow(setup_.cell_size(), D);
  }
  static constexpr std::ptrdiff_t faces = std::ptrdiff_t{2} * D;
  [[nodiscard]] bool has_open_face() const {
    return std::any_of(setup_.boundaries.begin(), setup_.boundaries.begin() + faces,
                       [](Boundary b) { return b == Boundary::open; });
  }

  void add_particles(const ParticleBatch& batch);
  /// Room to move `n` particles (move_particles()), from the arena under `label`.
  [[nodiscard]] GatherScratch borrow_gather_scratch(std::size_t n, const char* label);
  /// Rewrites every particle array: move(from, to, width, stride) gives the kernel that runs over
  /// [0, sources) and fills `width` values of each of the first `count` particles of `to` from
  /// `from` (`stride` values per particle), which then replace them in the array; `count` becomes
  /// the particle count. Allocates nothing (`scratch` holds `count`).
  template <class Move>
  void move_particles(std::size_t sources, std::size_t count, GatherScratch& scratch,
                      const Move& move);
  /// The particles in the order of the last binning: cell by cell, those outside last.
  [[nodiscard]] virtual memory::ArrayView<const std::int32_t> cell_order() const = 0;
  /// Moves the particles into the order of the last binning (each cell's in their previous
  /// order, those outside the grid last); `scratch` holds every particle.
  void sort_particles(GatherScratch& scratch);
  /// Throws afem::Error naming `part` when the particles were sorted after the last binning.
  void expect_binned(const char* part) const {
    AFEM_EXPECTS(!sorted_since_binning_,
                 std::string("Simulation::") + part +
                     ": the particles were sorted after the last rebin(); call rebin() first");
  }
  /// Whether step `steps_` sorts the particles at its end.
  [[nodiscard]] bool sorts_now() const {
    return sort_interval_ > 0 && steps_ % sort_interval_ == 0;
  }
  /// Removes the flagged particles, keeping the order of the others (scratch from the arena).
  void compact(memory::ArrayView<const std::uint8_t> remove, std::size_t removed);
  /// Removes the particles outside the grid (they left through an open face); throws
  /// throw_blown_up() for particles at non-finite positions.
  void remove_outside();
  /// Throws afem::Error: `count` particles are `where` at step steps_, the run has blown up.
  [[noreturn]] void throw_blown_up(std::int64_t count, const char* where) const {
    throw Error("Simulation::step: " + std::to_string(count) +
                (count == 1 ? " particle " : " particles ") + where + " at step " +
                std::to_string(steps_) +
                ": the run has blown up; reduce Setup.cfl or give a smaller Setup.dt");
  }
  [[nodiscard]] Checkpoint checkpoint();
  void restore(const Checkpoint& checkpoint);

  /// The fixed-shape step on the current arena: bin, particle_to_grid, update_grid,
  /// grid_to_particle (every cell selected before).
  void fixed_step() {
    bin_particles();
    particle_to_grid();
    update_grid();
    grid_to_particle();
  }
  /// One step through the capture cache (StepMode::captured).
  void captured_step();
  /// Releases every captured step (they refer to the binning a direct step replaces).
  void release_captures() noexcept {
    if (captures_) {
      captures_->clear();
    }
    captured_count_ = -1;
    all_cells_ = false;
  }

  Setup setup_;
  memory::Pool* pool_;
  memory::Arena* arena_;
  Grid grid_;
  std::int32_t capacity_ = 0;
  std::int32_t particle_count_ = 0;
  std::int64_t steps_ = 0;
  /// Steps between sorts of the particles into cell order (0: never).
  int sort_interval_ = default_particle_sort_interval;
  /// Whether the particles were sorted after the last binning (which then names old indices).
  bool sorted_since_binning_ = false;
  std::int64_t particles_left_ = 0;
  memory::Temporary<MaterialView> material_table_;
  memory::Temporary<double> positions_;
  memory::Temporary<double> velocities_;
  memory::Temporary<double> affine_;
  memory::Temporary<double> deformation_;
  memory::Temporary<double> volumes_;
  memory::Temporary<std::int32_t> materials_;
  memory::Temporary<double> forces_;
  ProjectionResult pressure_solve_;
  StepMode step_mode_ = StepMode::direct;
  /// The captured step (one entry, key 0, captured for captured_count_ particles).
  std::unique_ptr<memory::CaptureCache<int>> captures_;
  std::int32_t captured_count_ = -1;
  /// Scratch bytes a captured step reserves: the step arena's peak after a sizing step.
  std::size_t capture_scratch_bytes_ = 0;
  /// The most particles a sizing step ran with (-1: none yet).
  std::int32_t sized_count_ = -1;
  /// Sizing steps still to run before the next capture.
  int sizing_steps_left_ = 0;
  std::uint64_t sizing_steps_ = 0;
  /// Whether every cell is selected (the captured step's shape) rather than the active ones.
  bool all_cells_ = false;
  /// Adds other processes' values at shared grid nodes (none on one process).
  BorderSum* border_sum_ = nullptr;
};

/// The step on the grid spaces `Spaces` (Q1Spaces or BSplineSpaces).
template <int D, class Spaces>
class SimulationOn final : public SimulationState<D> {
public:
  using Grid = geometry::Grid<D>;
  using ScalarSpace = typename Spaces::Scalar;
  using VectorSpace = typename Spaces::Vector;
  static_assert(std::is_same_v<typename ScalarSpace::Element, typename VectorSpace::Element>,
                "the vector forms read the scalar space's restriction: the spaces share nodes");

  SimulationOn(const Setup& setup, memory::Pool& pool, memory::Arena& step_arena);
  /// Releases the captured step first: its recording refers to the members below.
  ~SimulationOn() override { this->release_captures(); }
  SimulationOn(const SimulationOn&) = delete;
  SimulationOn& operator=(const SimulationOn&) = delete;
  SimulationOn(SimulationOn&&) = delete;
  SimulationOn& operator=(SimulationOn&&) = delete;
  void rebin() override;
  void bin_particles() override;
  void select_all_cells() override;
  void particle_to_grid() override;
  void update_grid() override;
  void grid_to_particle() override;
  [[nodiscard]] GridState grid_state() const override;
  [[nodiscard]] std::int32_t active_cell_count() const override {
    return active_partition_.cell_count();
  }
  [[nodiscard]] std::int32_t outside_count() const override { return quadrature_.outside_count(); }
  [[nodiscard]] memory::ArrayView<const std::int32_t> cell_order() const override {
    return quadrature_.view().cell_particle_indices;
  }
  [[nodiscard]] geometry::MeshData grid_mesh() const override {
    return Spaces::node_grid(this->grid_).to_mesh_data();
  }
  [[nodiscard]] memory::ArrayView<double> pressure() override {
    return staggered_    ? staggered_->pressure()
           : projection_ ? projection_->pressure()
                         : memory::ArrayView<double>{};
  }

  /// Grid velocity = momentum / mass + gravity_dt, with the closed faces (`momentum` may be
  /// velocity_'s own dofs).
  void apply_grid_velocity(memory::ArrayView<const double> momentum, bool with_gravity);

  ScalarSpace scalar_space_;
  VectorSpace vector_space_;
  GridNodes<D> nodes_;
  geometry::CellBasedGeometryPartition<Grid> active_partition_;
  quadrature::Cells<Grid> active_cells_;
  fem::SpaceRestriction<ScalarSpace, quadrature::Cells<Grid>> scalar_restriction_;
  /// The scalar restriction read with D components (the vector space has the same nodes).
  fem::ComponentRestriction<fem::SpaceRestriction<ScalarSpace, quadrature::Cells<Grid>>, D>
      vector_restriction_;
  fem::DiscreteField<ScalarSpace> mass_;
  fem::DiscreteField<VectorSpace> velocity_;
  quadrature::PicQuadrature<Grid> quadrature_;
  /// The incompressible fluid's collocated projection (B-spline velocities).
  std::unique_ptr<PressureProjection<D, ScalarSpace>> projection_;
  /// The incompressible fluid's staggered velocity (Q1), which replaces the collocated one in
  /// the transfers; velocity_ then holds it averaged to the vertices, for output.
  std::unique_ptr<StaggeredVelocity<D>> staggered_;

  /// Quadratic B-splines take MLS-MPM's transfers (one pass each way, no basis gradient); Q1
  /// takes APIC with the remap (its gradients jump between cells and its moment matrix varies
  /// with the particle's place in the cell).
  static constexpr bool mls = std::is_same_v<Spaces, BSplineSpaces<D>>;
  /// The diagonal of the quadratic B-spline's inverse moment matrix: 4 / h_d^2.
  [[nodiscard]] Vector<D> inverse_moment() const {
    Vector<D> m;
    for (int d = 0; d < D; ++d) {
      const double h = this->grid_.view().cell_size[static_cast<std::size_t>(d)];
      m[d] = 4.0 / (h * h);
    }
    return m;
  }
  /// The particle-to-grid momentum form of this basis.
  [[nodiscard]] detail::MomentumForm<D, mls> momentum_form(const ParticleViews& views) const {
    return {this->materials(), views.velocities, views.affine,    views.deformation,
            views.forces,      this->setup_.dt,  inverse_moment()};
  }
  /// The end of grid_to_particle(): the particles take `new_velocities` and move, F takes the
  /// affine matrices (written before).
  void update_particles(memory::ArrayView<const double> new_velocities);
  /// The staggered step's transfers.
  void staggered_particle_to_grid();
  void staggered_update_grid();
  void staggered_grid_to_particle();
};

}  // namespace detail

template <int D>
detail::SimulationState<D>::SimulationState(const Setup& setup, memory::Pool& pool,
                                            memory::Arena& step_arena)
    : setup_(detail::resolved(setup)),
      pool_(&pool),
      arena_(&step_arena),
      grid_(detail::make_grid<D>(setup)),
      capacity_(static_cast<std::int32_t>(setup.particle_capacity())),
      material_table_(detail::upload(pool, detail::material_views(setup), "Mpm.materials")),
      positions_(memory::borrow_temporary<double>(pool, capacity() * D, "Mpm.positions")),
      velocities_(memory::borrow_temporary<double>(pool, capacity() * D, "Mpm.velocities")),
      affine_(memory::borrow_temporary<double>(pool, capacity() * D * D, "Mpm.affine")),
      deformation_(memory::borrow_temporary<double>(pool, capacity() * D * D, "Mpm.deformation")),
      volumes_(memory::borrow_temporary<double>(pool, capacity(), "Mpm.volumes")),
      materials_(memory::borrow_temporary<std::int32_t>(pool, capacity(), "Mpm.material_index")),
      forces_(setup.external_forces
                  ? memory::borrow_temporary<double>(pool, capacity() * D, "Mpm.forces")
                  : memory::Temporary<double>{}) {
  AFEM_EXPECTS(step_arena.stream() == pool.stream(),
               "Simulation: the step arena and the pool run on different streams; give the "
               "arena the pool's stream");
  add_particles(setup.particles);
}

template <int D>
ParticleViews detail::SimulationState<D>::views() {
  const std::size_t n = count();
  return {positions_.view().subview(0, n * D),
          velocities_.view().subview(0, n * D),
          affine_.view().subview(0, n * D * D),
          deformation_.view().subview(0, n * D * D),
          volumes_.view().subview(0, n),
          materials_.view().subview(0, n),
          setup_.external_forces ? forces_.view().subview(0, n * D) : memory::ArrayView<double>{}};
}

template <int D>
void detail::SimulationState<D>::add_particles(const ParticleBatch& batch) {
  check_particles(setup_, batch, "add_particles: the batch");
  const std::size_t first = count();
  const auto added = static_cast<std::size_t>(batch.count());
  if (first + added > static_cast<std::size_t>(capacity_)) {
    throw Error("add_particles: " + std::to_string(added) + " particles after the " +
                std::to_string(first) + " there are exceed the capacity of " +
                std::to_string(capacity_) + " (Setup.capacity)");
  }
  if (added == 0) {
    return;
  }
  const memory::Stream& stream = pool_->stream();
  const memory::ArenaScope scope(*arena_);
  auto policy = memory::arena_policy(*arena_, "Mpm.thrust");
  memory::copy_to_device(positions_.view().subview(first * D, added * D),
                         std::span<const double>(batch.positions), stream);
  memory::copy_to_device(velocities_.view().subview(first * D, added * D),
                         std::span<const double>(batch.velocities), stream);
  memory::copy_to_device(volumes_.view().subview(first, added),
                         std::span<const double>(batch.volumes), stream);
  const auto materials = materials_.view().subview(first, added);
  if (batch.materials.empty()) {
    thrust::fill(policy, materials.begin(), materials.end(), std::int32_t{0});
  } else {
    memory::copy_to_device(materials, std::span<const std::int32_t>(batch.materials), stream);
  }
  const auto affine = affine_.view().subview(first * D * D, added * D * D);
  thrust::fill(policy, affine.begin(), affine.end(), 0.0);
  auto ratios = memory::borrow_temporary<double>(*arena_, added, "Mpm.volume_ratios");
  if (batch.volume_ratios.empty()) {
    thrust::fill(policy, ratios.view().begin(), ratios.view().end(), 1.0);
  } else {
    memory::copy_to_device(ratios.view(), std::span<const double>(batch.volume_ratios), stream);
  }
  thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), added,
                     detail::IsotropicDeformation<D>{
                         ratios.view(), deformation_.view().subview(first * D * D, added * D * D)});
  if (setup_.external_forces) {
    const auto forces = forces_.view().subview(first * D, added * D);
    thrust::fill(policy, forces.begin(), forces.end(), 0.0);
  }
  stream.synchronize();
  particle_count_ += static_cast<std::int32_t>(added);
}

template <int D>
detail::GatherScratch detail::SimulationState<D>::borrow_gather_scratch(std::size_t n,
                                                                        const char* label) {
  return {memory::borrow_temporary<double>(*arena_, n * D, label),
          memory::borrow_temporary<std::int32_t>(*arena_, n, label)};
}

template <int D>
template <class Move>
void detail::SimulationState<D>::move_particles(std::size_t sources, std::size_t count,
                                                GatherScratch& scratch, const Move& move) {
  auto policy = memory::arena_policy(*arena_, "Mpm.thrust");
  // An array of `stride` values per particle moves at most D of them at a time (the D x D
  // matrices in D passes), so the scratch holds D values per particle.
  const auto rewrite = [&](auto& buffer, std::size_t stride) {
    using T = typename std::remove_reference_t<decltype(buffer)>::value_type;
    for (std::size_t first = 0; first < stride; first += D) {
      const std::size_t width = std::min<std::size_t>(D, stride - first);
      memory::ArrayView<T> to;
      if constexpr (std::is_same_v<T, double>) {
        to = scratch.values.view().subview(0, count * width);
      } else {
        to = scratch.indices.view().subview(0, count);
      }
      const memory::ArrayView<T> all = buffer.view();
      const memory::ArrayView<T> columns = all.subview(first, all.size() - first);
      thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), sources,
                         move(memory::ArrayView<const T>(columns), to, width, stride));
      if (width == stride) {
        thrust::copy(policy, to.begin(), to.end(), columns.begin());
      } else {
        thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), count,
                           detail::CopyParticles<T>{{}, to, columns, width, width, stride});
      }
    }
  };
  rewrite(positions_, D);
  rewrite(velocities_, D);
  rewrite(affine_, D * D);
  rewrite(deformation_, D * D);
  rewrite(volumes_, 1);
  rewrite(materials_, 1);
  if (setup_.external_forces) {
    rewrite(forces_, D);
  }
  pool_->stream().synchronize();
  particle_count_ = static_cast<std::int32_t>(count);
}

template <int D>
void detail::SimulationState<D>::compact(memory::ArrayView<const std::uint8_t> remove,
                                         std::size_t removed) {
  const std::size_t n = count();
  if (removed == 0) {
    return;
  }
  auto policy = memory::arena_policy(*arena_, "Mpm.thrust");
  // Every buffer is borrowed before the first particle moves: a failed borrow changes nothing.
  auto slot = memory::borrow_temporary<std::int32_t>(*arena_, n, "Mpm.removal");
  GatherScratch scratch = borrow_gather_scratch(n - removed, "Mpm.removal");
  const auto keeps = thrust::make_transform_iterator(remove.begin(), detail::Keeps{});
  thrust::exclusive_scan(policy, keeps, keeps + static_cast<std::ptrdiff_t>(n),
                         slot.view().begin());
  const memory::ArrayView<const std::int32_t> slots = slot.view();
  move_particles(n, n - removed, scratch,
                 [&](auto from, auto to, std::size_t width, std::size_t stride) {
                   using T = typename decltype(to)::value_type;
                   return detail::GatherKept<T>{remove, slots, from, to, width, stride};
                 });
}

template <int D>
void detail::SimulationState<D>::sort_particles(GatherScratch& scratch) {
  expect_binned("sort_particles");
  const memory::ArrayView<const std::int32_t> order = cell_order();
  AFEM_EXPECTS(order.size() == count(), "Simulation::sort_particles: " + std::to_string(count()) +
                                            " particles, of which the last rebin() binned " +
                                            std::to_string(order.size()) + "; call rebin() first");
  move_particles(order.size(), order.size(), scratch,
                 [&](auto from, auto to, std::size_t width, std::size_t stride) {
                   using T = typename decltype(to)::value_type;
                   return detail::CopyParticles<T>{order, from, to, width, stride, width};
                 });
  sorted_since_binning_ = true;
}

template <int D>
void detail::SimulationState<D>::remove_outside() {
  const std::size_t n = count();
  auto policy = memory::arena_policy(*arena_, "Mpm.thrust");
  auto outside = memory::borrow_temporary<std::uint8_t>(*arena_, n, "Mpm.removal");
  thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), n,
                     detail::FlagOutside<D>{grid_.view(), positions_.view(), outside.view()});
  const auto blown = static_cast<std::int64_t>(
      thrust::count(policy, outside.view().begin(), outside.view().end(), std::uint8_t{2}));
  if (blown > 0) {
    throw_blown_up(blown, "at non-finite positions");
  }
  const auto removed = static_cast<std::size_t>(
      thrust::count(policy, outside.view().begin(), outside.view().end(), std::uint8_t{1}));
  compact(outside.view(), removed);
  particles_left_ += static_cast<std::int64_t>(removed);
}

template <int D, class Spaces>
detail::SimulationOn<D, Spaces>::SimulationOn(const Setup& setup, memory::Pool& pool,
                                              memory::Arena& step_arena)
    : SimulationState<D>(setup, pool, step_arena),
      scalar_space_(this->grid_, pool, step_arena),
      vector_space_(this->grid_, pool, step_arena),
      nodes_(grid_nodes(vector_space_)),
      active_partition_(this->grid_, pool, {.max_cells = this->grid_.cell_count(), .sides = false}),
      active_cells_(active_partition_),
      scalar_restriction_(scalar_space_, active_cells_, step_arena),
      vector_restriction_(scalar_restriction_),
      mass_(scalar_space_),
      velocity_(vector_space_),
      quadrature_(active_cells_, pool, {.max_particles = this->capacity_}),
      projection_(setup.materials[0].kind == MaterialKind::incompressible_fluid &&
                          !std::is_same_v<Spaces, Q1Spaces<D>>
                      ? std::make_unique<PressureProjection<D, ScalarSpace>>(
                            scalar_space_, setup.boundary_cells, setup.materials[0].density,
                            this->min_grid_mass(), pool, step_arena)
                      : nullptr),
      staggered_(setup.materials[0].kind == MaterialKind::incompressible_fluid &&
                         std::is_same_v<Spaces, Q1Spaces<D>>
                     ? std::make_unique<StaggeredVelocity<D>>(this->grid_, setup,
                                                              setup.pressure_preconditioner,
                                                              this->capacity_, pool, step_arena)
                     : nullptr) {
  pool.stream().synchronize();
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::rebin() {
  memory::Arena& arena = *this->arena_;
  this->release_captures();
  if (this->has_open_face()) {
    this->remove_outside();
  }
  // The particles are located once: their cells select the active cells, then they are binned
  // into them.
  const auto views = this->views();
  detail::rebin_particles(quadrature_, active_partition_, scalar_restriction_,
                          this->grid_.cell_count(), views.positions, views.volumes, arena);
  if (!this->has_open_face()) {
    // The step keeps particles between the closed faces: one outside has a non-finite position.
    const std::int32_t outside = quadrature_.outside_count();
    if (outside > 0) {
      this->throw_blown_up(outside, "outside the closed box");
    }
  }
  if (staggered_) {
    staggered_->rebin(views.positions, views.volumes, arena);
  }
  this->sorted_since_binning_ = false;
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::bin_particles() {
  memory::Arena& arena = *this->arena_;
  const auto views = this->views();
  quadrature_.bin(quadrature_.locate(views.positions, views.volumes, arena), arena);
  this->sorted_since_binning_ = false;
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::select_all_cells() {
  memory::Arena& arena = *this->arena_;
  auto mask = memory::borrow_temporary<std::uint8_t>(
      arena, static_cast<std::size_t>(this->grid_.cell_count()), "Mpm.active_mask");
  auto policy = memory::arena_policy(arena, "Mpm.thrust");
  thrust::fill(policy, mask.view().begin(), mask.view().end(), std::uint8_t{1});
  active_partition_.select_mask(mask.view(), arena);
  scalar_restriction_.rebuild(arena);
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::particle_to_grid() {
  memory::Arena& arena = *this->arena_;
  const detail::MassForm mass_form{this->materials()};
  if (staggered_) {
    fem::integrate(mass_.dofs(), quadrature_, scalar_restriction_, mass_form, arena);
    staggered_particle_to_grid();
    return;
  }
  const ParticleViews views = this->views();
  // Mass and momentum in one pass over the particles.
  fem::integrate(
      std::tuple{fem::LinearForm{velocity_.dofs(), vector_restriction_, momentum_form(views)},
                 fem::LinearForm{mass_.dofs(), scalar_restriction_, mass_form}},
      quadrature_, arena);
  if (this->border_sum_ != nullptr) {
    this->border_sum_->add_shared(mass_.dofs(), velocity_.dofs());
  }
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::update_grid() {
  if (staggered_) {
    staggered_update_grid();
    return;
  }
  apply_grid_velocity(velocity_.dofs(), true);
  if (projection_) {
    // Leaves the wall-held components and the nodes without fluid as they are.
    auto fraction = memory::borrow_temporary<double>(
        *this->arena_, static_cast<std::size_t>(this->grid_.cell_count()), "Mpm.fluid_fraction");
    auto policy = memory::arena_policy(*this->arena_, "Mpm.thrust");
    thrust::fill(policy, fraction.view().begin(), fraction.view().end(), 0.0);
    thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0),
                       active_cells_.element_count(),
                       detail::FluidFraction<typename quadrature::Cells<Grid>::View>{
                           quadrature_.view(), active_cells_.view(), fraction.view()});
    this->pressure_solve_ =
        projection_->project(velocity_.dofs(), fraction.view(), this->setup_.dt, *this->arena_);
  }
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::apply_grid_velocity(memory::ArrayView<const double> momentum,
                                                          bool with_gravity) {
  const Setup& setup = this->setup_;
  detail::UpdateGrid<D> update{nodes_, mass_.dofs(), momentum, velocity_.dofs()};
  for (std::size_t d = 0; d < D; ++d) {
    update.gravity_dt[d] = with_gravity ? setup.gravity[d] * setup.dt : 0.0;
    update.boundaries[2 * d] = setup.boundaries[2 * d];
    update.boundaries[2 * d + 1] = setup.boundaries[2 * d + 1];
  }
  update.min_mass = this->min_grid_mass();
  update.boundary_cells = setup.boundary_cells;
  update.closed =
      !std::all_of(setup.boundaries.begin(), setup.boundaries.begin() + SimulationState<D>::faces,
                   [](Boundary b) { return b == Boundary::open; });
  auto policy = memory::arena_policy(*this->arena_, "Mpm.thrust");
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), vector_space_.node_count(),
                     update);
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::grid_to_particle() {
  if (staggered_) {
    staggered_grid_to_particle();
    return;
  }
  memory::Arena& arena = *this->arena_;
  const std::size_t n = this->count();
  const ParticleViews particles = this->views();
  if constexpr (mls) {
    // MLS-MPM: each particle's velocity (into scratch) and affine velocity in one pass over the
    // grid velocity, after the one allocation (which, failing, leaves the particles as they
    // were), then the particles' update.
    auto velocities = memory::borrow_temporary<double>(arena, n * D, "Mpm.new_velocities");
    fem::interpolate(particles.affine, quadrature_,
                     detail::VelocityAndAffineAt<D>{inverse_moment(), velocities.view()}, arena,
                     velocity_);
    update_particles(velocities.view());
    return;
  }
  // The particles' new velocities go to scratch first and every allocation comes before the two
  // kernels that write the particle state (the affine matrices, then the rest), so an error (out
  // of memory) leaves the particles as they were. The particles take the grid velocity (recorded as
  // the remap finds it, in the same pass); their momentum is mapped back to the grid and the
  // velocity gradient that moves F comes from that remapped velocity (a node that holds little mass
  // then carries its particles' velocity instead of its own large acceleration).
  auto velocities = memory::borrow_temporary<double>(arena, n * D, "Mpm.new_velocities");
  auto momentum = memory::borrow_temporary<double>(
      arena, static_cast<std::size_t>(vector_space_.dof_count()), "Mpm.remapped_momentum");
  fem::integrate(momentum.view(), quadrature_, vector_restriction_,
                 detail::RemapForm<D>{velocities.view(), this->materials()}, arena, velocity_);
  if (this->border_sum_ != nullptr) {
    this->border_sum_->add_shared({}, momentum.view());
  }
  apply_grid_velocity(momentum.view(), false);
  fem::interpolate(particles.affine, quadrature_, detail::VelocityGradientAt{}, arena, velocity_);
  update_particles(velocities.view());
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::update_particles(
    memory::ArrayView<const double> new_velocities) {
  const Setup& setup = this->setup_;
  const ParticleViews particles = this->views();
  detail::UpdateParticles<D> update{
      this->materials(),    new_velocities,        particles.affine, particles.positions,
      particles.velocities, particles.deformation, setup.dt};
  const double margin = setup.boundary_cells * setup.cell_size();
  for (std::size_t d = 0; d < D; ++d) {
    const bool low_open = setup.boundaries[2 * d] == Boundary::open;
    const bool high_open = setup.boundaries[2 * d + 1] == Boundary::open;
    const double infinity = std::numeric_limits<double>::infinity();
    update.lower[d] = low_open ? -infinity : setup.origin[d] + margin;
    update.upper[d] = high_open ? infinity : setup.origin[d] + setup.extent[d] - margin;
  }
  auto policy = memory::arena_policy(*this->arena_, "Mpm.thrust");
  thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), this->count(), update);
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::staggered_particle_to_grid() {
  const ParticleViews views = this->views();
  staggered_->particle_to_grid(
      detail::MassForm{this->materials()},
      [&](int d) {
        return detail::FluidMomentumForm<D>{this->materials(), views.velocities, views.affine,
                                            views.forces,      this->setup_.dt,  d};
      },
      *this->arena_);
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::staggered_update_grid() {
  memory::Arena& arena = *this->arena_;
  auto fluid = memory::borrow_temporary<std::uint8_t>(
      arena, static_cast<std::size_t>(this->grid_.cell_count()), "Mpm.fluid_cells");
  auto policy = memory::arena_policy(arena, "Mpm.thrust");
  thrust::fill(policy, fluid.view().begin(), fluid.view().end(), std::uint8_t{0});
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0),
                     active_cells_.element_count(),
                     detail::MarkFluidCells<D, typename quadrature::Cells<Grid>::View>{
                         active_cells_.view(), staggered_->lattice(), fluid.view()});
  const Setup& setup = this->setup_;
  const MacProjectionResult result =
      staggered_->update(setup.gravity, setup.dt, this->min_grid_mass(), fluid.view(), arena);
  this->pressure_solve_ = ProjectionResult{result.solve, result.divergence};
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::staggered_grid_to_particle() {
  memory::Arena& arena = *this->arena_;
  const std::size_t n = this->count();
  // Every allocation comes before the kernel that writes the particle state, so an error (out of
  // memory) leaves the particles as they were.
  auto velocities = memory::borrow_temporary<double>(arena, n * D, "Mpm.new_velocities");
  std::array<memory::Temporary<double>, D> blocks;
  std::array<memory::ArrayView<double>, D> out;
  detail::GatherStaggered<D> gather{{}, velocities.view(), this->views().affine};
  for (std::size_t d = 0; d < D; ++d) {
    memory::replace_owned(
        blocks[d], memory::borrow_temporary<double>(arena, n * (D + 1), "Mpm.staggered_values"));
    out[d] = blocks[d].view();
    gather.blocks[d] = blocks[d].view();
  }
  staggered_->interpolate(out, detail::ValueAndGradientAt<D>{}, arena);
  auto policy = memory::arena_policy(arena, "Mpm.thrust");
  thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), n, gather);
  update_particles(velocities.view());
}

namespace detail {

/// Points an arena slot at another arena until it goes out of scope.
class ArenaSwap {
public:
  ArenaSwap(memory::Arena*& slot, memory::Arena& other)
      : slot_(&slot), saved_(std::exchange(slot, &other)) {}
  ~ArenaSwap() { *slot_ = saved_; }
  ArenaSwap(const ArenaSwap&) = delete;
  ArenaSwap& operator=(const ArenaSwap&) = delete;
  ArenaSwap(ArenaSwap&&) = delete;
  ArenaSwap& operator=(ArenaSwap&&) = delete;

private:
  memory::Arena** slot_;
  memory::Arena* saved_;
};

}  // namespace detail

template <int D>
void detail::SimulationState<D>::captured_step() {
  if (has_open_face()) {
    remove_outside();
  }
  if (!all_cells_) {
    release_captures();
    select_all_cells();
    all_cells_ = true;
    // Two binnings before the capture: the quadrature's buffers of the first go back to the
    // pool's cache in the second, and the capture's binning takes them from there (a capture
    // must not ask the pool's upstream for memory).
    sizing_steps_left_ = 2;
  }
  if (particle_count_ > sized_count_) {
    sizing_steps_left_ = std::max(sizing_steps_left_, 1);
  }
  if (sizing_steps_left_ > 0) {
    // A sizing step: the fixed-shape step runs directly, and the step arena's peak sizes the
    // scratch of the captures that follow (a capture cannot grow its scratch once recorded).
    captures_->erase(0);
    captured_count_ = -1;
    fixed_step();
    const std::size_t peak = arena_->stats().peak_used_bytes;
    capture_scratch_bytes_ = std::max(capture_scratch_bytes_, peak + peak / 8);
    captures_->set_scratch_bytes(capture_scratch_bytes_);
    sized_count_ = std::max(sized_count_, particle_count_);
    --sizing_steps_left_;
    ++sizing_steps_;
    return;
  }
  if (captured_count_ != particle_count_) {
    captures_->erase(0);
  }
  try {
    captures_->run(0, pool_->stream(), {}, {}, [this](memory::CaptureRecorder& recorder) {
      memory::Arena& scratch = recorder.scratch();
      recorder.launch([this, &scratch, count = particle_count_](const memory::Stream&) {
        // On the CPU the recording runs the step's host code at every replay: a replay for
        // another particle count than the capture's would be a stale recording.
        AFEM_EXPECTS(particle_count_ == count,
                     "Simulation: a step captured for " + std::to_string(count) +
                         " particles was replayed with " + std::to_string(particle_count_));
        const ArenaSwap swap(arena_, scratch);
        fixed_step();
      });
    });
  } catch (...) {
    // Nothing of a failed capture is kept; the next step selects, sizes and captures anew.
    release_captures();
    sized_count_ = -1;
    throw;
  }
  captured_count_ = particle_count_;
}

template <int D>
ParticleState detail::SimulationState<D>::particles() const {
  memory::Pool& pool = *this->pool_;
  const std::size_t n = count();
  ParticleState state;
  state.positions = detail::download<double>(pool, positions_.view().subview(0, n * D));
  state.velocities = detail::download<double>(pool, velocities_.view().subview(0, n * D));
  state.affine = detail::download<double>(pool, affine_.view().subview(0, n * D * D));
  state.deformation = detail::download<double>(pool, deformation_.view().subview(0, n * D * D));
  state.masses = detail::download<double>(pool, volumes_.view().subview(0, n));
  state.materials = detail::download<std::int32_t>(pool, materials_.view().subview(0, n));
  pool.stream().synchronize();
  for (std::size_t p = 0; p < state.masses.size(); ++p) {
    state.masses[p] *= setup_.materials[static_cast<std::size_t>(state.materials[p])].density;
  }
  return state;
}

template <int D>
Checkpoint detail::SimulationState<D>::checkpoint() {
  memory::Pool& pool = *this->pool_;
  const ParticleViews views = this->views();
  Checkpoint saved;
  saved.setup = setup_;
  saved.steps = steps_;
  saved.particles_left = particles_left_;
  saved.particle_count = particle_count_;
  saved.positions = detail::download<double>(pool, views.positions);
  saved.velocities = detail::download<double>(pool, views.velocities);
  saved.affine = detail::download<double>(pool, views.affine);
  saved.deformation = detail::download<double>(pool, views.deformation);
  saved.volumes = detail::download<double>(pool, views.volumes);
  saved.materials = detail::download<std::int32_t>(pool, views.materials);
  saved.forces = detail::download<double>(pool, views.forces);
  saved.pressure = detail::download<double>(pool, pressure());
  pool.stream().synchronize();
  return saved;
}

/// The first field in which two resolved setups differ ("" when none does).
inline std::string first_difference(const Setup& a, const Setup& b) {
  const auto used = static_cast<std::size_t>(a.dimension);
  const auto same_used = [used](const auto& x, const auto& y, std::size_t per_axis) {
    return std::equal(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(used * per_axis),
                      y.begin());
  };
  const auto same_material = [](const Material& x, const Material& y) {
    return x.kind == y.kind && x.density == y.density && x.youngs_modulus == y.youngs_modulus &&
           x.poisson_ratio == y.poisson_ratio &&
           x.friction_angle_degrees == y.friction_angle_degrees &&
           x.bulk_modulus == y.bulk_modulus && x.tait_exponent == y.tait_exponent;
  };
  const std::pair<bool, const char*> fields[] = {
      {a.dimension == b.dimension, "dimension"},
      {same_used(a.origin, b.origin, 1), "origin"},
      {same_used(a.extent, b.extent, 1), "extent"},
      {a.resolution == b.resolution, "resolution"},
      {a.basis == b.basis, "basis"},
      {same_used(a.gravity, b.gravity, 1), "gravity"},
      {same_used(a.boundaries, b.boundaries, 2), "boundaries"},
      {a.boundary_cells == b.boundary_cells, "boundary_cells"},
      {a.materials.size() == b.materials.size() &&
           std::equal(a.materials.begin(), a.materials.end(), b.materials.begin(), same_material),
       "materials"},
      {a.dt == b.dt, "dt"},
      {a.pressure_preconditioner == b.pressure_preconditioner, "pressure_preconditioner"},
      {a.capacity == b.capacity, "capacity"},
      {a.external_forces == b.external_forces, "external_forces"}};
  for (const auto& [same, name] : fields) {
    if (!same) {
      return name;
    }
  }
  return "";
}

template <int D>
void detail::SimulationState<D>::restore(const Checkpoint& saved) {
  const std::string differs = first_difference(saved.setup, setup_);
  if (!differs.empty()) {
    throw Error("restore: the checkpoint's Setup." + differs +
                " differs from this simulation's; set the simulation up from the checkpoint's "
                "setup (read_checkpoint(path).setup)");
  }
  const auto n = static_cast<std::size_t>(saved.particle_count);
  AFEM_EXPECTS(saved.particle_count >= 0 && saved.particle_count <= capacity_,
               "restore: the checkpoint holds " + std::to_string(saved.particle_count) +
                   " particles, the capacity is " + std::to_string(capacity_));
  AFEM_EXPECTS(saved.positions.size() == n * D && saved.velocities.size() == n * D &&
                   saved.affine.size() == n * D * D && saved.deformation.size() == n * D * D &&
                   saved.volumes.size() == n && saved.materials.size() == n &&
                   saved.forces.size() == (setup_.external_forces ? n * D : 0) &&
                   saved.pressure.size() == pressure().size(),
               "restore: the checkpoint's arrays disagree with its " + std::to_string(n) +
                   " particles or with this simulation's grid");
  // Particles as check_particles() accepts them; outside the box only where a face is open (they
  // left in the step before the checkpoint and go at the next one).
  const auto grid = grid_.view();
  for (std::size_t p = 0; p < n; ++p) {
    AFEM_EXPECTS(saved.materials[p] >= 0 &&
                     static_cast<std::size_t>(saved.materials[p]) < setup_.materials.size(),
                 "restore: particle " + std::to_string(p) + " names material " +
                     std::to_string(saved.materials[p]));
    AFEM_EXPECTS(std::isfinite(saved.volumes[p]) && saved.volumes[p] > 0.0,
                 "restore: particle " + std::to_string(p) + " has volume " +
                     std::to_string(saved.volumes[p]));
    typename Grid::View::Point x;
    for (int d = 0; d < D; ++d) {
      x[d] = saved.positions[p * D + static_cast<std::size_t>(d)];
    }
    std::int32_t cell = -1;
    typename Grid::View::Coords xi;
    AFEM_EXPECTS(grid.locate(x, cell, xi) || (has_open_face() && x.allFinite()),
                 "restore: particle " + std::to_string(p) + " lies outside the grid");
  }
  // Everything is checked: from here on nothing throws but a device failure.
  const memory::Stream& stream = pool_->stream();
  const auto put = [&](auto& buffer, const auto& values) {
    using T = typename std::remove_reference_t<decltype(buffer)>::value_type;
    memory::copy_to_device(buffer.view().subview(0, values.size()), std::span<const T>(values),
                           stream);
  };
  put(positions_, saved.positions);
  put(velocities_, saved.velocities);
  put(affine_, saved.affine);
  put(deformation_, saved.deformation);
  put(volumes_, saved.volumes);
  put(materials_, saved.materials);
  if (setup_.external_forces) {
    put(forces_, saved.forces);
  }
  memory::copy_to_device(pressure(), std::span<const double>(saved.pressure), stream);
  stream.synchronize();
  particle_count_ = saved.particle_count;
  steps_ = saved.steps;
  particles_left_ = saved.particles_left;
  pressure_solve_ = ProjectionResult{};
}

template <int D, class Spaces>
GridState detail::SimulationOn<D, Spaces>::grid_state() const {
  memory::Pool& pool = *this->pool_;
  GridState state;
  state.masses = detail::download<double>(pool, mass_.dofs());
  if (staggered_) {
    // The staggered velocity averaged to the vertices, formed only here (for output).
    auto vertices = memory::borrow_temporary<double>(*this->arena_, velocity_.dofs().size(),
                                                     "Mpm.vertex_velocities");
    staggered_->to_vertices(vertices.view(), *this->arena_);
    state.velocities = detail::download<double>(pool, vertices.view());
    pool.stream().synchronize();  // before the scratch goes back
  } else {
    state.velocities = detail::download<double>(pool, velocity_.dofs());
  }
  if (staggered_) {
    for (std::size_t d = 0; d < D; ++d) {
      state.faces[d] = detail::download<double>(pool, staggered_->face_values(static_cast<int>(d)));
    }
  }
  pool.stream().synchronize();
  return state;
}

template <int D>
Simulation<D>::Simulation(const Setup& setup, memory::Pool& pool, memory::Arena& step_arena)
    : state_(setup.basis == GridBasis::bspline2
                 ? std::unique_ptr<detail::SimulationState<D>>(
                       std::make_unique<detail::SimulationOn<D, detail::BSplineSpaces<D>>>(
                           setup, pool, step_arena))
                 : std::make_unique<detail::SimulationOn<D, detail::Q1Spaces<D>>>(setup, pool,
                                                                                  step_arena)) {}

template <int D>
Simulation<D>::~Simulation() = default;

template <int D>
void Simulation<D>::step() {
  const memory::ArenaScope scope(*state_->arena_);
  // The sort's scratch comes first, so that a step that cannot have it changes nothing; the
  // sort comes last, in the order the step's binning found.
  std::optional<detail::GatherScratch> sort;
  if (state_->sorts_now()) {
    sort.emplace(state_->borrow_gather_scratch(state_->count(), "Mpm.sort"));
  }
  if (state_->step_mode_ == StepMode::captured) {
    state_->captured_step();
  } else {
    state_->rebin();
    state_->particle_to_grid();
    state_->update_grid();
    state_->grid_to_particle();
  }
  state_->sorted_since_binning_ = false;  // the step binned the particles (a replay too)
  if (sort) {
    state_->sort_particles(*sort);
  }
  ++state_->steps_;
}

template <int D>
void Simulation<D>::set_step_mode(StepMode mode) {
  detail::SimulationState<D>& state = *state_;
  if (mode == StepMode::captured) {
    AFEM_EXPECTS(state.setup_.materials[0].kind != MaterialKind::incompressible_fluid,
                 "Simulation::set_step_mode: the incompressible fluid's step cannot be captured "
                 "(its pressure solve reads the residual back every iteration to decide when to "
                 "stop); run it with StepMode::direct");
    AFEM_EXPECTS(state.border_sum_ == nullptr,
                 "Simulation::set_step_mode: a step with a border sum (a distributed "
                 "simulation) cannot be captured: it exchanges messages between its parts");
    const memory::Stream& stream = state.pool_->stream();
    // cudaStreamLegacy and cudaStreamPerThread are the handles 0x1 and 0x2.
    const auto handle = reinterpret_cast<std::uintptr_t>(  // NOLINT(*-reinterpret-cast)
        stream.native_handle());
    AFEM_EXPECTS(!stream.device().is_cuda() || handle > 2,
                 "Simulation::set_step_mode: the pool runs on CUDA's legacy default stream, "
                 "which cannot be captured; give the pool a stream of its own "
                 "(memory::OwnedStream, PoolOptions::stream)");
    if (!state.captures_) {
      state.captures_ = std::make_unique<memory::CaptureCache<int>>(
          *state.pool_, memory::CaptureOptions{.name = "Mpm.step"});
    }
  } else {
    state.release_captures();
  }
  state.step_mode_ = mode;
}

template <int D>
void Simulation<D>::set_border_sum(BorderSum* sum) {
  AFEM_EXPECTS(sum == nullptr || state_->step_mode_ == StepMode::direct,
               "Simulation::set_border_sum: a captured step cannot call a border sum; set "
               "StepMode::direct first");
  state_->border_sum_ = sum;
}

template <int D>
StepMode Simulation<D>::step_mode() const {
  return state_->step_mode_;
}

template <int D>
CaptureReport Simulation<D>::capture_report() const {
  const detail::SimulationState<D>& state = *state_;
  CaptureReport report;
  report.sizing_steps = state.sizing_steps_;
  if (state.captures_) {
    const memory::CaptureStats& stats = state.captures_->stats();
    report.captures = stats.misses;
    report.recaptures = stats.misses > 0 ? stats.misses - 1 : 0;
    report.replays = stats.replays;
    report.retained_bytes = stats.retained_bytes;
  }
  return report;
}

template <int D>
void Simulation<D>::rebin() {
  state_->rebin();
}

template <int D>
void Simulation<D>::sort_particles() {
  detail::GatherScratch scratch = state_->borrow_gather_scratch(state_->count(), "Mpm.sort");
  state_->sort_particles(scratch);
}

template <int D>
void Simulation<D>::set_particle_sort_interval(int steps) {
  AFEM_EXPECTS(steps >= 0, "Simulation::set_particle_sort_interval: " + std::to_string(steps) +
                               " steps; give 0 (never) or more");
  state_->sort_interval_ = steps;
}

template <int D>
int Simulation<D>::particle_sort_interval() const {
  return state_->sort_interval_;
}

template <int D>
void Simulation<D>::particle_to_grid() {
  state_->expect_binned("particle_to_grid");
  state_->particle_to_grid();
}

template <int D>
void Simulation<D>::update_grid() {
  state_->update_grid();
}

template <int D>
void Simulation<D>::grid_to_particle() {
  state_->expect_binned("grid_to_particle");
  state_->grid_to_particle();
}

template <int D>
const Setup& Simulation<D>::setup() const {
  return state_->setup_;
}

template <int D>
std::int32_t Simulation<D>::capacity() const {
  return state_->capacity_;
}

template <int D>
std::int64_t Simulation<D>::particles_left() const {
  return state_->particles_left_;
}

template <int D>
ParticleViews Simulation<D>::particle_views() {
  return state_->views();
}

template <int D>
void Simulation<D>::add_particles(const ParticleBatch& batch) {
  state_->add_particles(batch);
}

template <int D>
ParticleViews Simulation<D>::add_particle_slots(std::int32_t count) {
  detail::SimulationState<D>& state = *state_;
  AFEM_EXPECTS(count >= 0 && count <= state.capacity_ - state.particle_count_,
               "add_particle_slots: " + std::to_string(count) + " particles after the " +
                   std::to_string(state.particle_count_) + " there are exceed the capacity of " +
                   std::to_string(state.capacity_) + " (Setup.capacity)");
  const auto first = state.count();
  state.particle_count_ += count;
  const ParticleViews all = state.views();
  const auto n = static_cast<std::size_t>(count);
  const auto tail = [&](auto view, std::size_t width) {
    return view.empty() ? view : view.subview(first * width, n * width);
  };
  return {tail(all.positions, D),       tail(all.velocities, D), tail(all.affine, D * D),
          tail(all.deformation, D * D), tail(all.volumes, 1),    tail(all.materials, 1),
          tail(all.forces, D)};
}

template <int D>
void Simulation<D>::remove_particles(memory::ArrayView<const std::uint8_t> remove) {
  AFEM_EXPECTS(remove.size() == state_->count(),
               "remove_particles: " + std::to_string(remove.size()) + " flags for " +
                   std::to_string(state_->count()) + " particles");
  const memory::ArenaScope scope(*state_->arena_);
  auto policy = memory::arena_policy(*state_->arena_, "Mpm.thrust");
  const auto removed = static_cast<std::size_t>(
      thrust::count_if(policy, remove.begin(), remove.end(), detail::Flagged{}));
  state_->compact(remove, removed);
}

template <int D>
void Simulation<D>::save_checkpoint(const std::string& path) const {
  write_checkpoint(path, state_->checkpoint());
}

template <int D>
void Simulation<D>::load_checkpoint(const std::string& path) {
  restore(read_checkpoint(path));
}

template <int D>
void Simulation<D>::restore(const Checkpoint& checkpoint) {
  state_->restore(checkpoint);
}

template <int D>
std::int32_t Simulation<D>::particle_count() const {
  return state_->particle_count_;
}

template <int D>
std::int64_t Simulation<D>::steps_taken() const {
  return state_->steps_;
}

template <int D>
double Simulation<D>::time() const {
  return static_cast<double>(state_->steps_) * state_->setup_.dt;
}

template <int D>
std::int32_t Simulation<D>::active_cell_count() const {
  return state_->active_cell_count();
}

template <int D>
std::int32_t Simulation<D>::outside_count() const {
  return state_->outside_count();
}

template <int D>
PressureSolve Simulation<D>::pressure_solve() const {
  const ProjectionResult& last = state_->pressure_solve_;
  return {last.solve.iterations, last.solve.residual, last.divergence};
}

template <int D>
geometry::MeshData Simulation<D>::grid_mesh() const {
  return state_->grid_mesh();
}

template <int D>
memory::Pool& Simulation<D>::pool() const {
  return *state_->pool_;
}

template <int D>
memory::Arena& Simulation<D>::step_arena() const {
  return *state_->arena_;
}

template <int D>
ParticleState Simulation<D>::particles() const {
  return state_->particles();
}

template <int D>
GridState Simulation<D>::grid_state() const {
  return state_->grid_state();
}

template class Simulation<2>;
template class Simulation<3>;

}  // namespace afem::apps::mpm
