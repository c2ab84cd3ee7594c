#pragma once

/// @file
/// Sample<D>: one quadrature point as an integrand sees it, and ShapeFunction<D, C>: one basis
/// function (a node's scalar basis times a unit vector for vector spaces) as a test or trial
/// function, with its value, gradient and divergence at the sample.

#include <Eigen/Core>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "arenafem/memory/config.hpp"

namespace afem::fem {

/// A quadrature point: which element, cell and side (-1 for cell samples) it is in, its reference
/// coordinates in the cell, its position, the side's outward normal (zero for cell samples), the
/// inverse Jacobian of the cell map there, and its weight (quadrature weight times measure).
template <int D>
struct Sample {
  using Point = Eigen::Matrix<double, D, 1>;
  using Matrix = Eigen::Matrix<double, D, D>;
  std::int32_t element = 0;
  std::int32_t cell = 0;
  std::int32_t side = -1;
  std::int32_t point = 0;
  /// Where interpolate() writes this sample: element * points + point for regular rules, the
  /// particle for a PicQuadrature (per-particle data is read at this index).
  std::size_t index = 0;
  Point coords;
  Point x;
  Point normal;
  Matrix inverse_jacobian;
  double weight = 0.0;
};

/// Value type of a C-component field in D dimensions: a scalar or a C-vector.
template <int D, int C>
using FieldValue = std::conditional_t<C == 1, double, Eigen::Matrix<double, C, 1>>;
/// Gradient type: a D-vector for scalars, a C x D matrix (row c: gradient of component c).
template <int D, int C>
using FieldGradient =
    std::conditional_t<C == 1, Eigen::Matrix<double, D, 1>, Eigen::Matrix<double, C, D>>;

/// A test or trial function: the scalar basis function of one node (value and physical
/// gradient at the sample) in one component.
template <int D, int C>
struct ShapeFunction {
  double basis_value = 0.0;
  Eigen::Matrix<double, D, 1> basis_gradient;
  int component = 0;
  /// The function's node in the restriction's numbering (linear forms; -1 in bilinear forms).
  std::int32_t node = -1;
  /// Where the node sits: the cell map's image of the node's reference coordinates (for
  /// B-splines, the centre of the function's support). Read by integrands such as APIC's
  /// momentum, which weighs x_node - x_sample.
  Eigen::Matrix<double, D, 1> node_position = Eigen::Matrix<double, D, 1>::Zero();

  AFEM_HOST_DEVICE FieldValue<D, C> value() const {
    if constexpr (C == 1) {
      return basis_value;
    } else {
      FieldValue<D, C> v = FieldValue<D, C>::Zero();
      v[component] = basis_value;
      return v;
    }
  }
  AFEM_HOST_DEVICE FieldGradient<D, C> grad() const {
    if constexpr (C == 1) {
      return basis_gradient;
    } else {
      FieldGradient<D, C> g = FieldGradient<D, C>::Zero();
      g.row(component) = basis_gradient.transpose();
      return g;
    }
  }
  /// Divergence; only for vector functions with as many components as dimensions.
  AFEM_HOST_DEVICE double div() const {
    static_assert(C == D, "div() needs a vector function with one component per dimension");
    return basis_gradient[component];
  }
};

/// One node's scalar basis function at a sample, for linear integrands that take a whole node at a
/// time (`static constexpr bool tests_by_node = true`, see integrate.hpp): its value, physical
/// gradient, node (in the restriction's numbering) and the node's position. Such an integrand
/// returns the form's values at the node's C test functions N_i e_c at once, a FieldValue<D, C>.
template <int D>
struct NodeBasis {
  double basis_value = 0.0;
  Eigen::Matrix<double, D, 1> basis_gradient;
  std::int32_t node = -1;
  Eigen::Matrix<double, D, 1> node_position = Eigen::Matrix<double, D, 1>::Zero();
};

/// Contractions integrands use on scalars, vectors and matrices.
AFEM_HOST_DEVICE inline double dot(double a, double b) {
  return a * b;
}
template <class A, class B>
AFEM_HOST_DEVICE double dot(const Eigen::MatrixBase<A>& a, const Eigen::MatrixBase<B>& b) {
  return a.cwiseProduct(b).sum();
}
/// Double contraction A : B (the sum of entrywise products).
template <class A, class B>
AFEM_HOST_DEVICE double ddot(const Eigen::MatrixBase<A>& a, const Eigen::MatrixBase<B>& b) {
  return a.cwiseProduct(b).sum();
}

}  // namespace afem::fem
