// The built-in scenes: particle lattices inside boxes and balls.
#include "arenafem/apps/mpm/scene.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "arenafem/memory/error.hpp"

namespace afem::apps::mpm {

std::string to_string(SceneKind kind) {
  switch (kind) {
    case SceneKind::sand_column:
      return "sand_column";
    case SceneKind::elastic_drop:
      return "elastic_drop";
    case SceneKind::dam_break:
      return "dam_break";
    case SceneKind::still_water:
      return "still_water";
  }
  return "unknown";
}

bool holds_fluid(SceneKind kind) {
  return kind == SceneKind::dam_break || kind == SceneKind::still_water;
}

SceneKind parse_scene(std::string_view name) {
  for (const SceneKind kind : {SceneKind::sand_column, SceneKind::elastic_drop,
                               SceneKind::dam_break, SceneKind::still_water}) {
    if (name == to_string(kind)) {
      return kind;
    }
  }
  throw Error("unknown scene '" + std::string(name) +
              "', expected sand_column, elastic_drop, dam_break or still_water");
}

namespace {

/// Inside the scene's shape: an axis-aligned box or a ball.
struct Shape {
  std::array<double, 3> lower{};
  std::array<double, 3> upper{};
  std::array<double, 3> center{};
  double radius = 0.0;  ///< > 0: a ball

  [[nodiscard]] bool contains(const std::array<double, 3>& x, int dimension) const {
    if (radius > 0.0) {
      double r2 = 0.0;
      for (std::size_t d = 0; d < static_cast<std::size_t>(dimension); ++d) {
        r2 += (x[d] - center[d]) * (x[d] - center[d]);
      }
      return r2 <= radius * radius;
    }
    for (std::size_t d = 0; d < static_cast<std::size_t>(dimension); ++d) {
      if (x[d] < lower[d] || x[d] > upper[d]) {
        return false;
      }
    }
    return true;
  }
};

void check(bool ok, const std::string& message) {
  if (!ok) {
    throw Error("make_scene: " + message);
  }
}

}  // namespace

Setup make_scene(const SceneOptions& options) {
  check(options.dimension == 2 || options.dimension == 3,
        "dimension " + std::to_string(options.dimension) + ", expected 2 or 3");
  const int resolution =
      options.resolution != 0 ? options.resolution : (options.dimension == 2 ? 128 : 40);
  check(resolution >= 16 && resolution <= 4096,
        "resolution " + std::to_string(resolution) + ", expected 16 to 4096 cells per axis");
  check(options.particles_per_cell >= 1 && options.particles_per_cell <= 8,
        "particles per cell " + std::to_string(options.particles_per_cell) +
            ", expected 1 to 8 along each axis");
  check(options.dt >= 0.0 && std::isfinite(options.dt),
        "time step " + std::to_string(options.dt) + ", expected a positive number of seconds");

  Setup scene;
  scene.dimension = options.dimension;
  scene.resolution = resolution;
  scene.basis = options.basis;
  scene.pressure_preconditioner = options.pressure_preconditioner;
  scene.gravity = {0.0, options.gravity ? -9.81 : 0.0, 0.0};
  if (!options.walls) {
    scene.boundaries.fill(Boundary::open);
  }
  const double dx = scene.cell_size();
  const double wall = scene.boundary_cells * dx;
  Material& material = scene.materials[0];
  Shape shape;
  switch (options.kind) {
    case SceneKind::sand_column:
      material = Material{};
      if (options.walls) {
        scene.boundaries[static_cast<std::size_t>(Face::y_low)] = Boundary::sticky;
      }
      shape.lower = {0.35, wall, 0.35};
      shape.upper = {0.65, wall + 0.3, 0.65};
      break;
    case SceneKind::elastic_drop:
      material = Material{.kind = MaterialKind::elastic,
                          .density = 1000.0,
                          .youngs_modulus = 5.0e5,
                          .poisson_ratio = 0.3};
      shape.center = {0.5, 0.4, 0.5};
      shape.radius = 0.12;
      break;
    case SceneKind::dam_break:
      material = Material{.kind = MaterialKind::fluid, .density = 1000.0};
      shape.lower = {wall, wall, wall};
      shape.upper = {0.4, 0.6, 1.0 - wall};
      break;
    case SceneKind::still_water:
      material = Material{.kind = MaterialKind::fluid, .density = 1000.0};
      shape.lower = {wall, wall, wall};
      shape.upper = {1.0 - wall, 0.3, 1.0 - wall};
      break;
  }
  if (options.incompressible) {
    check(holds_fluid(options.kind),
          "the " + to_string(options.kind) + " scene holds no fluid to make incompressible");
    material.kind = MaterialKind::incompressible_fluid;
  }
  scene.dt = options.dt > 0.0 ? options.dt : 0.4 * dx / material.wave_speed();

  // Particles on the sub-lattice of every cell between the walls, kept where the shape is.
  const int dim = options.dimension;
  const int ppc = options.particles_per_cell;
  const int per_axis = resolution * ppc;
  const double spacing = dx / ppc;
  const double volume = std::pow(spacing, dim);
  const int first = scene.boundary_cells * ppc;
  const int last = (resolution - scene.boundary_cells) * ppc;
  ParticleBatch& particles = scene.particles;
  std::array<int, 3> index = {first, first, dim == 3 ? first : 0};
  const int z_last = dim == 3 ? last : 1;
  for (index[2] = dim == 3 ? first : 0; index[2] < z_last; ++index[2]) {
    for (index[1] = first; index[1] < last; ++index[1]) {
      for (index[0] = first; index[0] < last; ++index[0]) {
        std::array<double, 3> x{};
        for (std::size_t d = 0; d < static_cast<std::size_t>(dim); ++d) {
          x[d] = (index[d] + 0.5) * spacing;
        }
        if (!shape.contains(x, dim)) {
          continue;
        }
        for (std::size_t d = 0; d < static_cast<std::size_t>(dim); ++d) {
          particles.positions.push_back(x[d]);
          particles.velocities.push_back(0.0);
        }
        particles.volumes.push_back(volume);
      }
    }
  }
  // Fluid below the surface (half a particle spacing above the top particles) carries the weight
  // above it: dp/dy = -rho g with the density rho0 / J of the Tait law, integrated down from the
  // surface; the reference volume is the volume / J.
  particles.volume_ratios.assign(particles.volumes.size(), 1.0);
  if (material.kind == MaterialKind::fluid && !particles.volumes.empty()) {  // compressible
    double surface = 0.0;
    for (std::size_t p = 0; p < particles.volumes.size(); ++p) {
      surface = std::max(surface, particles.positions[p * dim + 1] + 0.5 * spacing);
    }
    const double gamma = material.tait_exponent;
    for (std::size_t p = 0; p < particles.volumes.size(); ++p) {
      const double depth = surface - particles.positions[p * dim + 1];
      const double ratio = std::pow(1.0 + (gamma - 1.0) * material.density * -scene.gravity[1] *
                                              depth / material.bulk_modulus,
                                    -1.0 / (gamma - 1.0));
      particles.volume_ratios[p] = ratio;
      particles.volumes[p] = volume / ratio;
    }
  }
  check(per_axis > 0 && !particles.volumes.empty(), "the scene holds no particles");
  return scene;
}

}  // namespace afem::apps::mpm
