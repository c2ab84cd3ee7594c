#pragma once

/// @file
/// The built-in scenes of the MPM app (no input files): a sand column collapsing into a pile, an
/// elastic ball dropped on the floor, a dam break and a layer of still water, each in 2D and 3D,
/// in the unit box.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "apps/mpm/material.hpp"

namespace afem::apps::mpm {

/// Which built-in scene to set up.
enum class SceneKind { sand_column, elastic_drop, dam_break, still_water };

/// The scene's name as the command line spells it.
std::string to_string(SceneKind kind);

/// The scene named `name`; throws afem::Error listing the valid names otherwise.
SceneKind parse_scene(std::string_view name);

/// The grid's basis for the transfers: Q1 (multilinear hats on the vertices) or quadratic
/// B-splines (on the cell centres; smooth across cell faces, the usual MPM kernel).
enum class GridBasis { q1, bspline2 };

/// The basis's name as the command line spells it.
std::string to_string(GridBasis basis);

/// The basis named `name`; throws afem::Error listing the valid names otherwise.
GridBasis parse_basis(std::string_view name);

/// What a user chooses about a scene; zeros mean the scene's defaults.
struct SceneOptions {
  SceneKind kind = SceneKind::sand_column;
  int dimension = 2;
  int resolution = 0;  ///< grid cells along each axis of the unit box; 0: 128 in 2D, 40 in 3D
  int particles_per_cell = 2;   ///< particles along each axis of a cell (2: 4 in 2D, 8 in 3D)
  double dt = 0.0;              ///< time step in seconds; 0: 0.4 dx / wave speed
  bool gravity = true;          ///< -9.81 m/s^2 along y
  bool walls = true;            ///< the box walls stop material (the floor also holds sand)
  bool incompressible = false;  ///< fluid scenes: an incompressible fluid (pressure projection)
  GridBasis basis = GridBasis::q1;
};

/// A scene ready to simulate: grid, material, boundary treatment, time step and the particles'
/// initial state on the host (dimension values per particle for positions and velocities).
struct Scene {
  SceneKind kind = SceneKind::sand_column;
  int dimension = 2;
  int resolution = 128;
  int particles_per_cell = 2;
  GridBasis basis = GridBasis::q1;
  Material material;
  double gravity = -9.81;
  bool walls = true;
  bool sticky_floor = false;  ///< nodes on the floor stop entirely when material moves into it
  double dt = 0.0;
  std::vector<double> positions;
  std::vector<double> velocities;
  std::vector<double> volumes;        ///< reference (undeformed) volume per particle
  std::vector<double> volume_ratios;  ///< J = det F at the start per particle (fluids: hydrostatic)

  [[nodiscard]] double cell_size() const { return 1.0 / resolution; }
  [[nodiscard]] std::int64_t particle_count() const {
    return static_cast<std::int64_t>(volumes.size());
  }
};

/// Grid layers along each wall that the walls act on; particles stay inside them.
inline constexpr int wall_cells = 2;

/// Builds the scene: particles on a regular lattice of particles_per_cell^D per cell inside the
/// scene's shape, each with its share of the cell's volume. Fluid starts in hydrostatic balance:
/// compressed by the weight of the water above it (J < 1, reference volume = volume / J). Throws
/// afem::Error naming the option when the dimension is not 2 or 3, the resolution is below 16 or
/// above 4096, or the particles per cell or the time step are not positive.
Scene make_scene(const SceneOptions& options);

}  // namespace afem::apps::mpm
