#pragma once

/// @file
/// Quadrature rules on reference shapes (host tables): Gauss-Legendre on the segment [0, 1],
/// tensor Gauss-Legendre on the unit square and cube, and rules on the reference triangle and
/// tetrahedron (symmetric rules up to order 2, collapsed Gauss-Legendre products above).

#include <cstdint>
#include <vector>

#include "arenafem/geometry/mesh_data.hpp"

namespace afem::quadrature {

/// The reference shapes rules are defined on: the cells' and, for sides, the segment.
enum class Shape : std::uint8_t { segment, triangle, quadrilateral, tetrahedron, hexahedron };

/// The highest polynomial order reference_rule() accepts.
inline constexpr int max_order = 10;

/// A host table of points (`dimension` reference coordinates each) and weights that integrates
/// polynomials up to `order` exactly; the weights sum to the shape's reference measure.
struct ReferenceRule {
  Shape shape = Shape::segment;
  int dimension = 1;
  int order = 0;
  std::vector<double> points;
  std::vector<double> weights;

  [[nodiscard]] std::int32_t size() const { return static_cast<std::int32_t>(weights.size()); }
};

/// Dimension and reference measure (1, 1/2, 1, 1/6, 1) of a shape.
int dimension(Shape shape);
double reference_measure(Shape shape);

/// The shape of a cell type, and of its sides (segment, segment, triangle, quadrilateral).
Shape cell_shape(geometry::CellType type);
Shape side_shape(geometry::CellType type);

/// `count` Gauss-Legendre points and weights on [0, 1] (exact to order 2 count - 1).
/// Throws afem::Error for count < 1 or count > 32.
ReferenceRule gauss_legendre(int count);

/// A rule exact to `order` (0 to max_order) on `shape`. Throws afem::Error naming the order and
/// the accepted range otherwise.
ReferenceRule reference_rule(Shape shape, int order);

}  // namespace afem::quadrature
