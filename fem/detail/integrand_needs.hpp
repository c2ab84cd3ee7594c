#pragma once

/// @file
/// What an integrand of a linear or bilinear form may declare beyond its call, so that integrate()
/// evaluates only what it needs:
/// - `static constexpr bool reads_gradients = false`: it never reads a test or trial function's
///   gradient (grad(), div(), basis_gradient), so only the basis values are evaluated and the
///   functions' gradients are zero;
/// - `static constexpr bool symmetric = true` (bilinear forms): f(sample, v, u) equals
///   f(sample, u, v) for every pair of functions, as for a Laplacian, a mass or an elasticity form.
///   Where the test and trial spaces have the same element, integrate() then evaluates the pairs
///   (test i, trial j) with i <= j only and mirrors the element matrix; an integrand that declares
///   it but is not symmetric gets a wrong matrix;
/// - `static constexpr bool tests_by_node = true` (linear forms): f(sample, node, fields...) (or
///   f(prepared, node)) takes a NodeBasis<D>, one node's scalar basis function, and returns the
///   form's values at all C test functions of that node, N_i e_c for c = 0..C-1, as a
///   FieldValue<D, C> (a double for scalar spaces): one call per node instead of one per node and
///   component, and the integrand computes what the components share once (an affine momentum's
///   (x_i - x_p), a stress times the gradient);
/// - `prepare(sample, fields...)`: integrate() calls it once per sample and hands its result, in
///   place of the sample and the fields, to the calls for each test (and trial) function:
///   f(prepared, test) and f(prepared, test, trial). What does not depend on the function (a
///   particle's stress, a coefficient read from a field) is then computed once per sample instead
///   of once per function and component. It must return a value (a plain Eigen object, not an
///   Eigen expression, which would refer to prepare's own locals).

#include <Eigen/Core>

#include <type_traits>
#include <utility>

#include "arenafem/fem/sample.hpp"
#include "arenafem/memory/config.hpp"

namespace afem::fem::detail {

/// Whether integrate() evaluates the basis gradients for `Integrand`: unless it declares
/// `static constexpr bool reads_gradients = false`.
template <class Integrand>
constexpr bool reads_gradients() {
  if constexpr (requires { std::bool_constant<Integrand::reads_gradients>{}; }) {
    return Integrand::reads_gradients;
  } else {
    return true;
  }
}

/// Whether `Integrand` declares `static constexpr bool symmetric = true`.
template <class Integrand>
constexpr bool declares_symmetric() {
  if constexpr (requires { std::bool_constant<Integrand::symmetric>{}; }) {
    return Integrand::symmetric;
  } else {
    return false;
  }
}

/// Whether `Integrand` declares `static constexpr bool tests_by_node = true`.
template <class Integrand>
constexpr bool tests_by_node() {
  if constexpr (requires { std::bool_constant<Integrand::tests_by_node>{}; }) {
    return Integrand::tests_by_node;
  } else {
    return false;
  }
}

/// Whether `Integrand` has a per-sample part for samples in D dimensions and these field views.
template <class Integrand, int D, class... Fields>
concept PreparedIntegrand = requires(const Integrand& f, const Sample<D>& s,
                                     const Fields&... fields) {
  f.prepare(s, fields...);
};

/// What prepare() returns.
template <class Integrand, int D, class... Fields>
using PreparedType = std::decay_t<decltype(std::declval<const Integrand&>().prepare(
    std::declval<const Sample<D>&>(), std::declval<const Fields&>()...))>;

/// Whether a prepared value can be kept: not an Eigen expression (which refers to the locals of the
/// prepare() that built it) unless it is a plain matrix or array.
template <class T>
inline constexpr bool storable_prepared =
    !std::is_base_of_v<Eigen::EigenBase<T>, T> || std::is_base_of_v<Eigen::PlainObjectBase<T>, T>;

/// Calls f.prepare(args...) (a FieldPack appends the fields).
template <class Integrand>
struct PrepareCall {
  const Integrand& f;
  template <class... Args>
  AFEM_HOST_DEVICE AFEM_INLINE auto operator()(const Args&... args) const {
    return f.prepare(args...);
  }
};

/// What the per-function calls of `f` take at sample `s`: prepare's result, or the sample itself.
template <bool Prepared, class Integrand, class Pack, int D>
AFEM_HOST_DEVICE AFEM_INLINE decltype(auto) sample_part(const Integrand& f, const Sample<D>& s,
                                                        const Pack& pack) {
  if constexpr (Prepared) {
    return pack.call(PrepareCall<Integrand>{f}, s);
  } else {
    return (s);
  }
}

/// f at one test (and trial) function: f(prepared, functions...), or f(sample, functions...,
/// fields...) for integrands without a per-sample part.
template <bool Prepared, class Integrand, class Pack, class At, class... Functions>
AFEM_HOST_DEVICE AFEM_INLINE double call_at(const Integrand& f, const At& at, const Pack& pack,
                                            const Functions&... functions) {
  if constexpr (Prepared) {
    return static_cast<double>(f(at, functions...));
  } else {
    return static_cast<double>(pack.call(f, at, functions...));
  }
}

/// f at one node of a by-node linear integrand: its values at the node's test functions.
template <bool Prepared, class Integrand, class Pack, class At, int D>
AFEM_HOST_DEVICE AFEM_INLINE decltype(auto) call_node(const Integrand& f, const At& at,
                                                      const Pack& pack, const NodeBasis<D>& node) {
  if constexpr (Prepared) {
    return f(at, node);
  } else {
    return pack.call(f, at, node);
  }
}

}  // namespace afem::fem::detail
