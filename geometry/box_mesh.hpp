#pragma once

/// @file
/// box_mesh: structured triangle, quadrilateral, tetrahedron and hexahedron meshes of a box.

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arenafem/geometry/mesh_data.hpp"
#include "arenafem/memory/config.hpp"

namespace afem::geometry {

/// The tag of the boundary sides on the low (`high` false) or high face of a box across `axis`,
/// as box_mesh and Grid give them: 1 and 2 for x, 3 and 4 for y, 5 and 6 for z.
[[nodiscard]] AFEM_HOST_DEVICE constexpr std::int32_t box_side_tag(int axis, bool high) {
  return 2 * axis + (high ? 2 : 1);
}

/// The names of the box_side_tag values of a `dimension`-dimensional box: (1, "xmin"),
/// (2, "xmax"), (3, "ymin"), (4, "ymax") and in 3D (5, "zmin"), (6, "zmax"); throws afem::Error
/// for a dimension outside 1 to 3.
[[nodiscard]] std::vector<std::pair<std::int32_t, std::string>> box_side_tag_names(int dimension);

/// A structured mesh of the box [lower, upper] with `resolution` grid cells per axis.
///
/// Vertices lie on the (nx+1) x (ny+1) (x (nz+1)) grid and are numbered x fastest, then y, then
/// z: vertex (i, j, k) has index i + (nx+1) * (j + (ny+1) * k); the grid's first and last
/// coordinates along each axis are exactly `lower` and `upper`. Cells follow grid-cell order
/// (x fastest), each grid cell giving
/// - quadrilateral: 1 cell (v00, v10, v11, v01);
/// - triangle: 2 cells split along the diagonal v00-v11: (v00, v10, v11), (v00, v11, v01);
/// - hexahedron: 1 cell, bottom face (v000, v100, v110, v010), then the top face above it;
/// - tetrahedron: 6 cells sharing the diagonal v000-v111 (Kuhn/Freudenthal split, conforming
///   between neighbouring grid cells): (v000, a, b, v111) for the consecutive pairs (a, b) of
///   v100, v110, v010, v011, v001, v101 (cyclically).
/// Every cell is positively oriented (see CellType). Cell tags are left empty (all 0). Every
/// boundary side is a tagged side with the tag of its face of the box (box_side_tag), listed axis
/// by axis, the low face before the high one, each face's sides in grid order (the order of
/// Grid's boundary sides), each side in its cell's vertex order (so its normal points out of the
/// box); side_tag_names are box_side_tag_names.
/// For 2D cell types the third entries of resolution, lower and upper are ignored.
/// Throws afem::Error naming the axis and the value when a resolution is not positive, when an
/// upper bound does not exceed its lower bound (or either is not finite), or when the vertex,
/// cell or side count would not fit std::int32_t indices.
[[nodiscard]] MeshData box_mesh(CellType type, std::array<std::int32_t, 3> resolution,
                                std::array<double, 3> lower, std::array<double, 3> upper);

}  // namespace afem::geometry
