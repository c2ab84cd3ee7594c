#pragma once

/// @file
/// Setup: everything a Simulation needs, independent of the built-in scenes: the domain box and
/// its grid, gravity, a boundary condition per face, the materials, the time step, the particle
/// capacity and the initial particles. Simulation's constructor checks it with validate_setup().

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "arenafem/apps/mpm/material.hpp"

namespace afem::apps::mpm {

/// The grid's basis for the transfers: Q1 (multilinear hats on the vertices) or quadratic
/// B-splines (on the cell centres; smooth across cell faces, the usual MPM kernel).
enum class GridBasis { q1, bspline2 };

/// The basis's name as the command line spells it.
std::string to_string(GridBasis basis);

/// The basis named `name`; throws afem::Error listing the valid names otherwise.
GridBasis parse_basis(std::string_view name);

/// What preconditions the incompressible fluid's pressure solve: Jacobi, or the geometric
/// multigrid (whose CG iterations do not grow with the resolution).
enum class PressurePreconditioner : std::uint8_t { jacobi, multigrid };

/// The preconditioner's name as the command line spells it: "jacobi" or "multigrid".
std::string to_string(PressurePreconditioner preconditioner);

/// The preconditioner named `name`; throws afem::Error listing the valid names otherwise.
PressurePreconditioner parse_pressure_preconditioner(std::string_view name);

/// What a face of the domain box does to material that moves into it, through the grid nodes
/// within `Setup::boundary_cells` of it: `slip` stops the velocity across the face, `sticky` stops
/// the whole velocity, `open` does nothing (particles that leave the box are removed at the start
/// of the next step).
enum class Boundary : std::uint8_t { slip, sticky, open };

/// The boundary's name: "slip", "sticky" or "open".
std::string to_string(Boundary boundary);

/// Particles on the host, as Setup's initial particles or a batch for Simulation::add_particles:
/// `dimension` values per particle for positions and velocities (x, y[, z] of each in turn).
struct ParticleBatch {
  std::vector<double> positions;
  std::vector<double> velocities;
  /// Reference (undeformed) volume of each particle; its mass is this times its density.
  std::vector<double> volumes;
  /// J = det F at the start, per particle (the deformation starts as J^(1/D) I); empty: all 1.
  std::vector<double> volume_ratios;
  /// Index into Setup::materials per particle; empty: all 0.
  std::vector<std::int32_t> materials;

  [[nodiscard]] std::int64_t count() const { return static_cast<std::int64_t>(volumes.size()); }
};

/// The faces of the domain box, in the order of Setup::boundaries: the low then the high face of
/// x, y and z (a 2D setup reads the first four).
enum class Face : std::uint8_t { x_low, x_high, y_low, y_high, z_low, z_high };

/// Everything a simulation is set up from (SI units). The cells are cubes: `resolution` cells of
/// `extent[0] / resolution` along x, and each other axis's extent must be a whole number of cells.
struct Setup {
  int dimension = 2;
  std::array<double, 3> origin{0.0, 0.0, 0.0};
  std::array<double, 3> extent{1.0, 1.0, 1.0};
  int resolution = 128;  ///< cells along x
  GridBasis basis = GridBasis::q1;
  std::array<double, 3> gravity{0.0, -9.81, 0.0};  ///< m/s^2
  std::array<Boundary, 6> boundaries{Boundary::slip, Boundary::slip, Boundary::slip,
                                     Boundary::slip, Boundary::slip, Boundary::slip};
  /// Grid layers along each closed (slip or sticky) face that it acts on; particles are kept
  /// inside them.
  int boundary_cells = 2;
  /// At least one; particles name theirs by index. An incompressible fluid is the only material
  /// of its run, and needs every face closed.
  std::vector<Material> materials{Material{}};
  /// Seconds per step; 0: cfl * cell size / the fastest wave speed of the materials.
  double dt = 0.0;
  double cfl = 0.4;
  /// The incompressible fluid's pressure solve (its velocity is staggered on the Q1 grid; with
  /// bspline2 it is collocated and the solve takes Jacobi).
  PressurePreconditioner pressure_preconditioner = PressurePreconditioner::multigrid;
  /// Particles the simulation can hold (add_particles() up to it); 0: the initial count.
  std::int64_t capacity = 0;
  /// Whether particles carry an external force (Simulation::external_forces()).
  bool external_forces = false;
  ParticleBatch particles;

  [[nodiscard]] double cell_size() const { return extent[0] / resolution; }
  /// Cells along axis `axis` (extent / cell size, rounded).
  [[nodiscard]] std::int32_t cells(int axis) const;
  [[nodiscard]] Boundary boundary(Face face) const {
    return boundaries[static_cast<std::size_t>(face)];
  }
  /// `dt`, or the time step the CFL number gives.
  [[nodiscard]] double time_step() const;
  /// `capacity`, or the initial count.
  [[nodiscard]] std::int64_t particle_capacity() const {
    return capacity > 0 ? capacity : particles.count();
  }
};

/// Throws afem::Error naming the field ("Setup.extent[1]", "Setup.materials[2].density", ...)
/// when `setup` cannot be simulated: a dimension other than 2 or 3, a box that is not a whole
/// number of cubic cells, a resolution below 4 or a grid above 2^31 cells, a boundary_cells that
/// leaves no room, no material or a bad constant, an incompressible fluid mixed with other
/// materials or with an open face, a time step or CFL number that is not positive, a capacity
/// below the initial count, or initial particles that fail check_particles().
void validate_setup(const Setup& setup);

/// Throws afem::Error naming `what` and the field when `batch` has arrays of different lengths,
/// a position outside the domain box, a volume or volume ratio that is not positive, or a
/// material index outside setup.materials.
void check_particles(const Setup& setup, const ParticleBatch& batch, const char* what);

}  // namespace afem::apps::mpm
