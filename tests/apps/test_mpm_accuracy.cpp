// The MPM solver against an analytic answer: the first axial mode of a free elastic bar, whose
// period the simulation must reproduce within a few percent, closer as the grid is refined.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <numbers>
#include <vector>

#include "arenafem/apps/mpm/scene.hpp"
#include "arenafem/apps/mpm/simulation.hpp"
#include "support/backend_test.hpp"

namespace afem::apps::mpm {
namespace {

/// The bar: [0.25, 0.75] x [0.4375, 0.5625] in the unit box (its ends on grid lines at every
/// resolution used here), density 1000 kg/m^3, E = 1e5 Pa and Poisson's ratio 0, so that the
/// strip carries no lateral coupling and its axial waves run at c = sqrt(E / rho) = 10 m/s as in
/// a 1D bar.
constexpr double bar_start = 0.25;
constexpr double bar_length = 0.5;
constexpr double bar_bottom = 0.4375;
constexpr double bar_height = 0.125;
constexpr double bar_speed = 0.05;  ///< velocity amplitude: strain amplitude 0.005

/// A free bar, no gravity, no walls, 2 x 2 particles per cell, moving in its first axial mode:
/// v_x(X) = V cos(pi (X - x0) / L), no displacement yet. The analytic motion is
/// v_x(X, t) = V cos(pi (X - x0) / L) cos(omega t) with omega = pi c / L: period 2 L / c.
mpm::Setup vibrating_bar(int resolution) {
  SceneOptions options;
  options.kind = SceneKind::elastic_drop;
  options.resolution = resolution;
  options.gravity = false;
  options.walls = false;
  mpm::Setup scene = make_scene(options);
  scene.materials[0] = Material{.kind = MaterialKind::elastic,
                                .density = 1000.0,
                                .youngs_modulus = 1.0e5,
                                .poisson_ratio = 0.0};
  scene.dt = 0.4 * scene.cell_size() / scene.materials[0].wave_speed();
  const double spacing = scene.cell_size() / 2.0;
  const auto along = static_cast<int>(std::lround(bar_length / spacing));
  const auto across = static_cast<int>(std::lround(bar_height / spacing));
  scene.particles.positions.clear();
  scene.particles.velocities.clear();
  scene.particles.volumes.clear();
  for (int j = 0; j < across; ++j) {
    for (int i = 0; i < along; ++i) {
      const double x = bar_start + (i + 0.5) * spacing;
      scene.particles.positions.push_back(x);
      scene.particles.positions.push_back(bar_bottom + (j + 0.5) * spacing);
      scene.particles.velocities.push_back(
          bar_speed * std::cos(std::numbers::pi * (x - bar_start) / bar_length));
      scene.particles.velocities.push_back(0.0);
      scene.particles.volumes.push_back(spacing * spacing);
    }
  }
  scene.particles.volume_ratios.assign(scene.particles.volumes.size(), 1.0);
  return scene;
}

/// The analytic period 2 L / c.
double analytic_period(const Material& material) {
  return 2.0 * bar_length / std::sqrt(material.youngs_modulus / material.density);
}

class MpmAccuracyTest : public test::BackendTest {
protected:
  /// Runs the bar over about two periods and returns the period measured from the zero
  /// crossings of the mode's amplitude a(t) = sum_p m_p v_x,p cos(pi (X_p - x0) / L), X_p being
  /// the particle's initial position (each crossing placed by linear interpolation in time).
  double measured_period(int resolution) {
    const mpm::Setup scene = vibrating_bar(resolution);
    Simulation<2> simulation(scene, *pool_, *arena_);
    const std::size_t n = scene.particles.volumes.size();
    std::vector<double> shape(n);
    for (std::size_t p = 0; p < n; ++p) {
      shape[p] =
          std::cos(std::numbers::pi * (scene.particles.positions[2 * p] - bar_start) / bar_length);
    }
    const auto amplitude = [&] {
      const ParticleState state = simulation.particles();
      double sum = 0.0;
      for (std::size_t p = 0; p < n; ++p) {
        sum += state.masses[p] * state.velocities[2 * p] * shape[p];
      }
      return sum;
    };
    const double period = analytic_period(scene.materials[0]);
    std::vector<double> crossings;
    double previous = amplitude();
    double previous_time = simulation.time();
    while (simulation.time() < 2.1 * period) {
      simulation.step();
      const double current = amplitude();
      if ((previous > 0.0) != (current > 0.0)) {
        crossings.push_back(previous_time +
                            (simulation.time() - previous_time) * previous / (previous - current));
      }
      previous = current;
      previous_time = simulation.time();
    }
    EXPECT_EQ(crossings.size(), 4U) << "resolution " << resolution;  // T/4, 3T/4, 5T/4, 7T/4
    if (crossings.size() < 2) {
      return 0.0;
    }
    return 2.0 * (crossings.back() - crossings.front()) / static_cast<double>(crossings.size() - 1);
  }
};

TEST_F(MpmAccuracyTest, AFreeBarVibratesAtItsAnalyticAxialFrequency) {
  const double expected = analytic_period(vibrating_bar(32).materials[0]);
  std::vector<double> errors;
  for (const int resolution : {32, 64, 128}) {
    const double period = measured_period(resolution);
    errors.push_back(std::abs(period - expected) / expected);
    std::printf(
        "[          ] bar at %d cells per axis: period %.5f s, analytic %.5f s, error %.2f %%\n",
        resolution, period, expected, 100.0 * errors.back());
  }
  EXPECT_LT(errors[0], 0.01);
  // Closer on every finer grid, at an order of at least 1.5 (about 2 is seen: 0.5, 0.13, 0.03 %).
  EXPECT_GT(errors[0] / errors[1], std::pow(2.0, 1.5));
  EXPECT_GT(errors[1] / errors[2], std::pow(2.0, 1.5));
}

}  // namespace
}  // namespace afem::apps::mpm
