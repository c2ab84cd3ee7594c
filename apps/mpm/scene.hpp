#pragma once

/// @file
/// The built-in scenes of the MPM programs (no input files): a sand column collapsing into a
/// pile, an elastic ball dropped on the floor, a dam break and a layer of still water, each in 2D
/// and 3D, in the unit box; each is a Setup.

#include <string>
#include <string_view>

#include "arenafem/apps/mpm/setup.hpp"

namespace afem::apps::mpm {

/// Which built-in scene to set up.
enum class SceneKind { sand_column, elastic_drop, dam_break, still_water };

/// The scene's name as the command line spells it.
std::string to_string(SceneKind kind);

/// Whether the scene is a fluid (which an incompressible program can run).
bool holds_fluid(SceneKind kind);

/// The scene named `name`; throws afem::Error listing the valid names otherwise.
SceneKind parse_scene(std::string_view name);

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
  /// The incompressible fluid's pressure solve.
  PressurePreconditioner pressure_preconditioner = PressurePreconditioner::multigrid;
};

/// Builds the scene as a Setup in the unit box: particles on a regular lattice of
/// particles_per_cell^D per cell inside the scene's shape, each with its share of the cell's
/// volume; every face slip (the sand column's floor sticky), or open without walls. Fluid starts
/// in hydrostatic balance: compressed by the weight of the water above it (J < 1, reference
/// volume = volume / J). Throws afem::Error naming the option when the dimension is not 2 or 3,
/// the resolution is below 16 or above 4096, or the particles per cell or the time step are not
/// positive.
Setup make_scene(const SceneOptions& options);

}  // namespace afem::apps::mpm
