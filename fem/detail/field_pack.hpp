#pragma once

/// @file
/// FieldPack: the extra field arguments of an integrand, carried into kernels by value and
/// appended to the integrand's leading arguments.

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "arenafem/memory/config.hpp"
#include "arenafem/memory/error.hpp"

namespace afem::fem::detail {

template <class... Fields>
struct FieldPack;

template <>
struct FieldPack<> {
  template <class F, class... Args>
  AFEM_HOST_DEVICE AFEM_INLINE decltype(auto) call(const F& f, const Args&... args) const {
    return f(args...);
  }
};

template <class Head, class... Tail>
struct FieldPack<Head, Tail...> {
  Head head;
  FieldPack<Tail...> tail;

  template <class F, class... Args>
  AFEM_HOST_DEVICE AFEM_INLINE decltype(auto) call(const F& f, const Args&... args) const {
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

/// Throws afem::Error when field argument `index` of `what` is a DiscreteField on another
/// geometry than `geometry` (the quadrature's): its dofs would be read at another mesh's cells.
template <class G, class T>
void check_field_on(const G& geometry, const char* what, std::size_t index, const T& field) {
  if constexpr (requires { field.space().geometry(); }) {
    AFEM_EXPECTS(
        static_cast<const void*>(&field.space().geometry()) == static_cast<const void*>(&geometry),
        std::string(what) + ": field argument " + std::to_string(index) +
            " lives on another geometry than the quadrature's domain; its values would "
            "be read at another mesh's cells");
  }
}

/// check_field_on for every field argument.
template <class Q, class... Fields>
void check_fields_on([[maybe_unused]] const Q& quadrature, [[maybe_unused]] const char* what,
                     const Fields&... fields) {
  [[maybe_unused]] std::size_t index = 0;
  (check_field_on(quadrature.domain().geometry(), what, index++, fields), ...);
}

inline FieldPack<> make_field_pack() {
  return {};
}
template <class Head, class... Tail>
FieldPack<FieldArgument<Head>, FieldArgument<Tail>...> make_field_pack(const Head& head,
                                                                       const Tail&... tail) {
  return {as_field(head), make_field_pack(tail...)};
}

}  // namespace afem::fem::detail
