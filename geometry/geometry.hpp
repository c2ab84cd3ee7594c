#pragma once

/// @file
/// The Geometry concept: the static interface of every geometry (Grid2D, Grid3D, Trimesh,
/// Quadmesh, Tetmesh, Hexmesh) that quadrature and fem code against.

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "arenafem/geometry/mesh_data.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"

namespace afem::geometry {

struct LookupResult;

/// What kernels use of a geometry: a trivially copyable view with counts, the reference map of
/// cells (position, Jacobian, measure) and of sides (inner and outer cell, coordinates in each,
/// outward normal, measure), the list of boundary sides and a tag per side (0 when untagged).
template <class V>
concept GeometryView = std::is_trivially_copyable_v<V> &&
    requires(const V view, std::int32_t index, const typename V::Coords& xi,
             const typename V::SideCoords& s) {
  { V::dimension } -> std::convertible_to<int>;
  { view.cell_count() } -> std::same_as<std::int32_t>;
  { view.side_count() } -> std::same_as<std::int32_t>;
  { view.boundary_side_count() } -> std::same_as<std::int32_t>;
  { view.boundary_side(index) } -> std::same_as<std::int32_t>;
  { view.side_tag(index) } -> std::same_as<std::int32_t>;
  { view.cell_position(index, xi) } -> std::same_as<typename V::Point>;
  { view.cell_jacobian(index, xi) } -> std::same_as<typename V::Jacobian>;
  { view.cell_measure(index) } -> std::same_as<double>;
  { view.cell_vertex(index, 0) } -> std::same_as<typename V::Point>;
  { view.side_inner_cell(index) } -> std::same_as<std::int32_t>;
  { view.side_outer_cell(index) } -> std::same_as<std::int32_t>;
  { view.side_inner_coords(index, s) } -> std::same_as<typename V::Coords>;
  { view.side_outer_coords(index, s) } -> std::same_as<typename V::Coords>;
  { view.side_position(index, s) } -> std::same_as<typename V::Point>;
  { view.side_normal(index) } -> std::same_as<typename V::Point>;
  { view.side_measure(index) } -> std::same_as<double>;
};

/// A geometry on the host: counts, its kernel view, point-to-cell lookup on the backend (-1 for a
/// point outside) and a host copy as MeshData for output.
template <class G>
concept Geometry = GeometryView<typename G::View> &&
    requires(const G geometry, memory::ArrayView<const double> points, const LookupResult& result,
             memory::Arena& scratch) {
  { G::dimension } -> std::convertible_to<int>;
  { geometry.cell_count() } -> std::same_as<std::int32_t>;
  { geometry.vertex_count() } -> std::same_as<std::int32_t>;
  { geometry.side_count() } -> std::same_as<std::int32_t>;
  { geometry.boundary_side_count() } -> std::same_as<std::int32_t>;
  { geometry.view() } -> std::convertible_to<typename G::View>;
  geometry.lookup(points, result, scratch);
  { geometry.to_mesh_data() } -> std::same_as<MeshData>;
};

}  // namespace afem::geometry
