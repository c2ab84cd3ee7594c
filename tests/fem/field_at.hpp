#pragma once

/// @file
/// Integrands that read a field at a sample, for tests that interpolate a DiscreteField at
/// particles or quadrature points: its value and its gradient.

#include "arenafem/memory/config.hpp"

namespace afem::test {

struct ValueAt {
  template <class S, class Field>
  AFEM_HOST_DEVICE auto operator()(const S& s, const Field& u) const {
    return u.value(s);
  }
};

struct GradientAt {
  template <class S, class Field>
  AFEM_HOST_DEVICE auto operator()(const S& s, const Field& u) const {
    return u.grad(s);
  }
};

}  // namespace afem::test
