#pragma once

/// @file
/// The materials of the MPM apps and their constitutive updates, as host/device functions of the
/// deformation gradient F: neo-Hookean elasticity, sand (Drucker-Prager plasticity on the Hencky
/// strain, projected at the end of each step), a weakly compressible fluid (Tait equation of
/// state on J = det F) and an incompressible fluid (no stress: a pressure projection on the grid
/// keeps its velocity divergence-free). Stresses are Kirchhoff stresses tau = J sigma, so that the
/// force on node i is -sum_p V0_p tau_p grad N_i(x_p) with the particles' initial volumes.

#include <Eigen/Core>
#include <Eigen/LU>  // determinant()
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <string>

#include "arenafem/memory/config.hpp"

namespace afem::apps::mpm {

/// Which constitutive model the particles follow.
enum class MaterialKind { elastic, sand, fluid, incompressible_fluid };

/// The material's name as the command line spells it.
std::string to_string(MaterialKind kind);

/// How many times its speed at rest the fluid's sound can reach (see Material).
inline constexpr double tait_sound_speed_limit = 1.5;

/// Material constants (SI units). Lame parameters come from Young's modulus and Poisson's ratio;
/// the fluid uses bulk_modulus and tait_exponent only.
///
/// The fluid's Tait pressure p = K / gamma (J^-gamma - 1) stiffens under compression: its sound
/// speed c0 J^(-(gamma - 1) / 2) (c0 = sqrt(K / density)) grows without bound as J falls, while
/// a run's time step is fixed. So the pressure follows the Tait law down to the J where the sound
/// speed is tait_sound_speed_limit c0 (J = 0.87 for gamma = 7, a 13 % compression, beyond the
/// weakly compressible range the law is meant for) and continues below it along its tangent
/// there: the sound speed never exceeds that limit, and the default CFL number keeps the
/// fastest sound under 0.6 cells per step.
struct Material {
  MaterialKind kind = MaterialKind::sand;
  double density = 2200.0;
  double youngs_modulus = 3.537e5;
  double poisson_ratio = 0.3;
  double friction_angle_degrees = 40.0;  ///< sand: the Drucker-Prager friction angle
  double bulk_modulus = 5.0e4;           ///< fluid
  double tait_exponent = 7.0;            ///< fluid

  [[nodiscard]] double shear_modulus() const {
    return youngs_modulus / (2.0 * (1.0 + poisson_ratio));
  }
  [[nodiscard]] double lame_lambda() const {
    return youngs_modulus * poisson_ratio / ((1.0 + poisson_ratio) * (1.0 - 2.0 * poisson_ratio));
  }
  /// The speed of the fastest elastic wave (P wave, or sound in the fluid at rest), for the time
  /// step; for the incompressible fluid, a bound on its flow speed in the unit box (4 m/s).
  [[nodiscard]] double wave_speed() const {
    if (kind == MaterialKind::incompressible_fluid) {
      return 4.0;
    }
    if (kind == MaterialKind::fluid) {
      return std::sqrt(bulk_modulus / density);
    }
    return std::sqrt((lame_lambda() + 2.0 * shear_modulus()) / density);
  }
};

/// The constants kernels use, derived once from a Material.
struct MaterialView {
  MaterialKind kind = MaterialKind::sand;
  double density = 0.0;
  double mu = 0.0;
  double lambda = 0.0;
  double alpha = 0.0;  ///< sand: sqrt(2/3) 2 sin(phi) / (3 - sin(phi))
  double tait_exponent = 7.0;
  /// Fluid: K / gamma, the pressure's scale.
  double pressure_scale = 0.0;
  /// Fluid: gamma when it is a whole number from 0 to 64 (J^gamma by repeated squaring), -1
  /// otherwise (std::pow).
  int tait_power = -1;
  /// Fluid: the J below which the pressure continues along its tangent (0: never, gamma <= 1),
  /// the pressure there, and minus its slope dp/dJ = K J^(-gamma - 1) there.
  double tait_linear_below = 0.0;
  double tait_limit_pressure = 0.0;
  double tait_limit_stiffness = 0.0;

  explicit MaterialView(const Material& m)
      : kind(m.kind),
        density(m.density),
        mu(m.shear_modulus()),
        lambda(m.lame_lambda()),
        tait_exponent(m.tait_exponent),
        pressure_scale(m.bulk_modulus / m.tait_exponent) {
    const double s = std::sin(m.friction_angle_degrees * std::numbers::pi / 180.0);
    alpha = std::sqrt(2.0 / 3.0) * 2.0 * s / (3.0 - s);
    if (m.tait_exponent >= 0.0 && m.tait_exponent <= 64.0 &&
        m.tait_exponent == std::floor(m.tait_exponent)) {
      tait_power = static_cast<int>(m.tait_exponent);
    }
    if (m.tait_exponent > 1.0) {  // c = c0 J^(-(gamma - 1) / 2) reaches the limit there
      const double jc = std::pow(tait_sound_speed_limit, -2.0 / (m.tait_exponent - 1.0));
      tait_linear_below = jc;
      tait_limit_pressure = pressure_scale * (std::pow(jc, -m.tait_exponent) - 1.0);
      tait_limit_stiffness = m.bulk_modulus * std::pow(jc, -m.tait_exponent - 1.0);
    }
  }
};

namespace detail {

/// Eigen-decomposition a = q diag(values) q^T of a symmetric D x D matrix by cyclic Jacobi
/// rotations. A rotation is skipped when its off-diagonal entry is at rounding level against its
/// diagonal entries (so nearly diagonal matrices, a particle at rest or in free fall, never rotate
/// by denormal angles), and the sweeps stop after one that skipped every rotation: in 2D one
/// rotation diagonalises exactly; in 3D a nearly diagonal matrix takes one sweep, at most 8.
/// Independent of the matrix's scale; a NaN anywhere reaches every output.
template <int D>
AFEM_HOST_DEVICE void symmetric_eigen(Eigen::Matrix<double, D, D> a,
                                      Eigen::Matrix<double, D, 1>& values,
                                      Eigen::Matrix<double, D, D>& q) {
  constexpr double rounding = 2.3e-16;  // about the unit roundoff of double
  constexpr int max_sweeps = D == 2 ? 1 : 8;
  q.setIdentity();
  for (int sweep = 0; sweep < max_sweeps; ++sweep) {
    bool rotated = false;
    for (int p = 0; p < D - 1; ++p) {
      for (int r = p + 1; r < D; ++r) {
        const double apr = a(p, r);
        if (std::abs(apr) <= rounding * (std::abs(a(p, p)) + std::abs(a(r, r)))) {
          continue;
        }
        rotated = true;
        const double theta = (a(r, r) - a(p, p)) / (2.0 * apr);
        const double t =
            (theta >= 0.0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0);
        const double s = t * c;
        for (int k = 0; k < D; ++k) {  // a <- a J, then J^T a
          const double akp = a(k, p);
          const double akr = a(k, r);
          a(k, p) = c * akp - s * akr;
          a(k, r) = s * akp + c * akr;
        }
        for (int k = 0; k < D; ++k) {
          const double apk = a(p, k);
          const double ark = a(r, k);
          a(p, k) = c * apk - s * ark;
          a(r, k) = s * apk + c * ark;
        }
        for (int k = 0; k < D; ++k) {
          const double qkp = q(k, p);
          const double qkr = q(k, r);
          q(k, p) = c * qkp - s * qkr;
          q(k, r) = s * qkp + c * qkr;
        }
      }
    }
    if (!rotated) {
      break;
    }
  }
  for (int d = 0; d < D; ++d) {
    values[d] = a(d, d);
  }
}

/// The Hencky (logarithmic) strain of F in the principal frame of b = F F^T: b = u diag(e^(2 eps))
/// u^T.
template <int D>
AFEM_HOST_DEVICE void hencky_strain(const Eigen::Matrix<double, D, D>& f,
                                    Eigen::Matrix<double, D, 1>& eps,
                                    Eigen::Matrix<double, D, D>& u) {
  Eigen::Matrix<double, D, 1> stretch2;
  symmetric_eigen<D>(f * f.transpose(), stretch2, u);
  for (int d = 0; d < D; ++d) {
    eps[d] = 0.5 * std::log(stretch2[d]);
  }
}

/// x^n for a whole n >= 0, by repeated squaring (several times faster than std::pow).
AFEM_HOST_DEVICE inline double integer_power(double x, int n) {
  double result = 1.0;
  double square = x;
  for (int k = n; k > 0; k >>= 1) {
    if ((k & 1) != 0) {
      result *= square;
    }
    square *= square;
  }
  return result;
}

/// The fluid's pressure at volume ratio j: the Tait law, continued along its tangent below
/// m.tait_linear_below (see Material).
AFEM_HOST_DEVICE inline double tait_pressure(const MaterialView& m, double j) {
  if (j < m.tait_linear_below) {
    return m.tait_limit_pressure + m.tait_limit_stiffness * (m.tait_linear_below - j);
  }
  const double inverse_power =
      m.tait_power >= 0 ? 1.0 / integer_power(j, m.tait_power) : std::pow(j, -m.tait_exponent);
  return m.pressure_scale * (inverse_power - 1.0);
}

/// Sand's Kirchhoff stress: St. Venant-Kirchhoff on the Hencky strain,
/// tau = U (2 mu eps + lambda tr(eps)) U^T (kept out of line: the other materials' stresses are
/// a few products that the transfer kernels inline).
template <int D>
AFEM_HOST_DEVICE AFEM_NOINLINE Eigen::Matrix<double, D, D> hencky_stress(
    const MaterialView& m, const Eigen::Matrix<double, D, D>& f) {
  Eigen::Matrix<double, D, 1> eps;
  Eigen::Matrix<double, D, D> u;
  hencky_strain<D>(f, eps, u);
  const double trace = eps.sum();
  Eigen::Matrix<double, D, 1> principal;
  for (int d = 0; d < D; ++d) {
    principal[d] = 2.0 * m.mu * eps[d] + m.lambda * trace;
  }
  return u * principal.asDiagonal() * u.transpose();
}

}  // namespace detail

/// Whether kirchhoff_stress of this material is always a multiple of the identity (the fluids'
/// pressures), so that a product by it is a product by its first diagonal entry.
AFEM_HOST_DEVICE constexpr bool isotropic_stress(MaterialKind kind) {
  return kind == MaterialKind::fluid || kind == MaterialKind::incompressible_fluid;
}

/// The Kirchhoff stress of a particle with deformation gradient `f` (inline: a stress returned
/// through memory and read back as vectors stalls the momentum form).
template <int D>
AFEM_HOST_DEVICE AFEM_INLINE Eigen::Matrix<double, D, D> kirchhoff_stress(
    const MaterialView& m, const Eigen::Matrix<double, D, D>& f) {
  using Matrix = Eigen::Matrix<double, D, D>;
  switch (m.kind) {
    case MaterialKind::incompressible_fluid:
      return Matrix::Zero();
    case MaterialKind::elastic:
      return m.mu * (f * f.transpose() - Matrix::Identity()) +
             m.lambda * std::log(f.determinant()) * Matrix::Identity();
    case MaterialKind::fluid: {
      const double j = f.determinant();
      return -j * detail::tait_pressure(m, j) * Matrix::Identity();
    }
    case MaterialKind::sand:
    default:
      return detail::hencky_stress<D>(m, f);
  }
}

namespace detail {

/// The real cube root of x: r = x^(-1/3) from the bits of x (within 3.5 %), refined by three
/// Newton steps that only multiply (r <- r (4 - x r^3) / 3, within 1e-9), then x r^2 polished by
/// one Newton step of the cube root itself, the only division (within 3 ulp of std::cbrt, several
/// times cheaper, and the same on every backend). Zero, negative, huge and non-finite x go to
/// std::cbrt.
AFEM_HOST_DEVICE inline double cube_root(double x) {
  if (!(x > 1e-300 && x < 1e300)) {
    return std::cbrt(x);
  }
  std::uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  bits = std::uint64_t{0x553ef0ff289dd796} - bits / 3;
  double r = 0.0;
  std::memcpy(&r, &bits, sizeof r);
  const double third_of_x = x * (1.0 / 3.0);
  for (int k = 0; k < 3; ++k) {
    r *= 4.0 / 3.0 - third_of_x * (r * r * r);
  }
  const double y = x * r * r;
  return y - (y - x / (y * y)) * (1.0 / 3.0);
}

/// Sand's end-of-step projection: its Hencky strain back to the Drucker-Prager cone (to the apex
/// under tension).
template <int D>
AFEM_HOST_DEVICE AFEM_NOINLINE Eigen::Matrix<double, D, D> project_sand(
    const MaterialView& m, const Eigen::Matrix<double, D, D>& f) {
  using Matrix = Eigen::Matrix<double, D, D>;
  Eigen::Matrix<double, D, 1> eps;
  Matrix u;
  hencky_strain<D>(f, eps, u);
  const double trace = eps.sum();
  Eigen::Matrix<double, D, 1> projected = eps;
  if (trace >= 0.0) {
    projected.setZero();  // tension: sand carries none
  } else {
    const Eigen::Matrix<double, D, 1> deviator =
        eps - (trace / D) * Eigen::Matrix<double, D, 1>::Ones();
    const double norm = deviator.norm();
    const double yield = norm + (D * m.lambda + 2.0 * m.mu) / (2.0 * m.mu) * trace * m.alpha;
    if (yield > 0.0 && norm > 0.0) {
      projected = eps - (yield / norm) * deviator;
    }
  }
  // F = U S V^T with S the stretches: the projected F is U exp(projected) S^-1 U^T F.
  Eigen::Matrix<double, D, 1> scale;
  for (int d = 0; d < D; ++d) {
    scale[d] = std::exp(projected[d] - eps[d]);
  }
  return u * scale.asDiagonal() * u.transpose() * f;
}

}  // namespace detail

/// The end-of-step projection of F: sand returns its Hencky strain to the Drucker-Prager cone
/// (to the apex under tension), the fluid keeps only its volume change (F = J^(1/D) I), elastic
/// material keeps F.
template <int D>
AFEM_HOST_DEVICE Eigen::Matrix<double, D, D> project_deformation(
    const MaterialView& m, const Eigen::Matrix<double, D, D>& f) {
  using Matrix = Eigen::Matrix<double, D, D>;
  switch (m.kind) {
    case MaterialKind::elastic:
      return f;
    case MaterialKind::incompressible_fluid:
      return Matrix::Identity();
    case MaterialKind::fluid: {
      const double j = f.determinant();
      return (D == 2 ? std::sqrt(j) : detail::cube_root(j)) * Matrix::Identity();
    }
    case MaterialKind::sand:
    default:
      return detail::project_sand<D>(m, f);
  }
}

}  // namespace afem::apps::mpm
