#pragma once

/// @file
/// Integrands with a per-sample part. An integrand of a linear or bilinear form may define
/// `prepare(sample, fields...)`: integrate() calls it once per sample and hands its result, in
/// place of the sample and the fields, to the calls for each test (and trial) function:
/// f(prepared, test) and f(prepared, test, trial). What does not depend on the function (a
/// particle's stress, a coefficient read from a field) is then computed once per sample instead
/// of once per function and component.

#include <type_traits>
#include <utility>

#include "fem/sample.hpp"
#include "memory/config.hpp"

namespace afem::fem::detail {

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

/// Calls f.prepare(args...) (a FieldPack appends the fields).
template <class Integrand>
struct PrepareCall {
  const Integrand& f;
  template <class... Args>
  AFEM_HOST_DEVICE auto operator()(const Args&... args) const {
    return f.prepare(args...);
  }
};

/// What the per-function calls of `f` take at sample `s`: prepare's result, or the sample itself.
template <bool Prepared, class Integrand, class Pack, int D>
AFEM_HOST_DEVICE decltype(auto) sample_part(const Integrand& f, const Sample<D>& s,
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
AFEM_HOST_DEVICE double call_at(const Integrand& f, const At& at, const Pack& pack,
                                const Functions&... functions) {
  if constexpr (Prepared) {
    return static_cast<double>(f(at, functions...));
  } else {
    return static_cast<double>(pack.call(f, at, functions...));
  }
}

}  // namespace afem::fem::detail
