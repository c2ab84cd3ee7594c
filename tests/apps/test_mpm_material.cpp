// The MPM materials' pointwise updates: the fluid's cube root and Tait stress against the
// standard library, which stresses are multiples of the identity, the Tait pressure's limit on its
// sound speed, the symmetric eigen-decomposition behind the sand's Hencky strain against Eigen's
// solver, and the end-of-step projection of each material.
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "arenafem/apps/mpm/material.hpp"

namespace afem::apps::mpm {
namespace {

/// Distance in units in the last place of `reference`.
double ulps(double value, double reference) {
  return std::abs(value - reference) / (std::nextafter(reference, 2.0 * reference) - reference);
}

TEST(MpmMaterial, CubeRootIsWithinThreeUlpsOfTheLibrary) {
  double worst = 0.0;
  for (int k = -2400; k <= 2400; ++k) {  // 1e-240 .. 1e240, 10 points per decade, off the grid
    const double x = std::pow(10.0, 0.1 * k + 0.0123);
    worst = std::max(worst, ulps(detail::cube_root(x), std::cbrt(x)));
  }
  for (int k = 0; k <= 10000; ++k) {  // the volume ratios a fluid sees
    const double x = 0.5 + 1.5 * k / 10000.0;
    worst = std::max(worst, ulps(detail::cube_root(x), std::cbrt(x)));
  }
  EXPECT_LE(worst, 3.0);
  EXPECT_EQ(detail::cube_root(8.0), 2.0);
  EXPECT_EQ(detail::cube_root(1.0), 1.0);
}

TEST(MpmMaterial, CubeRootOfSpecialValuesIsTheLibrarys) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const double x : {0.0, -0.0, -27.0, -1e-5, 1e-310, 1e305, inf, -inf}) {
    EXPECT_EQ(detail::cube_root(x), std::cbrt(x)) << x;
  }
  EXPECT_TRUE(std::isnan(detail::cube_root(std::numeric_limits<double>::quiet_NaN())));
}

TEST(MpmMaterial, TaitStressMatchesTheClosedForm) {
  for (const double gamma : {7.0, 1.0, 6.5}) {  // whole exponents by squaring, others by pow
    Material fluid;
    fluid.kind = MaterialKind::fluid;
    fluid.bulk_modulus = 2.0e5;
    fluid.tait_exponent = gamma;
    const MaterialView view(fluid);
    for (const double j : {0.9, 1.0, 1.13}) {
      const Eigen::Matrix3d f = std::cbrt(j) * Eigen::Matrix3d::Identity();
      const double jf = f.determinant();
      const double pressure = fluid.bulk_modulus / gamma * (std::pow(jf, -gamma) - 1.0);
      const Eigen::Matrix3d tau = kirchhoff_stress<3>(view, f);
      for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) {
          const double expected = r == c ? -jf * pressure : 0.0;
          EXPECT_NEAR(tau(r, c), expected, 1e-12 * fluid.bulk_modulus)
              << "gamma " << gamma << ", J " << j;
        }
      }
    }
  }
}

// The momentum form multiplies by a stress's first diagonal entry alone where isotropic_stress
// says so: under a sheared, stretched F every such material's stress is that entry times the
// identity, and every other material's is not.
TEST(MpmMaterial, IsotropicStressIsAMultipleOfTheIdentityUnderAnyDeformation) {
  Eigen::Matrix3d f;
  f << 1.05, 0.2, 0.0, -0.1, 0.9, 0.15, 0.05, 0.0, 1.1;
  for (const MaterialKind kind : {MaterialKind::elastic, MaterialKind::sand, MaterialKind::fluid,
                                  MaterialKind::incompressible_fluid}) {
    Material material;
    material.kind = kind;
    const Eigen::Matrix3d tau = kirchhoff_stress<3>(MaterialView(material), f);
    const bool multiple = tau == tau(0, 0) * Eigen::Matrix3d::Identity();
    EXPECT_EQ(isotropic_stress(kind), multiple) << static_cast<int>(kind) << "\n" << tau;
  }
}

// Below the J where the Tait sound speed reaches tait_sound_speed_limit c0, the pressure goes on
// along its tangent: continuous, still rising under compression, its sound speed
// c = sqrt(J^2 |dp/dJ| / rho0) (from the stress, by central differences) never above the limit.
TEST(MpmMaterial, TaitPressureStiffensNoFurtherThanItsSoundSpeedLimit) {
  for (const double gamma : {7.0, 6.5, 3.0}) {
    Material fluid;
    fluid.kind = MaterialKind::fluid;
    fluid.bulk_modulus = 2.0e5;
    fluid.density = 1000.0;
    fluid.tait_exponent = gamma;
    const MaterialView view(fluid);
    const double c0 = std::sqrt(fluid.bulk_modulus / fluid.density);
    const double jc = std::pow(tait_sound_speed_limit, -2.0 / (gamma - 1.0));
    EXPECT_NEAR(view.tait_linear_below, jc, 1e-15);
    const auto pressure = [&](double j) {
      const Eigen::Matrix2d f = std::sqrt(j) * Eigen::Matrix2d::Identity();
      return -kirchhoff_stress<2>(view, f)(0, 0) / f.determinant();
    };
    const auto sound_speed = [&](double j) {
      const double h = 1e-6;
      return std::sqrt(j * j * (pressure(j - h) - pressure(j + h)) / (2.0 * h) / fluid.density);
    };
    const double tait_at_limit = fluid.bulk_modulus / gamma * (std::pow(jc, -gamma) - 1.0);
    EXPECT_NEAR(pressure(jc * (1.0 - 1e-12)), tait_at_limit, 1e-6 * tait_at_limit);
    EXPECT_NEAR(sound_speed(jc), tait_sound_speed_limit * c0, 1e-4 * c0) << "gamma " << gamma;
    EXPECT_NEAR(sound_speed(1.0), c0, 1e-4 * c0);
    double last = pressure(1.2);
    for (double j = 1.19; j > 0.05; j -= 0.01) {
      SCOPED_TRACE("gamma " + std::to_string(gamma) + ", J " + std::to_string(j));
      const double p = pressure(j);
      EXPECT_GT(p, last);
      EXPECT_LE(sound_speed(j), tait_sound_speed_limit * c0 * (1.0 + 1e-4));
      if (j < jc) {
        EXPECT_LT(p, fluid.bulk_modulus / gamma * (std::pow(j, -gamma) - 1.0));
      }
      last = p;
    }
  }
}

TEST(MpmMaterial, FluidProjectionKeepsTheVolumeChangeOnly) {
  Material fluid;
  fluid.kind = MaterialKind::fluid;
  const MaterialView view(fluid);
  Eigen::Matrix3d f;
  f << 1.1, 0.2, 0.0, -0.1, 0.95, 0.05, 0.0, 0.02, 1.02;
  const Eigen::Matrix3d projected = project_deformation<3>(view, f);
  EXPECT_NEAR(projected.determinant(), f.determinant(), 1e-14);
  EXPECT_EQ(projected(0, 1), 0.0);
  EXPECT_EQ(projected(0, 0), projected(1, 1));
  EXPECT_EQ(projected(1, 1), projected(2, 2));
  Eigen::Matrix2d g;
  g << 1.1, 0.2, -0.1, 0.95;
  EXPECT_NEAR(project_deformation<2>(view, g).determinant(), g.determinant(), 1e-14);
}

/// Checks symmetric_eigen<D> on `a`: q orthonormal, q diag(values) q^T = a, and the values those
/// of Eigen's self-adjoint solver, all to `tolerance` relative to the largest value.
template <int D>
void expect_decomposes(const Eigen::Matrix<double, D, D>& a, double tolerance) {
  Eigen::Matrix<double, D, 1> values;
  Eigen::Matrix<double, D, D> q;
  detail::symmetric_eigen<D>(a, values, q);
  const double scale = a.norm();
  EXPECT_LE((q.transpose() * q - Eigen::Matrix<double, D, D>::Identity()).norm(), tolerance);
  EXPECT_LE((q * values.asDiagonal() * q.transpose() - a).norm(), tolerance * scale) << a;
  Eigen::Matrix<double, D, 1> sorted = values;
  std::sort(sorted.data(), sorted.data() + D);
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix<double, D, D>> reference(a);
  EXPECT_LE((sorted - reference.eigenvalues()).norm(), tolerance * scale) << a;
}

/// Random symmetric positive definite matrices f f^T (as the Hencky strain builds), some far
/// from and some within 1e-9 of a multiple of the identity (a particle in free fall).
template <int D>
void check_symmetric_eigen() {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> entry(-1.0, 1.0);
  for (const double spread : {1.0, 1e-3, 1e-9, 1e-15, 0.0}) {
    for (int k = 0; k < 200; ++k) {
      Eigen::Matrix<double, D, D> f = Eigen::Matrix<double, D, D>::Identity();
      for (int r = 0; r < D; ++r) {
        for (int c = 0; c < D; ++c) {
          f(r, c) += spread * entry(random);
        }
      }
      expect_decomposes<D>(f * f.transpose(), 1e-13);
    }
  }
  // Repeated and widely spread eigenvalues, and a diagonal matrix.
  Eigen::Matrix<double, D, D> repeated = Eigen::Matrix<double, D, D>::Constant(1.0);
  repeated.diagonal().array() += 2.0;
  expect_decomposes<D>(repeated, 1e-13);
  Eigen::Matrix<double, D, D> spread = Eigen::Matrix<double, D, D>::Identity();
  spread(0, 0) = 1e8;
  spread(0, D - 1) = spread(D - 1, 0) = 1.0;
  expect_decomposes<D>(spread, 1e-13);
  expect_decomposes<D>(Eigen::Matrix<double, D, 1>::LinSpaced(1.0, 2.0).asDiagonal(), 0.0);
  // The same matrices far from unit scale: the decomposition does not depend on it.
  std::uniform_real_distribution<double> angle(0.0, 6.0);
  for (const double scale : {1e160, 1e-170}) {
    for (int k = 0; k < 20; ++k) {
      Eigen::Matrix<double, D, D> f = Eigen::Matrix<double, D, D>::Identity();
      for (int r = 0; r < D; ++r) {
        for (int c = 0; c < D; ++c) {
          f(r, c) += 0.5 * entry(random);
        }
      }
      expect_decomposes<D>(scale * (f * f.transpose()), 1e-13);
    }
  }
  // F a rotation: F F^T is I to rounding, with off-diagonal noise of about 1e-16.
  for (int k = 0; k < 20; ++k) {
    Eigen::Matrix<double, D, D> rotation = Eigen::Matrix<double, D, D>::Identity();
    const double a = angle(random);
    rotation(0, 0) = rotation(1, 1) = std::cos(a);
    rotation(0, 1) = -std::sin(a);
    rotation(1, 0) = std::sin(a);
    expect_decomposes<D>(rotation * rotation.transpose(), 1e-13);
  }
  // A NaN off the diagonal reaches every value.
  Eigen::Matrix<double, D, D> broken = Eigen::Matrix<double, D, D>::Identity();
  broken(0, 1) = broken(1, 0) = std::numeric_limits<double>::quiet_NaN();
  Eigen::Matrix<double, D, 1> values;
  Eigen::Matrix<double, D, D> q;
  detail::symmetric_eigen<D>(broken, values, q);
  EXPECT_TRUE(values.array().isNaN().all()) << values.transpose();
}

TEST(MpmMaterial, SymmetricEigenMatchesEigensSolverIn2D) {
  check_symmetric_eigen<2>();
}

TEST(MpmMaterial, SymmetricEigenMatchesEigensSolverIn3D) {
  check_symmetric_eigen<3>();
}

TEST(MpmMaterial, SandProjectionLeavesTensionAtTheApex) {
  Material sand;  // the default material
  const MaterialView view(sand);
  // Pure stretch: tension, which sand does not carry, so F returns to a rotation (here I).
  const Eigen::Matrix2d stretched = 1.05 * Eigen::Matrix2d::Identity();
  const Eigen::Matrix2d projected = project_deformation<2>(view, stretched);
  EXPECT_NEAR((projected - Eigen::Matrix2d::Identity()).norm(), 0.0, 1e-12);
  // Elastic material keeps F as it is.
  Material rubber;
  rubber.kind = MaterialKind::elastic;
  EXPECT_EQ(project_deformation<2>(MaterialView(rubber), stretched), stretched);
}

}  // namespace
}  // namespace afem::apps::mpm
