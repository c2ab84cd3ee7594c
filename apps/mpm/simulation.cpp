// Simulation<D>: the MPM step. Compiled by nvcc in the CUDA build.
#include "apps/mpm/simulation.hpp"

#include "apps/mpm/grid_nodes.hpp"
#include "apps/mpm/pressure_projection.hpp"

#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <array>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "fem/bspline_space.hpp"
#include "fem/component_restriction.hpp"
#include "fem/field.hpp"
#include "fem/integrate.hpp"
#include "fem/interpolate.hpp"
#include "fem/sample.hpp"
#include "fem/space.hpp"
#include "fem/space_restriction.hpp"
#include "geometry/grid.hpp"
#include "geometry/partition.hpp"
#include "memory/copy.hpp"
#include "memory/error.hpp"
#include "memory/thrust_allocator.hpp"
#include "quadrature/domain.hpp"
#include "quadrature/pic_quadrature.hpp"

namespace afem::apps::mpm {

namespace detail {

template <int D>
using Matrix = Eigen::Matrix<double, D, D>;
template <int D>
using Vector = Eigen::Matrix<double, D, 1>;

/// Row-major D x D matrix of particle `p` in a buffer of D * D values per particle.
template <int D>
AFEM_HOST_DEVICE Matrix<D> load_matrix(memory::ArrayView<const double> values, std::size_t p) {
  Matrix<D> m;
  for (int r = 0; r < D; ++r) {
    for (int c = 0; c < D; ++c) {
      m(r, c) = values[p * D * D + static_cast<std::size_t>(r * D + c)];
    }
  }
  return m;
}

template <int D>
AFEM_HOST_DEVICE void store_matrix(const Matrix<D>& m, memory::ArrayView<double> values,
                                   std::size_t p) {
  for (int r = 0; r < D; ++r) {
    for (int c = 0; c < D; ++c) {
      values[p * D * D + static_cast<std::size_t>(r * D + c)] = m(r, c);
    }
  }
}

template <int D>
AFEM_HOST_DEVICE Vector<D> load_vector(memory::ArrayView<const double> values, std::size_t p) {
  Vector<D> v;
  for (int d = 0; d < D; ++d) {
    v[d] = values[p * D + static_cast<std::size_t>(d)];
  }
  return v;
}

/// Marks the cell that holds every located particle (particles outside the grid mark nothing).
/// Equal values may be written by several threads.
struct MarkCells {
  memory::ArrayView<const std::int32_t> cells;
  memory::ArrayView<std::uint8_t> mask;
  AFEM_HOST_DEVICE void operator()(std::size_t p) const {
    const std::int32_t cell = cells[p];
    if (cell >= 0) {
      mask[static_cast<std::size_t>(cell)] = 1;
    }
  }
};

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

/// Grid mass: rho0 N_i, weighted by the particle's initial volume (its quadrature weight).
struct MassForm {
  static constexpr bool reads_gradients = false;
  double density = 0.0;
  template <class Sample, class Test>
  AFEM_HOST_DEVICE double operator()(const Sample& /*s*/, const Test& v) const {
    return density * v.basis_value;
  }
};

/// Grid momentum after the step's forces, component c of node i:
/// rho0 (v_p + C_p (x_i - x_p))_c N_i - dt (tau_p grad N_i)_c, weighted by V0_p. The particle's
/// part (its momentum, affine momentum and Kirchhoff stress) is prepared once per particle.
template <int D>
struct MomentumForm {
  MaterialView material;
  memory::ArrayView<const double> velocities;
  memory::ArrayView<const double> affine;
  memory::ArrayView<const double> deformation;
  double density = 0.0;
  double dt = 0.0;

  /// What the form needs of a particle, found once per particle.
  struct Particle {
    Vector<D> position;
    Vector<D> momentum;
    Matrix<D> affine_momentum;
    Matrix<D> stress_impulse;  ///< dt tau
  };
  template <class Sample>
  AFEM_HOST_DEVICE Particle prepare(const Sample& s) const {
    const std::size_t p = s.index;
    return {s.x, density * load_vector<D>(velocities, p), density * load_matrix<D>(affine, p),
            dt * kirchhoff_stress<D>(material, load_matrix<D>(deformation, p))};
  }
  template <class Test>
  AFEM_HOST_DEVICE double operator()(const Particle& particle, const Test& v) const {
    const int c = v.component;
    const Vector<D> offset = v.node_position - particle.position;
    return (particle.momentum[c] + particle.affine_momentum.row(c).dot(offset)) * v.basis_value -
           particle.stress_impulse.row(c).dot(v.basis_gradient);
  }
};

/// Grid velocity from momentum and mass, gravity, and the walls (momentum and velocity may be
/// the same buffer).
template <int D>
struct UpdateGrid {
  GridNodes<D> nodes;
  memory::ArrayView<const double> mass;
  memory::ArrayView<const double> momentum;
  memory::ArrayView<double> velocity;
  double gravity_dt = 0.0;
  double min_mass = 0.0;
  bool walls = true;
  bool sticky_floor = false;
  AFEM_HOST_DEVICE void operator()(std::int32_t node) const {
    const auto n = static_cast<std::size_t>(node);
    const double m = mass[n];
    Vector<D> v = Vector<D>::Zero();
    if (m > min_mass) {
      for (int d = 0; d < D; ++d) {
        v[d] = momentum[n * D + static_cast<std::size_t>(d)] / m;
      }
      v[1] += gravity_dt;
    }
    if (walls && m > min_mass) {  // the walls only ever zero components: nothing to do at rest
      double at[D];
      nodes.position(node, at);
      for (int d = 0; d < D; ++d) {
        const int wall = nodes.wall_side(at[d], nodes.resolution[d], wall_cells);
        if (wall < 0 && v[d] < 0.0) {
          if (d == 1 && sticky_floor) {
            v.setZero();
          } else {
            v[d] = 0.0;
          }
        } else if (wall > 0 && v[d] > 0.0) {
          v[d] = 0.0;
        }
      }
    }
    for (int d = 0; d < D; ++d) {
      velocity[n * D + static_cast<std::size_t>(d)] = v[d];
    }
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
  memory::ArrayView<double> velocities;
  double density = 0.0;
  template <class Sample, class Field>
  AFEM_HOST_DEVICE Vector<D> prepare(const Sample& s, const Field& u) const {
    const Vector<D> v = u.value(s);
    for (int d = 0; d < D; ++d) {
      velocities[s.index * D + static_cast<std::size_t>(d)] = v[d];
    }
    return density * v;
  }
  template <class Test>
  AFEM_HOST_DEVICE double operator()(const Vector<D>& momentum, const Test& v) const {
    return momentum[v.component] * v.basis_value;
  }
};

/// The end of a particle's step, after its affine matrix C took the gradient of the remapped grid
/// velocity: v = the new velocity, F = project((I + dt C) F), x += dt v kept between the walls.
template <int D>
struct UpdateParticles {
  MaterialView material;
  memory::ArrayView<const double> new_velocities;
  memory::ArrayView<const double> affine;
  memory::ArrayView<double> positions;
  memory::ArrayView<double> velocities;
  memory::ArrayView<double> deformation;
  double dt = 0.0;
  double lower = 0.0;
  double upper = 1.0;
  AFEM_HOST_DEVICE void operator()(std::size_t p) const {
    const Matrix<D> gradient = load_matrix<D>(affine, p);
    const Matrix<D> f = (Matrix<D>::Identity() + dt * gradient) *
                        load_matrix<D>(memory::ArrayView<const double>(deformation), p);
    store_matrix<D>(project_deformation<D>(material, f), deformation, p);
    for (int d = 0; d < D; ++d) {
      const auto k = p * D + static_cast<std::size_t>(d);
      velocities[k] = new_velocities[k];
      const double x = positions[k] + dt * new_velocities[k];
      positions[k] = x < lower ? lower : (x > upper ? upper : x);
    }
  }
};

template <int D>
geometry::Grid<D> make_grid(const Scene& scene) {
  AFEM_EXPECTS(scene.dimension == D, "Simulation<" + std::to_string(D) + ">: the scene is " +
                                         std::to_string(scene.dimension) + "D");
  const auto n = static_cast<std::size_t>(scene.particle_count());
  AFEM_EXPECTS(scene.positions.size() == n * D && scene.velocities.size() == n * D &&
                   scene.volume_ratios.size() == n,
               "Simulation: the scene has " + std::to_string(n) + " volumes, " +
                   std::to_string(scene.positions.size()) + " position values, " +
                   std::to_string(scene.velocities.size()) + " velocity values and " +
                   std::to_string(scene.volume_ratios.size()) +
                   " volume ratios; expected D values per particle for positions and velocities");
  std::array<double, D> origin{};
  std::array<double, D> size{};
  std::array<std::int32_t, D> resolution{};
  for (std::size_t d = 0; d < D; ++d) {
    size[d] = scene.cell_size();
    resolution[d] = scene.resolution;
  }
  return geometry::Grid<D>(origin, size, resolution);
}

template <class T>
memory::Temporary<T> upload(memory::Pool& pool, const std::vector<T>& values, const char* label) {
  auto buffer = memory::borrow_temporary<T>(pool, values.size(), label);
  memory::copy_to_device(buffer.view(), std::span<const T>(values), pool.stream());
  pool.stream().synchronize();
  return buffer;
}

/// Row-major D x D matrices diagonal[p]^(1/D) * I, one per entry of `diagonal` (the isotropic
/// deformation of volume ratio diagonal[p]); `count` zero matrices when `diagonal` is empty.
template <int D>
std::vector<double> isotropic_matrices(std::int64_t count, const std::vector<double>& diagonal) {
  const auto n = static_cast<std::size_t>(count);
  std::vector<double> values(n * D * D, 0.0);
  for (std::size_t p = 0; p < n && !diagonal.empty(); ++p) {
    for (std::size_t d = 0; d < D; ++d) {
      values[p * D * D + d * D + d] = std::pow(diagonal[p], 1.0 / D);
    }
  }
  return values;
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

/// What a Simulation<D> owns whatever its grid basis: the scene, the grid and the particles.
template <int D>
class SimulationState {
public:
  using Grid = geometry::Grid<D>;

  SimulationState(const Scene& scene, memory::Pool& pool, memory::Arena& step_arena);
  SimulationState(const SimulationState&) = delete;
  SimulationState& operator=(const SimulationState&) = delete;
  SimulationState(SimulationState&&) = delete;
  SimulationState& operator=(SimulationState&&) = delete;
  virtual ~SimulationState() = default;

  virtual void rebin() = 0;
  virtual void particle_to_grid() = 0;
  virtual void update_grid() = 0;
  virtual void grid_to_particle() = 0;
  [[nodiscard]] virtual GridState grid_state() const = 0;
  [[nodiscard]] virtual std::int32_t active_cell_count() const = 0;
  [[nodiscard]] virtual std::int32_t outside_count() const = 0;
  [[nodiscard]] virtual geometry::MeshData grid_mesh() const = 0;
  [[nodiscard]] ParticleState particles() const;

  /// Nodes with at most this mass take no velocity.
  [[nodiscard]] double min_grid_mass() const {
    return 1e-12 * scene_.material.density * std::pow(scene_.cell_size(), D);
  }

  Scene scene_;
  memory::Pool* pool_;
  memory::Arena* arena_;
  Grid grid_;
  std::int32_t particle_count_ = 0;
  std::int64_t steps_ = 0;
  memory::Temporary<double> positions_;
  memory::Temporary<double> velocities_;
  memory::Temporary<double> affine_;
  memory::Temporary<double> deformation_;
  memory::Temporary<double> volumes_;
  ProjectionResult pressure_solve_;
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

  SimulationOn(const Scene& scene, memory::Pool& pool, memory::Arena& step_arena);
  void rebin() override;
  void particle_to_grid() override;
  void update_grid() override;
  void grid_to_particle() override;
  [[nodiscard]] GridState grid_state() const override;
  [[nodiscard]] std::int32_t active_cell_count() const override {
    return active_partition_.cell_count();
  }
  [[nodiscard]] std::int32_t outside_count() const override { return quadrature_.outside_count(); }
  [[nodiscard]] geometry::MeshData grid_mesh() const override {
    return Spaces::node_grid(this->grid_).to_mesh_data();
  }

  /// Grid velocity = momentum / mass + gravity_dt along y, with the walls (`momentum` may be
  /// velocity_'s own dofs).
  void apply_grid_velocity(memory::ArrayView<const double> momentum, double gravity_dt);

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
  std::unique_ptr<PressureProjection<D, ScalarSpace>> projection_;  ///< the incompressible fluid's
};

}  // namespace detail

template <int D>
detail::SimulationState<D>::SimulationState(const Scene& scene, memory::Pool& pool,
                                            memory::Arena& step_arena)
    : scene_(scene),
      pool_(&pool),
      arena_(&step_arena),
      grid_(detail::make_grid<D>(scene)),
      particle_count_(static_cast<std::int32_t>(scene.particle_count())),
      positions_(detail::upload(pool, scene.positions, "Mpm.positions")),
      velocities_(detail::upload(pool, scene.velocities, "Mpm.velocities")),
      affine_(detail::upload(pool, detail::isotropic_matrices<D>(scene.particle_count(), {}),
                             "Mpm.affine")),
      deformation_(detail::upload(
          pool, detail::isotropic_matrices<D>(scene.particle_count(), scene.volume_ratios),
          "Mpm.deformation")),
      volumes_(detail::upload(pool, scene.volumes, "Mpm.volumes")) {}

template <int D, class Spaces>
detail::SimulationOn<D, Spaces>::SimulationOn(const Scene& scene, memory::Pool& pool,
                                              memory::Arena& step_arena)
    : SimulationState<D>(scene, pool, step_arena),
      scalar_space_(this->grid_, pool, step_arena),
      vector_space_(this->grid_, pool, step_arena),
      nodes_(grid_nodes(vector_space_)),
      active_partition_(this->grid_, pool, {.max_cells = this->grid_.cell_count(), .sides = false}),
      active_cells_(active_partition_),
      scalar_restriction_(scalar_space_, active_cells_, step_arena),
      vector_restriction_(scalar_restriction_),
      mass_(scalar_space_),
      velocity_(vector_space_),
      quadrature_(active_cells_, pool, {.max_particles = this->particle_count_}),
      projection_(scene.material.kind == MaterialKind::incompressible_fluid
                      ? std::make_unique<PressureProjection<D, ScalarSpace>>(
                            scalar_space_, wall_cells, scene.material.density,
                            this->min_grid_mass(), pool, step_arena)
                      : nullptr) {
  pool.stream().synchronize();
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::rebin() {
  memory::Arena& arena = *this->arena_;
  // The particles are located once: their cells select the active cells, then they are binned
  // into them.
  auto located = quadrature_.locate(this->positions_.view(), this->volumes_.view(), arena);
  {
    auto mask = memory::borrow_temporary<std::uint8_t>(
        arena, static_cast<std::size_t>(this->grid_.cell_count()), "Mpm.active_mask");
    auto policy = memory::arena_policy(arena, "Mpm.thrust");
    thrust::fill(policy, mask.view().begin(), mask.view().end(), std::uint8_t{0});
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0),
                       static_cast<std::size_t>(located.count()),
                       detail::MarkCells{located.cells(), mask.view()});
    active_partition_.select_mask(mask.view(), arena);
  }
  scalar_restriction_.rebuild(arena);
  quadrature_.bin(std::move(located), arena);
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::particle_to_grid() {
  memory::Arena& arena = *this->arena_;
  fem::integrate(mass_.dofs(), quadrature_, scalar_restriction_,
                 detail::MassForm{this->scene_.material.density}, arena);
  fem::integrate(
      velocity_.dofs(), quadrature_, vector_restriction_,
      detail::MomentumForm<D>{MaterialView(this->scene_.material), this->velocities_.view(),
                              this->affine_.view(), this->deformation_.view(),
                              this->scene_.material.density, this->scene_.dt},
      arena);
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::update_grid() {
  apply_grid_velocity(velocity_.dofs(), this->scene_.gravity * this->scene_.dt);
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
        projection_->project(velocity_.dofs(), fraction.view(), this->scene_.dt, *this->arena_);
  }
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::apply_grid_velocity(memory::ArrayView<const double> momentum,
                                                          double gravity_dt) {
  auto policy = memory::arena_policy(*this->arena_, "Mpm.thrust");
  thrust::for_each_n(
      policy, thrust::counting_iterator<std::int32_t>(0), vector_space_.node_count(),
      detail::UpdateGrid<D>{nodes_, mass_.dofs(), momentum, velocity_.dofs(), gravity_dt,
                            this->min_grid_mass(), this->scene_.walls, this->scene_.sticky_floor});
}

template <int D, class Spaces>
void detail::SimulationOn<D, Spaces>::grid_to_particle() {
  memory::Arena& arena = *this->arena_;
  const auto n = static_cast<std::size_t>(this->particle_count_);
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
                 detail::RemapForm<D>{velocities.view(), this->scene_.material.density}, arena,
                 velocity_);
  apply_grid_velocity(momentum.view(), 0.0);
  fem::interpolate(this->affine_.view(), quadrature_, detail::VelocityGradientAt{}, arena,
                   velocity_);
  const double dx = this->scene_.cell_size();
  auto policy = memory::arena_policy(arena, "Mpm.thrust");
  thrust::for_each_n(
      policy, thrust::counting_iterator<std::size_t>(0), n,
      detail::UpdateParticles<D>{MaterialView(this->scene_.material), velocities.view(),
                                 this->affine_.view(), this->positions_.view(),
                                 this->velocities_.view(), this->deformation_.view(),
                                 this->scene_.dt, wall_cells * dx, 1.0 - wall_cells * dx});
}

template <int D>
ParticleState detail::SimulationState<D>::particles() const {
  memory::Pool& pool = *this->pool_;
  ParticleState state;
  state.positions = detail::download<double>(pool, this->positions_.view());
  state.velocities = detail::download<double>(pool, this->velocities_.view());
  state.affine = detail::download<double>(pool, this->affine_.view());
  state.deformation = detail::download<double>(pool, this->deformation_.view());
  state.masses = detail::download<double>(pool, this->volumes_.view());
  pool.stream().synchronize();
  for (double& m : state.masses) {
    m *= this->scene_.material.density;
  }
  return state;
}

template <int D, class Spaces>
GridState detail::SimulationOn<D, Spaces>::grid_state() const {
  memory::Pool& pool = *this->pool_;
  GridState state;
  state.masses = detail::download<double>(pool, mass_.dofs());
  state.velocities = detail::download<double>(pool, velocity_.dofs());
  pool.stream().synchronize();
  return state;
}

template <int D>
Simulation<D>::Simulation(const Scene& scene, memory::Pool& pool, memory::Arena& step_arena)
    : state_(scene.basis == GridBasis::bspline2
                 ? std::unique_ptr<detail::SimulationState<D>>(
                       std::make_unique<detail::SimulationOn<D, detail::BSplineSpaces<D>>>(
                           scene, pool, step_arena))
                 : std::make_unique<detail::SimulationOn<D, detail::Q1Spaces<D>>>(scene, pool,
                                                                                  step_arena)) {}

template <int D>
Simulation<D>::~Simulation() = default;

template <int D>
void Simulation<D>::step() {
  const memory::ArenaScope scope(*state_->arena_);
  state_->rebin();
  state_->particle_to_grid();
  state_->update_grid();
  state_->grid_to_particle();
  ++state_->steps_;
}

template <int D>
void Simulation<D>::rebin() {
  state_->rebin();
}

template <int D>
void Simulation<D>::particle_to_grid() {
  state_->particle_to_grid();
}

template <int D>
void Simulation<D>::update_grid() {
  state_->update_grid();
}

template <int D>
void Simulation<D>::grid_to_particle() {
  state_->grid_to_particle();
}

template <int D>
const Scene& Simulation<D>::scene() const {
  return state_->scene_;
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
  return static_cast<double>(state_->steps_) * state_->scene_.dt;
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
