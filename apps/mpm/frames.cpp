// Particle and grid frames for ParaView.
#include "apps/mpm/frames.hpp"

#include <array>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <string_view>
#include <utility>

#include "geometry/vtu.hpp"
#include "memory/error.hpp"

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
                         const ParticleState& particles) {
  const auto dim = static_cast<std::size_t>(dimension);
  const std::size_t n = particles.masses.size();
  std::ofstream out(file);
  if (!out) {
    throw Error("write_particles_vtp: cannot open " + file.string());
  }
  char line[128];
  out << "<?xml version=\"1.0\"?>\n<VTKFile type=\"PolyData\" version=\"0.1\" "
         "byte_order=\"LittleEndian\">\n<PolyData>\n<Piece NumberOfPoints=\""
      << n << "\" NumberOfVerts=\"" << n
      << "\" NumberOfLines=\"0\" NumberOfStrips=\"0\" NumberOfPolys=\"0\">\n";
  const auto vectors = [&](const char* name, const std::vector<double>& values) {
    out << "<DataArray type=\"Float64\"" << (name != nullptr ? " Name=\"" : "")
        << (name != nullptr ? name : "") << (name != nullptr ? "\"" : "")
        << " NumberOfComponents=\"3\" format=\"ascii\">\n";
    for (std::size_t p = 0; p < n; ++p) {
      const double z = dim == 3 ? values[p * 3 + 2] : 0.0;
      std::snprintf(line, sizeof line, "%.9g %.9g %.9g\n", values[p * dim], values[p * dim + 1], z);
      out << line;
    }
    out << "</DataArray>\n";
  };
  out << "<Points>\n";
  vectors(nullptr, particles.positions);
  out << "</Points>\n<PointData Vectors=\"velocity\" Scalars=\"J\">\n";
  vectors("velocity", particles.velocities);
  out << "<DataArray type=\"Float64\" Name=\"J\" format=\"ascii\">\n";
  for (std::size_t p = 0; p < n; ++p) {
    std::snprintf(line, sizeof line, "%.9g\n",
                  determinant(&particles.deformation[p * dim * dim], dimension));
    out << line;
  }
  out << "</DataArray>\n</PointData>\n<Verts>\n"
         "<DataArray type=\"Int32\" Name=\"connectivity\" format=\"ascii\">\n";
  for (std::size_t p = 0; p < n; ++p) {
    out << p << '\n';
  }
  out << "</DataArray>\n<DataArray type=\"Int32\" Name=\"offsets\" format=\"ascii\">\n";
  for (std::size_t p = 0; p < n; ++p) {
    out << p + 1 << '\n';
  }
  out << "</DataArray>\n</Verts>\n</Piece>\n</PolyData>\n</VTKFile>\n";
  if (!out) {
    throw Error("write_particles_vtp: cannot write " + file.string());
  }
}

FrameWriter::FrameWriter(std::filesystem::path directory, const geometry::MeshData& grid_mesh)
    : directory_(std::move(directory)), grid_mesh_(grid_mesh) {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error) {
    throw Error("FrameWriter: cannot create " + directory_.string() + ": " + error.message());
  }
}

void FrameWriter::write_frame(int dimension, double time, const ParticleState& particles,
                              const GridState& grid) {
  const int frame = frames_written();
  write_particles_vtp(directory_ / frame_name("particles", frame, "vtp"), dimension, particles);
  geometry::write_vtu(directory_ / frame_name("grid", frame, "vtu"), grid_mesh_,
                      {{"mass", 1, grid.masses}, {"velocity", dimension, grid.velocities}});
  times_.push_back(time);
  write_collection(directory_ / "particles.pvd", "particles", "vtp", times_);
  write_collection(directory_ / "grid.pvd", "grid", "vtu", times_);
}

}  // namespace afem::apps::mpm
