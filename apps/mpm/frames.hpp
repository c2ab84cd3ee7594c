#pragma once

/// @file
/// FrameWriter: particle frames (.vtp) and grid frames (.vtu) of an MPM run in one directory,
/// with ParaView collections (particles.pvd, grid.pvd) that list every frame with its time.

#include <filesystem>
#include <string>
#include <vector>

#include "arenafem/apps/mpm/simulation.hpp"
#include "arenafem/geometry/mesh_data.hpp"
#include "arenafem/geometry/vtk_xml_writer.hpp"

namespace afem::apps::mpm {

/// Writes frames into `directory` (created when missing): particles_NNNNN.vtp with the
/// particles' velocity and volume ratio J, grid_NNNNN.vtu with the grid's mass and velocity.
/// The .pvd collections (each frame's time written so that it reads back exactly) are rewritten
/// after each frame, so a run stopped part-way leaves readable output. Arrays are stored as
/// appended raw binary unless `encoding` asks for ASCII. Throws afem::Error naming the path when a
/// file cannot be written.
class FrameWriter {
public:
  FrameWriter(std::filesystem::path directory, const geometry::MeshData& grid_mesh,
              geometry::VtkEncoding encoding = geometry::VtkEncoding::binary);

  /// Writes frame number frames_written() of `simulation` at its current time.
  template <int D>
  void write(const Simulation<D>& simulation);

  [[nodiscard]] int frames_written() const { return static_cast<int>(times_.size()); }
  [[nodiscard]] const std::filesystem::path& directory() const { return directory_; }

private:
  void write_frame(int dimension, double time, const ParticleState& particles,
                   const GridState& grid);

  std::filesystem::path directory_;
  geometry::MeshData grid_mesh_;
  geometry::VtkEncoding encoding_;
  std::vector<double> times_;
};

template <int D>
void FrameWriter::write(const Simulation<D>& simulation) {
  write_frame(D, simulation.time(), simulation.particles(), simulation.grid_state());
}

/// Writes particles as a VTK XML PolyData file (.vtp; arrays appended raw binary, or ASCII):
/// points with 3 coordinates (z = 0 in 2D), one vertex cell per particle, point data "velocity"
/// (3 components) and "J".
void write_particles_vtp(const std::filesystem::path& file, int dimension,
                         const ParticleState& particles,
                         geometry::VtkEncoding encoding = geometry::VtkEncoding::binary);

}  // namespace afem::apps::mpm
