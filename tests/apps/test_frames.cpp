// MPM frames read back: the particle frames (.vtp), grid frames (.vtu) and ParaView collections
// (.pvd) hold the counts, array names and values of the simulation at each written frame.
#include <gtest/gtest.h>
#include <Eigen/Core>
#include <Eigen/LU>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "arenafem/apps/mpm/frames.hpp"
#include "arenafem/apps/mpm/scene.hpp"
#include "arenafem/apps/mpm/simulation.hpp"
#include "support/backend_test.hpp"
#include "support/temp_file.hpp"
#include "support/vtk_xml.hpp"

namespace afem::apps::mpm {
namespace {

/// The simulation's state when a frame was written.
struct Frame {
  double time = 0.0;
  ParticleState particles;
  GridState grid;
};

/// Each of `expected` within `relative` of its value (the .vtp files print 9 digits).
void expect_close(const std::vector<double>& actual, const std::vector<double>& expected,
                  double relative, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], relative * std::max(1.0, std::abs(expected[i])))
        << what << " value " << i;
  }
}

/// D values per particle as the 3 components VTK wants (z = 0 in 2D).
std::vector<double> as_3d(const std::vector<double>& values, int dimension) {
  const auto dim = static_cast<std::size_t>(dimension);
  std::vector<double> out;
  for (std::size_t p = 0; p < values.size() / dim; ++p) {
    for (std::size_t d = 0; d < 3; ++d) {
      out.push_back(d < dim ? values[p * dim + d] : 0.0);
    }
  }
  return out;
}

double determinant(const std::vector<double>& f, std::size_t p, int dimension) {
  if (dimension == 2) {
    const double* a = &f[p * 4];
    return a[0] * a[3] - a[1] * a[2];
  }
  const Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>> a(&f[p * 9]);
  return a.determinant();
}

std::string frame_file(const char* prefix, std::size_t frame, const char* extension) {
  char name[64];
  std::snprintf(name, sizeof name, "%s_%05zu.%s", prefix, frame, extension);
  return name;
}

class FramesTest : public test::BackendTest {
protected:
  template <int D>
  void write_and_read_back(SceneKind kind, int resolution) {
    SceneOptions options;
    options.kind = kind;
    options.dimension = D;
    options.resolution = resolution;
    const mpm::Setup scene = make_scene(options);
    Simulation<D> simulation(scene, *pool_, *arena_);
    const test::TempFile directory("frames_" + std::to_string(D) + "d", "");
    FrameWriter writer(directory.path(), simulation.grid_mesh());
    std::vector<Frame> frames;
    for (int frame = 0; frame < 3; ++frame) {
      for (int s = 0; s < (frame == 0 ? 1 : 7); ++s) {
        simulation.step();
      }
      writer.write(simulation);
      frames.push_back({simulation.time(), simulation.particles(), simulation.grid_state()});
    }
    ASSERT_EQ(writer.frames_written(), 3);

    const std::size_t n = frames[0].particles.masses.size();
    const auto nodes = static_cast<std::size_t>(std::pow(resolution + 1, D));
    const auto cells = static_cast<std::size_t>(std::pow(resolution, D));
    for (std::size_t f = 0; f < frames.size(); ++f) {
      SCOPED_TRACE("frame " + std::to_string(f));
      const Frame& frame = frames[f];
      const std::string vtp = test::read_all(directory.path() / frame_file("particles", f, "vtp"));
      ASSERT_NE(vtp.find(R"(<VTKFile type="PolyData")"), std::string::npos);
      EXPECT_EQ(test::attribute(vtp, "NumberOfPoints"), std::to_string(n));
      EXPECT_EQ(test::attribute(vtp, "NumberOfVerts"), std::to_string(n));
      std::vector<double> points;
      for (const std::string& value :
           test::values_after(vtp, vtp.find("<DataArray", vtp.find("<Points>")))) {
        points.push_back(std::stod(value));
      }
      expect_close(points, as_3d(frame.particles.positions, D), 5e-9, "positions");
      EXPECT_NE(test::data_array_tag(vtp, "velocity").find(R"(NumberOfComponents="3")"),
                std::string::npos);
      expect_close(test::data_array_numbers(vtp, "velocity"), as_3d(frame.particles.velocities, D),
                   5e-9, "velocity");
      std::vector<double> volume_ratio(n);
      for (std::size_t p = 0; p < n; ++p) {
        volume_ratio[p] = determinant(frame.particles.deformation, p, D);
      }
      expect_close(test::data_array_numbers(vtp, "J"), volume_ratio, 5e-9, "J");
      const std::vector<double> connectivity = test::data_array_numbers(vtp, "connectivity");
      const std::vector<double> offsets = test::data_array_numbers(vtp, "offsets");
      ASSERT_EQ(connectivity.size(), n);
      ASSERT_EQ(offsets.size(), n);
      for (std::size_t p = 0; p < n; ++p) {
        ASSERT_EQ(connectivity[p], static_cast<double>(p));
        ASSERT_EQ(offsets[p], static_cast<double>(p + 1));
      }

      const std::string vtu = test::read_all(directory.path() / frame_file("grid", f, "vtu"));
      ASSERT_NE(vtu.find(R"(<VTKFile type="UnstructuredGrid")"), std::string::npos);
      EXPECT_EQ(test::attribute(vtu, "NumberOfPoints"), std::to_string(nodes));
      EXPECT_EQ(test::attribute(vtu, "NumberOfCells"), std::to_string(cells));
      EXPECT_NE(test::data_array_tag(vtu, "velocity")
                    .find(R"(NumberOfComponents=")" + std::to_string(D) + "\""),
                std::string::npos);
      EXPECT_EQ(test::data_array_numbers(vtu, "mass"), frame.grid.masses);  // round-trip text
      EXPECT_EQ(test::data_array_numbers(vtu, "velocity"), frame.grid.velocities);
    }
    EXPECT_NE(frames[0].particles.positions, frames[2].particles.positions);  // frames differ

    for (const auto& [collection, prefix, extension] :
         {std::tuple{"particles.pvd", "particles", "vtp"}, std::tuple{"grid.pvd", "grid", "vtu"}}) {
      SCOPED_TRACE(collection);
      const std::string pvd = test::read_all(directory.path() / collection);
      ASSERT_NE(pvd.find(R"(<VTKFile type="Collection")"), std::string::npos);
      ASSERT_EQ(test::occurrences(pvd, "<DataSet "), frames.size());
      std::size_t at = 0;
      for (std::size_t f = 0; f < frames.size(); ++f) {
        at = pvd.find("<DataSet ", at) + 1;
        EXPECT_EQ(std::stod(test::attribute(pvd, "timestep", at)), frames[f].time);
        EXPECT_EQ(test::attribute(pvd, "file", at), frame_file(prefix, f, extension));
      }
    }
  }
};

TEST_F(FramesTest, ParticleAndGridFramesReadBackIn2D) {
  write_and_read_back<2>(SceneKind::sand_column, 32);
}

TEST_F(FramesTest, ParticleAndGridFramesReadBackIn3D) {
  write_and_read_back<3>(SceneKind::elastic_drop, 16);
}

}  // namespace
}  // namespace afem::apps::mpm
