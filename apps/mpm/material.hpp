#pragma once

/// @file
/// The materials of the MPM apps and their constitutive updates, as host/device functions of the
/// deformation gradient F: neo-Hookean elasticity, sand (Drucker-Prager plasticity on the Hencky
/// strain, projected at the end of each step), a weakly compressible fluid (Tait equation of
/// state on J = det F) and an incompressible fluid (no stress: a pressure projection on the grid
/// keeps its velocity divergence-free). Stresses are Kirchhoff stresses tau = J sigma, so that the
/// force on node i is -sum_p V0_p tau_p grad N_i(x_p) with the particles' initial volumes.

#include <Eigen/Core>
#include <cmath>
#include <numbers>
#include <string>

#include "memory/config.hpp"

namespace afem::apps::mpm {

/// Which constitutive model the particles follow.
enum class MaterialKind { elastic, sand, fluid, incompressible_fluid };

/// The material's name as the command line spells it.
std::string to_string(MaterialKind kind);

/// Material constants (SI units). Lame parameters come from Young's modulus and Poisson's ratio;
/// the fluid uses bulk_modulus and tait_exponent only.
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
  /// The speed of the fastest elastic wave (P wave, or sound in the fluid), for the time step;
  /// for the incompressible fluid, a bound on its flow speed in the unit box (4 m/s).
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
  double mu = 0.0;
  double lambda = 0.0;
  double alpha = 0.0;  ///< sand: sqrt(2/3) 2 sin(phi) / (3 - sin(phi))
  double bulk_modulus = 0.0;
  double tait_exponent = 7.0;

  explicit MaterialView(const Material& m)
      : kind(m.kind),
        mu(m.shear_modulus()),
        lambda(m.lame_lambda()),
        bulk_modulus(m.bulk_modulus),
        tait_exponent(m.tait_exponent) {
    const double s = std::sin(m.friction_angle_degrees * std::numbers::pi / 180.0);
    alpha = std::sqrt(2.0 / 3.0) * 2.0 * s / (3.0 - s);
  }
};

namespace detail {

/// Eigen-decomposition a = q diag(values) q^T of a symmetric D x D matrix by cyclic Jacobi
/// rotations (a fixed number of sweeps, so the work per particle does not vary).
template <int D>
AFEM_HOST_DEVICE void symmetric_eigen(Eigen::Matrix<double, D, D> a,
                                      Eigen::Matrix<double, D, 1>& values,
                                      Eigen::Matrix<double, D, D>& q) {
  q.setIdentity();
  for (int sweep = 0; sweep < 8; ++sweep) {
    for (int p = 0; p < D - 1; ++p) {
      for (int r = p + 1; r < D; ++r) {
        const double apr = a(p, r);
        if (std::abs(apr) < 1e-300) {
          continue;
        }
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

/// x^e: by repeated squaring when e is a whole number of magnitude at most 64 (Tait's usual 7;
/// several times faster than std::pow), std::pow otherwise.
AFEM_HOST_DEVICE inline double power(double x, double e) {
  const double magnitude = e < 0.0 ? -e : e;
  if (magnitude > 64.0 || magnitude != static_cast<double>(static_cast<int>(magnitude))) {
    return std::pow(x, e);
  }
  double result = 1.0;
  double square = x;
  for (int k = static_cast<int>(magnitude); k > 0; k >>= 1) {
    if ((k & 1) != 0) {
      result *= square;
    }
    square *= square;
  }
  return e < 0.0 ? 1.0 / result : result;
}

}  // namespace detail

/// The Kirchhoff stress of a particle with deformation gradient `f`.
template <int D>
AFEM_HOST_DEVICE Eigen::Matrix<double, D, D> kirchhoff_stress(
    const MaterialView& m, const Eigen::Matrix<double, D, D>& f) {
  using Matrix = Eigen::Matrix<double, D, D>;
  const Matrix identity = Matrix::Identity();
  const double j = f.determinant();
  switch (m.kind) {
    case MaterialKind::incompressible_fluid:
      return Matrix::Zero();
    case MaterialKind::elastic:
      return m.mu * (f * f.transpose() - identity) + m.lambda * std::log(j) * identity;
    case MaterialKind::fluid: {
      // Tait: p = K / gamma (J^-gamma - 1), K the bulk modulus at rest.
      const double pressure =
          m.bulk_modulus / m.tait_exponent * (detail::power(j, -m.tait_exponent) - 1.0);
      return -j * pressure * identity;
    }
    case MaterialKind::sand:
    default: {
      // St. Venant-Kirchhoff on the Hencky strain: tau = U (2 mu eps + lambda tr(eps)) U^T.
      Eigen::Matrix<double, D, 1> eps;
      Matrix u;
      detail::hencky_strain<D>(f, eps, u);
      const double trace = eps.sum();
      Eigen::Matrix<double, D, 1> principal;
      for (int d = 0; d < D; ++d) {
        principal[d] = 2.0 * m.mu * eps[d] + m.lambda * trace;
      }
      return u * principal.asDiagonal() * u.transpose();
    }
  }
}

/// The end-of-step projection of F: sand returns its Hencky strain to the Drucker-Prager cone
/// (to the apex under tension), the fluid keeps only its volume change (F = J^(1/D) I), elastic
/// material keeps F.
template <int D>
AFEM_HOST_DEVICE Eigen::Matrix<double, D, D> project_deformation(
    const MaterialView& m, const Eigen::Matrix<double, D, D>& f) {
  using Matrix = Eigen::Matrix<double, D, D>;
  if (m.kind == MaterialKind::elastic) {
    return f;
  }
  if (m.kind == MaterialKind::incompressible_fluid) {
    return Matrix::Identity();
  }
  if (m.kind == MaterialKind::fluid) {
    const double j = f.determinant();
    return (D == 2 ? std::sqrt(j) : std::cbrt(j)) * Matrix::Identity();
  }
  Eigen::Matrix<double, D, 1> eps;
  Matrix u;
  detail::hencky_strain<D>(f, eps, u);
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

}  // namespace afem::apps::mpm
