// The built-in scenes: particle lattices inside boxes and balls.
#include "apps/mpm/scene.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "memory/error.hpp"

namespace afem::apps::mpm {

std::string to_string(MaterialKind kind) {
  switch (kind) {
    case MaterialKind::elastic:
      return "elastic";
    case MaterialKind::sand:
      return "sand";
    case MaterialKind::fluid:
      return "fluid";
    case MaterialKind::incompressible_fluid:
      return "incompressible fluid";
  }
  return "unknown";
}

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

std::string to_string(GridBasis basis) {
  return basis == GridBasis::bspline2 ? "bspline2" : "q1";
}

GridBasis parse_basis(std::string_view name) {
  for (const GridBasis basis : {GridBasis::q1, GridBasis::bspline2}) {
    if (name == to_string(basis)) {
      return basis;
    }
  }
  throw Error("unknown basis '" + std::string(name) + "', expected q1 or bspline2");
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

Scene make_scene(const SceneOptions& options) {
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

  Scene scene;
  scene.kind = options.kind;
  scene.dimension = options.dimension;
  scene.resolution = resolution;
  scene.particles_per_cell = options.particles_per_cell;
  scene.basis = options.basis;
  scene.gravity = options.gravity ? -9.81 : 0.0;
  scene.walls = options.walls;
  const double dx = scene.cell_size();
  const double wall = wall_cells * dx;
  Shape shape;
  switch (options.kind) {
    case SceneKind::sand_column:
      scene.material = Material{};
      scene.sticky_floor = true;
      shape.lower = {0.35, wall, 0.35};
      shape.upper = {0.65, wall + 0.3, 0.65};
      break;
    case SceneKind::elastic_drop:
      scene.material = Material{.kind = MaterialKind::elastic,
                                .density = 1000.0,
                                .youngs_modulus = 5.0e5,
                                .poisson_ratio = 0.3};
      shape.center = {0.5, 0.4, 0.5};
      shape.radius = 0.12;
      break;
    case SceneKind::dam_break:
      scene.material = Material{.kind = MaterialKind::fluid, .density = 1000.0};
      shape.lower = {wall, wall, wall};
      shape.upper = {0.4, 0.6, 1.0 - wall};
      break;
    case SceneKind::still_water:
      scene.material = Material{.kind = MaterialKind::fluid, .density = 1000.0};
      shape.lower = {wall, wall, wall};
      shape.upper = {1.0 - wall, 0.3, 1.0 - wall};
      break;
  }
  if (options.incompressible) {
    check(scene.material.kind == MaterialKind::fluid,
          "the " + to_string(options.kind) + " scene holds no fluid to make incompressible");
    scene.material.kind = MaterialKind::incompressible_fluid;
  }
  scene.dt = options.dt > 0.0 ? options.dt : 0.4 * dx / scene.material.wave_speed();

  // Particles on the sub-lattice of every cell between the walls, kept where the shape is.
  const int dim = options.dimension;
  const int ppc = options.particles_per_cell;
  const int per_axis = resolution * ppc;
  const double spacing = dx / ppc;
  const double volume = std::pow(spacing, dim);
  const int first = wall_cells * ppc;
  const int last = (resolution - wall_cells) * ppc;
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
          scene.positions.push_back(x[d]);
          scene.velocities.push_back(0.0);
        }
        scene.volumes.push_back(volume);
      }
    }
  }
  // Fluid below the surface (half a particle spacing above the top particles) carries the weight
  // above it: dp/dy = -rho g with the density rho0 / J of the Tait law, integrated down from the
  // surface; the reference volume is the volume / J.
  scene.volume_ratios.assign(scene.volumes.size(), 1.0);
  if (scene.material.kind == MaterialKind::fluid && !scene.volumes.empty()) {  // compressible
    double surface = 0.0;
    for (std::size_t p = 0; p < scene.volumes.size(); ++p) {
      surface = std::max(surface, scene.positions[p * dim + 1] + 0.5 * spacing);
    }
    const double gamma = scene.material.tait_exponent;
    for (std::size_t p = 0; p < scene.volumes.size(); ++p) {
      const double depth = surface - scene.positions[p * dim + 1];
      const double ratio = std::pow(1.0 + (gamma - 1.0) * scene.material.density * -scene.gravity *
                                              depth / scene.material.bulk_modulus,
                                    -1.0 / (gamma - 1.0));
      scene.volume_ratios[p] = ratio;
      scene.volumes[p] = volume / ratio;
    }
  }
  check(per_axis > 0 && !scene.volumes.empty(), "the scene holds no particles");
  return scene;
}

}  // namespace afem::apps::mpm
