#pragma once

/// @file
/// Kernel helpers: building a Sample from a domain element and a quadrature point, and the
/// basis of a cell's element (values and physical gradients) at a sample.

#include <Eigen/Core>
#include <Eigen/LU>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "arenafem/fem/sample.hpp"
#include "arenafem/geometry/mesh_view.hpp"
#include "arenafem/geometry/reference_cell.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/quadrature.hpp"

namespace afem::fem::detail {

/// Reference measure of a side shape (segment 1, triangle 1/2, square 1).
template <int D, bool Simplex>
AFEM_HOST_DEVICE constexpr double reference_side_measure() {
  return D == 3 && Simplex ? 0.5 : 1.0;
}

/// Whether the geometry gives its inverse Jacobian in closed form (grids).
template <class GView>
concept ClosedFormInverseJacobian = requires(const GView& g, std::int32_t cell,
                                             const typename GView::Coords& xi) {
  g.cell_inverse_jacobian(cell, xi);
};

/// The inverse Jacobian of `cell`'s map at `coords`: the geometry's closed form where it has one.
template <class GView>
AFEM_HOST_DEVICE typename GView::Jacobian inverse_jacobian(const GView& geometry, std::int32_t cell,
                                                           const typename GView::Coords& coords) {
  if constexpr (ClosedFormInverseJacobian<GView>) {
    return geometry.cell_inverse_jacobian(cell, coords);
  } else {
    return geometry.cell_jacobian(cell, coords).inverse();
  }
}

/// A sample at reference coordinates `coords` of `cell` (weight 1, no side).
template <class GView>
AFEM_HOST_DEVICE Sample<GView::dimension> make_cell_sample(const GView& geometry, std::int32_t cell,
                                                           const typename GView::Coords& coords) {
  Sample<GView::dimension> s;
  s.element = cell;
  s.cell = cell;
  s.coords = coords;
  s.x = geometry.cell_position(cell, coords);
  s.normal.setZero();
  s.inverse_jacobian = inverse_jacobian(geometry, cell, coords);
  s.weight = 1.0;
  return s;
}

/// The sample at quadrature point `point` of element `element`.
template <class DomainView, class QView>
AFEM_HOST_DEVICE Sample<DomainView::dimension> make_sample(const DomainView& domain, const QView& q,
                                                           std::int32_t element,
                                                           std::int32_t point) {
  constexpr int dim = DomainView::dimension;
  using GView = typename DomainView::GeometryView;
  Sample<dim> s;
  s.element = element;
  s.point = point;
  s.index = q.output_index(element, point);
  const std::int32_t index = domain.element_index(element);
  double measure_scale = 1.0;
  if constexpr (DomainView::kind == quadrature::ElementKind::cell) {
    s.cell = index;
    for (int d = 0; d < dim; ++d) {
      s.coords[d] = q.coordinate(element, point, d);
    }
    s.x = domain.geometry.cell_position(index, s.coords);
    s.normal.setZero();
  } else {
    typename GView::SideCoords side_coords;
    for (int d = 0; d < dim - 1; ++d) {
      side_coords[d] = q.coordinate(element, point, d);
    }
    s.side = index;
    s.cell = domain.geometry.side_inner_cell(index);
    s.coords = domain.geometry.side_inner_coords(index, side_coords);
    s.x = domain.geometry.side_position(index, side_coords);
    s.normal = domain.geometry.side_normal(index);
    measure_scale =
        domain.geometry.side_measure(index) / reference_side_measure<dim, GView::Cell::simplex>();
  }
  if constexpr (ClosedFormInverseJacobian<GView>) {
    s.inverse_jacobian = domain.geometry.cell_inverse_jacobian(s.cell, s.coords);
    if constexpr (QView::physical_weights) {
      measure_scale = 1.0;
    } else if constexpr (DomainView::kind == quadrature::ElementKind::cell) {
      measure_scale = domain.geometry.cell_measure(s.cell);
    }
  } else {
    const typename GView::Jacobian jacobian = domain.geometry.cell_jacobian(s.cell, s.coords);
    s.inverse_jacobian = jacobian.inverse();
    if constexpr (QView::physical_weights) {
      measure_scale = 1.0;
    } else if constexpr (DomainView::kind == quadrature::ElementKind::cell) {
      measure_scale = std::abs(jacobian.determinant());
    }
  }
  s.weight = q.weight(element, point) * measure_scale;
  return s;
}

/// A cell's vertex positions, read once per element for tabulated samples.
template <class GView>
struct CellVertices {
  static constexpr int count = GView::Cell::vertex_count;
  typename GView::Point x[count];

  AFEM_HOST_DEVICE CellVertices(const GView& geometry, std::int32_t cell) {
    for (int v = 0; v < count; ++v) {
      x[v] = geometry.cell_vertex(cell, v);
    }
  }
};

/// Row size of a geometry table: the map's shape values (one per vertex), then their reference
/// gradients, at one quadrature point.
template <class GView>
inline constexpr int geometry_row_size = GView::Cell::vertex_count*(1 + GView::dimension);

/// The sample at point `point` of cell element `element` from the cell's vertices and the
/// geometry table row of that point: the same map as the geometry's cell_position and
/// cell_jacobian, with the shape functions evaluated once per quadrature point instead of once
/// per sample.
template <class DomainView, class QView>
AFEM_HOST_DEVICE Sample<DomainView::dimension> make_tabulated_sample(
    const DomainView& domain, const QView& q, std::int32_t element, std::int32_t point,
    const CellVertices<typename DomainView::GeometryView>& vertices, const double* row) {
  static_assert(DomainView::kind == quadrature::ElementKind::cell);
  constexpr int dim = DomainView::dimension;
  constexpr int nv = CellVertices<typename DomainView::GeometryView>::count;
  Sample<dim> s;
  s.element = element;
  s.point = point;
  s.index = q.output_index(element, point);
  s.cell = domain.element_index(element);
  typename Sample<dim>::Matrix jacobian = Sample<dim>::Matrix::Zero();
  s.x.setZero();
  for (int v = 0; v < nv; ++v) {
    s.x += row[v] * vertices.x[v];
    for (int d = 0; d < dim; ++d) {
      jacobian.col(d) += row[nv + v * dim + d] * vertices.x[v];
    }
  }
  for (int d = 0; d < dim; ++d) {
    s.coords[d] = q.coordinate(element, point, d);
  }
  s.normal.setZero();
  s.inverse_jacobian = jacobian.inverse();
  s.weight = q.weight(element, point) * std::abs(jacobian.determinant());
  return s;
}

/// Whether samples of a cell domain are cheaper from a geometry table and the cell's vertices:
/// for multilinear maps of stored meshes (quadrilaterals, hexahedra). Grids and simplices have
/// closed-form or constant Jacobians that the geometry evaluates faster itself.
template <class GView>
inline constexpr bool tabulate_map =
    std::is_same_v<GView, geometry::MeshView<GView::cell_type>> && !GView::Cell::simplex;

/// Whether a geometry is a grid of axis-aligned cells: a cell's grid index, once found, gives
/// every position in it (from the index as integers or as doubles), and its inverse Jacobian is
/// the same diagonal matrix at all of them.
template <class GView>
concept GridMap = ClosedFormInverseJacobian<GView> &&
    requires(const GView& g, std::int32_t cell, std::int32_t (&index)[GView::dimension],
             const typename GView::Point& index_as_point, const typename GView::Coords& xi) {
  g.cell_grid_index(cell, index);
  g.grid_position(index, xi);
  g.grid_position(index_as_point, xi);
  g.cell_measure(cell);
};

/// What a cell of a grid keeps for its samples: its index, grid index and measure, found once
/// per element instead of once per sample. (Not its inverse Jacobian: the geometry's closed form
/// is as cheap, and a matrix kept here, stored entry by entry at the element's start, was read
/// back at once as pairs of entries, loads that wait for the stores: 8 % of the 3D B-spline
/// particle-to-grid kernel.)
template <class GView>
struct GridCell {
  std::int32_t cell = 0;
  /// The grid index as doubles, a whole vector: each sample's position is then whole-vector
  /// arithmetic on values stored as vectors (a position built from scalar stores and read back as
  /// a vector stalls the loads that follow).
  typename GView::Point index;
  double measure = 0.0;

  AFEM_HOST_DEVICE GridCell(const GView& geometry, std::int32_t c)
      : cell(c), measure(geometry.cell_measure(c)) {
    std::int32_t grid_index[GView::dimension];
    geometry.cell_grid_index(c, grid_index);
    index = Eigen::Map<const Eigen::Matrix<std::int32_t, GView::dimension, 1>>(grid_index)
                .template cast<double>();
  }
};

/// The samples of one element, with what is constant over the element read once: the cell's
/// vertices and a geometry table on cell domains of meshes (Tabulated), the cell's grid index on
/// cell domains of grids; from the geometry's own map otherwise. All give the same samples as
/// make_sample. Refers to `domain` and `q` (a kernel's captured views), which must outlive it; a
/// temporary view is refused.
template <class DomainView, class QView, bool Tabulated>
class ElementSamples {
  using GView = typename DomainView::GeometryView;
  static constexpr bool on_grid_cells =
      !Tabulated && GridMap<GView> && DomainView::kind == quadrature::ElementKind::cell;
  struct Nothing {
    AFEM_HOST_DEVICE Nothing(const GView& /*geometry*/, std::int32_t /*cell*/) {}
  };
  using Constant = std::conditional_t<Tabulated, CellVertices<GView>,
                                      std::conditional_t<on_grid_cells, GridCell<GView>, Nothing>>;

public:
  AFEM_HOST_DEVICE ElementSamples(const DomainView& domain, const QView& q,
                                  memory::ArrayView<const double> map_rows, std::int32_t element)
      : domain_(domain),
        q_(q),
        map_rows_(map_rows),
        element_(element),
        constant_(domain.geometry, Tabulated || on_grid_cells ? domain.element_index(element) : 0) {
  }
  ElementSamples(DomainView&&, const QView&, memory::ArrayView<const double>,
                 std::int32_t) = delete;
  ElementSamples(const DomainView&, QView&&, memory::ArrayView<const double>,
                 std::int32_t) = delete;

  AFEM_HOST_DEVICE Sample<DomainView::dimension> operator()(std::int32_t point) const {
    if constexpr (Tabulated) {
      return make_tabulated_sample(
          domain_, q_, element_, point, constant_,
          &map_rows_[static_cast<std::size_t>(point) * geometry_row_size<GView>]);
    } else if constexpr (on_grid_cells) {
      constexpr int dim = DomainView::dimension;
      Sample<dim> s;
      s.element = element_;
      s.point = point;
      s.index = q_.output_index(element_, point);
      s.cell = constant_.cell;
      for (int d = 0; d < dim; ++d) {
        s.coords[d] = q_.coordinate(element_, point, d);
      }
      s.x = domain_.geometry.grid_position(constant_.index, s.coords);
      s.normal.setZero();
      s.inverse_jacobian = domain_.geometry.cell_inverse_jacobian(constant_.cell, s.coords);
      s.weight = q_.weight(element_, point) * (QView::physical_weights ? 1.0 : constant_.measure);
      return s;
    } else {
      return make_sample(domain_, q_, element_, point);
    }
  }

private:
  // Referred to, not copied: a copy per element is stored and then read back at once, in loads
  // that straddle its stores and wait for them.
  const DomainView& domain_;
  const QView& q_;
  memory::ArrayView<const double> map_rows_;
  std::int32_t element_;
  Constant constant_;
};

/// n^d: the nodes of a tensor product of d lines of n nodes.
constexpr int line_product_count(int n, int d) {
  return d == 0 ? 1 : n * line_product_count(n, d - 1);
}

/// An element whose basis functions are products of 1D functions, line_node_count nodes along
/// every axis numbered with the first axis fastest, each axis's functions given by
/// line_values(xi, line) (quadratic B-splines): sums over its nodes can run axis by axis.
template <class Element>
concept LineFactoredElement =
    (line_product_count(Element::line_node_count, Element::dimension) == Element::node_count) &&
    requires(const typename Element::Coords& xi,
             double (&line)[Element::dimension][Element::line_node_count]) {
  Element::line_values(xi, line);
};

/// The reference coordinates of an element's nodes, as constants.
template <class Element>
struct NodeCoordinates {
  double at[Element::node_count][Element::dimension];
};
template <class Element>
AFEM_HOST_DEVICE constexpr NodeCoordinates<Element> node_coordinates() {
  NodeCoordinates<Element> table{};
  for (int k = 0; k < Element::node_count; ++k) {
    for (int d = 0; d < Element::dimension; ++d) {
      table.at[k][d] = Element::node_coordinate(k, d);
    }
  }
  return table;
}

/// The weights of a cell's vertices at each node of an element: the node sits at
/// sum_v at[node][v] x_v (the cell map at the node's reference coordinates).
template <class Element, geometry::CellType Type>
struct NodeVertexWeights {
  double at[Element::node_count][geometry::ReferenceCell<Type>::vertex_count];
};
template <class Element, geometry::CellType Type>
AFEM_HOST_DEVICE constexpr NodeVertexWeights<Element, Type> node_vertex_weights() {
  NodeVertexWeights<Element, Type> table{};
  const NodeCoordinates<Element> nodes = node_coordinates<Element>();
  for (int k = 0; k < Element::node_count; ++k) {
    geometry::shape_values<Type>(nodes.at[k], table.at[k]);
  }
  return table;
}

/// Along each axis, the distinct reference coordinates of an element's nodes (in the order the
/// nodes first take them) and each node's slot among them: 3 per axis for quadratic B-splines,
/// 2 for Q1.
template <class Element>
struct AxisSlots {
  static constexpr int dim = Element::dimension;
  int count[dim];
  double coordinate[dim][Element::node_count];
  int slot[Element::node_count][dim];
  [[nodiscard]] AFEM_HOST_DEVICE constexpr int widest() const {
    int w = 1;
    for (const int c : count) {
      w = c > w ? c : w;
    }
    return w;
  }
};
template <class Element>
AFEM_HOST_DEVICE constexpr AxisSlots<Element> axis_slots() {
  AxisSlots<Element> table{};
  for (int d = 0; d < Element::dimension; ++d) {
    for (int k = 0; k < Element::node_count; ++k) {
      const double c = Element::node_coordinate(k, d);
      int j = 0;
      while (j < table.count[d] && table.coordinate[d][j] != c) {
        ++j;
      }
      if (j == table.count[d]) {
        table.coordinate[d][j] = c;
        ++table.count[d];
      }
      table.slot[k][d] = j;
    }
  }
  return table;
}

/// The positions of a cell's element nodes, found once per element: on grids axis by axis from
/// the cell's grid index, on meshes from the cell's vertices and constant weights
/// (node_vertex_weights). at(k) gives node k's.
template <class Element, class GView>
struct NodePositions {
  static constexpr int dim = GView::dimension;
  using Point = typename GView::Point;

  AFEM_HOST_DEVICE NodePositions(const GView& geometry, std::int32_t cell) {
    if constexpr (GridMap<GView>) {
      constexpr AxisSlots<Element> slots = axis_slots<Element>();
      std::int32_t index[dim];
      geometry.cell_grid_index(cell, index);
      for (int d = 0; d < dim; ++d) {
        const auto i = static_cast<double>(index[d]);
        for (int j = 0; j < slots.count[d]; ++j) {
          line_[d][j] = geometry.origin[d] + (i + slots.coordinate[d][j]) * geometry.cell_size[d];
        }
      }
    } else {
      constexpr int nv = GView::Cell::vertex_count;
      constexpr NodeVertexWeights<Element, GView::cell_type> weights =
          node_vertex_weights<Element, GView::cell_type>();
      Point vertices[nv];
      for (int v = 0; v < nv; ++v) {
        vertices[v] = geometry.cell_vertex(cell, v);
      }
      for (int k = 0; k < Element::node_count; ++k) {
        x_[k].setZero();
        for (int v = 0; v < nv; ++v) {
          if (weights.at[k][v] != 0.0) {
            x_[k] += weights.at[k][v] * vertices[v];
          }
        }
      }
    }
  }

  /// Node k's position. On a grid the nodes of a row read the same coordinates from the same
  /// places, so an integrand's product with the position (APIC's and MLS-MPM's affine momentum
  /// A x_i) shares its common terms once the node loop is unrolled: the 3D B-spline
  /// particle-to-grid kernel executes 18 % fewer instructions than with a whole position per
  /// node. (Built whole, as one vector from the index, the positions had also been read back
  /// from scalar stores, a load that waits on them.)
  AFEM_HOST_DEVICE AFEM_INLINE Point at(int k) const {
    if constexpr (GridMap<GView>) {
      constexpr AxisSlots<Element> slots = axis_slots<Element>();
      Point p;
      for (int d = 0; d < dim; ++d) {
        p[d] = line_[d][slots.slot[k][d]];
      }
      return p;
    } else {
      return x_[k];
    }
  }

private:
  static constexpr bool on_grid = GridMap<GView>;
  Point x_[on_grid ? 1 : Element::node_count];
  double line_[dim][on_grid ? axis_slots<Element>().widest() : 1] = {};
};

/// An element's basis at a sample: values and gradients in physical coordinates. Diagonal: the
/// sample's inverse Jacobian is diagonal (cells of a grid), so a gradient maps by D products
/// instead of a D x D product. Without Gradients, the values only (the gradients are zero).
template <class Element, bool Diagonal = false, bool Gradients = true>
struct Basis {
  static constexpr int dim = Element::dimension;
  static constexpr int node_count = Element::node_count;
  double value[Element::node_count] = {};

  /// The physical gradient of node k's function: zero without Gradients.
  AFEM_HOST_DEVICE AFEM_INLINE Eigen::Matrix<double, dim, 1> gradient_of(int k) const {
    if constexpr (Gradients) {
      return gradient_[k];
    } else {
      return Eigen::Matrix<double, dim, 1>::Zero();
    }
  }

  /// Evaluated at the sample's coordinates.
  AFEM_HOST_DEVICE explicit Basis(const Sample<dim>& s) {
    Element::values(s.coords, value);
    if constexpr (Gradients) {
      double reference[Element::node_count * dim];
      Element::gradients(s.coords, reference);
      map_gradients<true>(s, reference);
    }
  }
  /// From a row of a reference table (values, then gradients; see reference_basis_table).
  AFEM_HOST_DEVICE Basis(const Sample<dim>& s, const double* row) {
    for (int k = 0; k < Element::node_count; ++k) {
      value[k] = row[k];
    }
    if constexpr (Gradients) {
      map_gradients<false>(s, row + Element::node_count);
    }
  }

  /// Values and reference gradients at one point, as a table row.
  static constexpr int row_size = Element::node_count * (1 + dim);

private:
  /// Without Gradients one unused entry: zeroing a gradient per node took half of the basis's
  /// time on 3D B-splines; gradient_of gives constant zeros instead.
  Eigen::Matrix<double, dim, 1> gradient_[Gradients ? Element::node_count : 1];

  /// Whole: grid gradients by whole-vector products. Measured both ways: for gradients just
  /// evaluated (PIC samples) they avoid reading scalar stores back as vectors, which stalls; from a
  /// table (regular quadratures) the products per coordinate are faster.
  template <bool Whole>
  AFEM_HOST_DEVICE void map_gradients(const Sample<dim>& s, const double* reference) {
    for (int k = 0; k < Element::node_count; ++k) {
      const Eigen::Map<const Eigen::Matrix<double, dim, 1>> g(reference +
                                                              static_cast<std::ptrdiff_t>(k) * dim);
      if constexpr (Diagonal && Whole) {
        gradient_[k] = g.cwiseProduct(s.inverse_jacobian.diagonal());
      } else if constexpr (Diagonal) {
        Eigen::Matrix<double, dim, 1> mapped;
        for (int d = 0; d < dim; ++d) {
          mapped[d] = reference[k * dim + d] * s.inverse_jacobian(d, d);
        }
        gradient_[k] = mapped;
      } else {
        gradient_[k] = s.inverse_jacobian.transpose() * g;
      }
    }
  }
};

}  // namespace afem::fem::detail
