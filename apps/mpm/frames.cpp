// Particle and grid frames for ParaView.
#include "arenafem/apps/mpm/frames.hpp"

#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <span>
#include <string_view>
#include <utility>

#include "arenafem/geometry/vtu.hpp"
#include "arenafem/memory/error.hpp"

namespace afem::apps::mpm {

namespace {

std::string frame_name(const char* prefix, int frame, const char* extension) {
  char name[64];
  std::snprintf(name, sizeof name, "%s_%05d.%s", prefix, frame, extension);
  return name;
}

void write_collection(const std::filesystem::path& file, const char* prefix, const char* extension,
                      const std::vector<double>& times) {
  std::ofstream out(file);
  out << "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\">\n<Collection>\n";
  for (std::size_t i = 0; i < times.size(); ++i) {
    std::array<char, 32> time{};
    const auto written = std::to_chars(time.data(), time.data() + time.size(), times[i]);
    out << "<DataSet timestep=\""
        << std::string_view(time.data(), static_cast<std::size_t>(written.ptr - time.data()))
        << "\" file=\"" << frame_name(prefix, static_cast<int>(i), extension) << "\"/>\n";
  }
  out << "</Collection>\n</VTKFile>\n";
  if (!out) {
    throw Error("FrameWriter: cannot write " + file.string());
  }
}

/// det F of a row-major 2 x 2 or 3 x 3 matrix.
double determinant(const double* f, int dimension) {
  if (dimension == 2) {
    return f[0] * f[3] - f[1] * f[2];
  }
  return f[0] * (f[4] * f[8] - f[5] * f[7]) - f[1] * (f[3] * f[8] - f[5] * f[6]) +
         f[2] * (f[3] * f[7] - f[4] * f[6]);
}

}  // namespace

void write_particles_vtp(const std::filesystem::path& file, int dimension,
                         const ParticleState& particles, geometry::VtkEncoding encoding) {
  const auto dim = static_cast<std::size_t>(dimension);
  const std::size_t n = particles.masses.size();
  const auto as_3d = [&](const std::vector<double>& values) {
    std::vector<double> padded(n * 3, 0.0);
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t d = 0; d < dim; ++d) {
        padded[p * 3 + d] = values[p * dim + d];
      }
    }
    return padded;
  };
  std::vector<double> volume_ratio(n);
  std::vector<std::int32_t> connectivity(n);
  std::vector<std::int32_t> offsets(n);
  for (std::size_t p = 0; p < n; ++p) {
    volume_ratio[p] = determinant(&particles.deformation[p * dim * dim], dimension);
    connectivity[p] = static_cast<std::int32_t>(p);
    offsets[p] = static_cast<std::int32_t>(p + 1);
  }
  geometry::VtkXmlWriter writer(encoding);
  writer.begin("PolyData");
  writer.text("  <PolyData>\n    <Piece NumberOfPoints=\"" + std::to_string(n) +
              "\" NumberOfVerts=\"" + std::to_string(n) +
              "\" NumberOfLines=\"0\" NumberOfStrips=\"0\" NumberOfPolys=\"0\">\n      <Points>\n");
  const std::vector<double> positions = as_3d(particles.positions);
  writer.data_array("", 3, std::span<const double>(positions), 3);
  writer.text("      </Points>\n      <PointData Vectors=\"velocity\" Scalars=\"J\">\n");
  const std::vector<double> velocities = as_3d(particles.velocities);
  writer.data_array("velocity", 3, std::span<const double>(velocities), 3);
  writer.data_array("J", 1, std::span<const double>(volume_ratio), 1);
  writer.text("      </PointData>\n      <Verts>\n");
  writer.data_array("connectivity", 1, std::span<const std::int32_t>(connectivity), 16);
  writer.data_array("offsets", 1, std::span<const std::int32_t>(offsets), 16);
  writer.text("      </Verts>\n    </Piece>\n  </PolyData>\n");
  writer.write(file, "write_particles_vtp");
}

FrameWriter::FrameWriter(std::filesystem::path directory, const geometry::MeshData& grid_mesh,
                         geometry::VtkEncoding encoding)
    : directory_(std::move(directory)), grid_mesh_(grid_mesh), encoding_(encoding) {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error) {
    throw Error("FrameWriter: cannot create " + directory_.string() + ": " + error.message());
  }
}

void FrameWriter::write_frame(int dimension, double time, const ParticleState& particles,
                              const GridState& grid) {
  const int frame = frames_written();
  write_particles_vtp(directory_ / frame_name("particles", frame, "vtp"), dimension, particles,
                      encoding_);
  geometry::write_vtu(directory_ / frame_name("grid", frame, "vtu"), grid_mesh_,
                      {{"mass", 1, grid.masses}, {"velocity", dimension, grid.velocities}}, {},
                      encoding_);
  times_.push_back(time);
  write_collection(directory_ / "particles.pvd", "particles", "vtp", times_);
  write_collection(directory_ / "grid.pvd", "grid", "vtu", times_);
}

}  // namespace afem::apps::mpm
