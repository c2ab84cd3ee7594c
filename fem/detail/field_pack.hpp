#pragma once

/// @file
/// FieldPack: the extra field arguments of an integrand, carried into kernels by value and
/// appended to the integrand's leading arguments.

#include <type_traits>
#include <utility>

#include "memory/config.hpp"

namespace afem::fem::detail {

template <class... Fields>
struct FieldPack;

template <>
struct FieldPack<> {
  template <class F, class... Args>
  AFEM_HOST_DEVICE decltype(auto) call(const F& f, const Args&... args) const {
    return f(args...);
  }
};

template <class Head, class... Tail>
struct FieldPack<Head, Tail...> {
  Head head;
  FieldPack<Tail...> tail;

  template <class F, class... Args>
  AFEM_HOST_DEVICE decltype(auto) call(const F& f, const Args&... args) const {
    return tail.call(f, args..., head);
  }
};

/// What a field argument becomes in a kernel: its view() when it is an owner (a DiscreteField),
/// itself otherwise (a view, an AnalyticField, a plain value).
template <class T>
auto as_field(const T& field) {
  if constexpr (requires { field.view(); }) {
    return field.view();
  } else {
    return field;
  }
}

template <class T>
using FieldArgument = decltype(as_field(std::declval<const T&>()));

inline FieldPack<> make_field_pack() {
  return {};
}
template <class Head, class... Tail>
FieldPack<FieldArgument<Head>, FieldArgument<Tail>...> make_field_pack(const Head& head,
                                                                       const Tail&... tail) {
  return {as_field(head), make_field_pack(tail...)};
}

}  // namespace afem::fem::detail
