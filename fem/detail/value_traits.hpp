#pragma once

/// @file
/// Scalars and fixed-size Eigen vectors/matrices as flat arrays of doubles, for kernels that
/// store or sum integrand results.

#include <Eigen/Core>

#include <type_traits>

#include "arenafem/memory/config.hpp"

namespace afem::fem::detail {

template <class T, class = void>
struct ValueTraits;

template <class T>
struct ValueTraits<T, std::enable_if_t<std::is_arithmetic_v<T>>> {
  static constexpr int size = 1;
  AFEM_HOST_DEVICE static void store(const T& value, double* out) {
    out[0] = static_cast<double>(value);
  }
  AFEM_HOST_DEVICE static T load(const double* in) { return static_cast<T>(in[0]); }
};

template <class T>
struct ValueTraits<T, std::enable_if_t<std::is_base_of_v<Eigen::MatrixBase<T>, T>>> {
  static_assert(T::SizeAtCompileTime > 0, "integrands return fixed-size vectors or matrices");
  static constexpr int size = T::SizeAtCompileTime;
  AFEM_HOST_DEVICE static void store(const T& value, double* out) {
    for (int i = 0; i < size; ++i) {
      out[i] = value(i / T::ColsAtCompileTime, i % T::ColsAtCompileTime);
    }
  }
  AFEM_HOST_DEVICE static T load(const double* in) {
    T value;
    for (int i = 0; i < size; ++i) {
      value(i / T::ColsAtCompileTime, i % T::ColsAtCompileTime) = in[i];
    }
    return value;
  }
};

/// True for what an integrand may return: an arithmetic type or a fixed-size Eigen matrix.
template <class T>
concept IntegrandValue = std::is_arithmetic_v<T> ||
    (std::is_base_of_v<Eigen::MatrixBase<T>, T>&& T::SizeAtCompileTime > 0);

}  // namespace afem::fem::detail
