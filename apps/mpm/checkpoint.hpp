#pragma once

/// @file
/// The MPM checkpoint: the whole state of a Simulation on the host, and its file format.
///
/// Format version 2, every number little-endian, with no padding:
///
///     offset  size  field
///          0     8  magic "AFEMCKPT"
///          8     4  u32 format version (2)
///         12     4  u32 dimension D (2 or 3)
///         16     8  u64 payload bytes P
///         24     P  payload (below)
///       24+P     8  u64 checksum: FNV-1a (64 bit) of bytes 0 to 24+P
///
/// The payload, in order: the setup (i32 basis (0 q1, 1 bspline2); f64 origin[3], extent[3];
/// i32 resolution; f64 gravity[3]; u8 boundaries[6] (0 slip, 1 sticky, 2 open); i32
/// boundary_cells; f64 dt (resolved), cfl; u8 pressure preconditioner (0 Jacobi, 1 multigrid);
/// i64 capacity; u8 external_forces; u32 material count M
/// and M materials, each i32 kind (0 elastic, 1 sand, 2 fluid, 3 incompressible fluid) and f64
/// density, youngs_modulus, poisson_ratio, friction_angle_degrees, bulk_modulus, tait_exponent);
/// then i64 steps taken, i64 particles left; i32 particle count N; f64 positions[N D],
/// velocities[N D], affine[N D D], deformation[N D D], volumes[N]; i32 materials[N]; f64
/// forces[N D] when external_forces is 1; u64 pressure count K and f64 pressure[K] (the
/// incompressible fluid's last pressure, the next solve's initial guess; K = 0 otherwise).

#include <cstdint>
#include <string>
#include <vector>

#include "arenafem/apps/mpm/setup.hpp"

namespace afem::apps::mpm {

/// The checkpoint format version this build writes and reads.
inline constexpr std::uint32_t checkpoint_version = 2;

/// A simulation's whole state on the host (the arrays as in ParticleViews, trimmed to the count).
struct Checkpoint {
  Setup setup;  ///< its `particles` empty; `dt` the resolved time step
  std::int64_t steps = 0;
  std::int64_t particles_left = 0;
  std::int32_t particle_count = 0;
  std::vector<double> positions;
  std::vector<double> velocities;
  std::vector<double> affine;
  std::vector<double> deformation;
  std::vector<double> volumes;
  std::vector<std::int32_t> materials;
  std::vector<double> forces;
  std::vector<double> pressure;
};

/// Writes `checkpoint` to `path` (through a temporary file renamed into place, so a crash leaves
/// the old file). Throws afem::Error naming the file when it cannot be written.
void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);

/// Reads the checkpoint in `path`. Throws afem::Error naming the file and what is wrong when it
/// cannot be read, is not a checkpoint, has another format version, is truncated, fails its
/// checksum, or holds arrays of sizes that disagree with its particle count.
Checkpoint read_checkpoint(const std::string& path);

}  // namespace afem::apps::mpm
