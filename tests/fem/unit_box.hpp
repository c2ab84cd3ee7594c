#pragma once

/// @file
/// Geometries of the unit square or cube with n cells per axis, for typed fem tests.

#include <array>
#include <cstdint>
#include <memory>

#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh.hpp"

namespace afem::test {

template <class G>
struct UnitBox;

template <int D>
struct UnitBox<geometry::Grid<D>> {
  static std::unique_ptr<geometry::Grid<D>> make(std::int32_t n, memory::Pool& /*pool*/,
                                                 memory::Arena& /*scratch*/) {
    std::array<double, D> origin{};
    std::array<double, D> size{};
    std::array<std::int32_t, D> resolution{};
    origin.fill(0.0);
    size.fill(1.0 / n);
    resolution.fill(n);
    return std::make_unique<geometry::Grid<D>>(origin, size, resolution);
  }
};

template <geometry::CellType Type>
struct UnitBox<geometry::Mesh<Type>> {
  static std::unique_ptr<geometry::Mesh<Type>> make(std::int32_t n, memory::Pool& pool,
                                                    memory::Arena& scratch) {
    return std::make_unique<geometry::Mesh<Type>>(
        geometry::box_mesh(Type, {n, n, n}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}), pool, scratch);
  }
};

}  // namespace afem::test
