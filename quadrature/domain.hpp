#pragma once

/// @file
/// Integration domains: the cells, the sides or the boundary sides of a geometry, or of a
/// partition of it. A domain owns nothing; it names which elements a quadrature runs over.

#include <algorithm>
#include <cstdint>

#include "arenafem/geometry/geometry.hpp"
#include "arenafem/geometry/partition.hpp"
#include "arenafem/geometry/tagged_boundary.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/error.hpp"

namespace afem::quadrature {

/// Whether a domain's elements are cells or sides.
enum class ElementKind : std::uint8_t { cell, side };

/// What kernels see of a domain: the geometry's view and the map from element number to cell or
/// side index (all elements, the geometry's boundary sides, or an explicit list).
template <class GeometryViewType, ElementKind Kind>
struct DomainView {
  using GeometryView = GeometryViewType;
  static constexpr ElementKind kind = Kind;
  static constexpr int dimension = GeometryView::dimension;

  enum class Source : std::uint8_t { all, boundary, list };

  GeometryView geometry;
  memory::ArrayView<const std::int32_t> list;
  std::int32_t count = 0;
  Source source = Source::all;

  AFEM_HOST_DEVICE std::int32_t element_count() const { return count; }
  /// The cell (cell domains) or side (side domains) that element `e` is.
  AFEM_HOST_DEVICE std::int32_t element_index(std::int32_t e) const {
    switch (source) {
      case Source::boundary:
        return geometry.boundary_side(e);
      case Source::list:
        return list[static_cast<std::size_t>(e)];
      default:
        return e;
    }
  }
  /// The cell whose shape functions an element's samples use (a side's inner cell).
  AFEM_HOST_DEVICE std::int32_t element_cell(std::int32_t e) const {
    const std::int32_t index = element_index(e);
    if constexpr (Kind == ElementKind::side) {
      return geometry.side_inner_cell(index);
    } else {
      return index;
    }
  }
};

namespace detail {

/// The shared part of Cells, Sides and BoundarySides: a geometry, and optionally a partition
/// whose current index lists are read each time view() is called (so a rebuilt partition is seen)
/// or, for boundary sides, a TaggedBoundary whose sides it runs over.
template <geometry::Geometry G, ElementKind Kind, class Select>
class DomainBase {
public:
  using Geometry = G;
  using Partition = geometry::CellBasedGeometryPartition<G>;
  using View = DomainView<typename G::View, Kind>;
  static constexpr ElementKind kind = Kind;
  static constexpr geometry::CellType cell_type = G::View::cell_type;
  static constexpr int dimension = G::dimension;

  explicit DomainBase(const G& geometry) : geometry_(&geometry) {}
  /// Throws afem::Error for a side domain over a partition that selects cells only.
  explicit DomainBase(const Partition& partition)
      : geometry_(&partition.geometry()), partition_(&partition) {
    AFEM_EXPECTS(Kind == ElementKind::cell || partition.capacity().sides,
                 "a side domain over a partition that selects cells only "
                 "(PartitionCapacity::sides is false)");
  }

  [[nodiscard]] const G& geometry() const { return *geometry_; }
  /// The partition the domain was built from; nullptr for a whole-geometry domain.
  [[nodiscard]] const Partition* partition() const { return partition_; }
  [[nodiscard]] View view() const {
    if (tagged_ != nullptr) {
      return View{geometry_->view(), tagged_->sides(), tagged_->side_count(), View::Source::list};
    }
    return Select::view(*geometry_, partition_);
  }
  [[nodiscard]] std::int32_t element_count() const { return view().count; }
  /// The most elements the domain can hold: bounded by its partition's capacity, 0 where nothing
  /// bounds it but the current selection. Owners of per-element buffers size them by it so that
  /// a changing selection reuses the same blocks.
  [[nodiscard]] std::int64_t element_capacity() const {
    if (partition_ == nullptr || partition_->capacity().max_cells == 0) {
      return 0;
    }
    const std::int64_t cells = partition_->capacity().max_cells;
    if constexpr (Kind == ElementKind::cell) {
      return cells;
    } else {
      return std::min<std::int64_t>(geometry_->side_count(), cells * G::View::Cell::side_count);
    }
  }

protected:
  /// For BoundarySides only (the class that names it): the sides of a TaggedBoundary.
  explicit DomainBase(const geometry::TaggedBoundary<G>& tagged)
      : geometry_(&tagged.geometry()), tagged_(&tagged) {}

private:
  const G* geometry_;
  const Partition* partition_ = nullptr;
  const geometry::TaggedBoundary<G>* tagged_ = nullptr;
};

template <ElementKind Kind, bool Boundary>
struct SelectElements {
  template <class G>
  static DomainView<typename G::View, Kind> view(const G& geometry,
                                                 const geometry::CellBasedGeometryPartition<G>* p) {
    using View = DomainView<typename G::View, Kind>;
    View view{geometry.view(), {}, 0, View::Source::all};
    if (p != nullptr) {
      const geometry::PartitionView indices = p->view();
      if constexpr (Kind == ElementKind::cell) {
        view.list = indices.cells;
      } else if constexpr (Boundary) {
        view.list = indices.boundary_sides;
      } else {
        view.list = indices.sides;
      }
      view.count = static_cast<std::int32_t>(view.list.size());
      view.source = View::Source::list;
      return view;
    }
    if constexpr (Kind == ElementKind::cell) {
      view.count = geometry.cell_count();
    } else {
      view.count = Boundary ? geometry.boundary_side_count() : geometry.side_count();
      view.source = Boundary ? View::Source::boundary : View::Source::all;
    }
    return view;
  }
};

}  // namespace detail

/// The cells of a geometry, or of a partition.
template <geometry::Geometry G>
class Cells : public detail::DomainBase<G, ElementKind::cell,
                                        detail::SelectElements<ElementKind::cell, false>> {
  using detail::DomainBase<G, ElementKind::cell,
                           detail::SelectElements<ElementKind::cell, false>>::DomainBase;
};

/// Every side of a geometry (interior and boundary), or the sides a partition touches. Samples
/// on a side use the shape functions of its inner cell.
template <geometry::Geometry G>
class Sides : public detail::DomainBase<G, ElementKind::side,
                                        detail::SelectElements<ElementKind::side, false>> {
  using detail::DomainBase<G, ElementKind::side,
                           detail::SelectElements<ElementKind::side, false>>::DomainBase;
};

/// The boundary sides of a geometry, the boundary of a partition (sides with one cell in it), or
/// the sides of a TaggedBoundary (boundary sides by tag, for Neumann data on named sides).
template <geometry::Geometry G>
class BoundarySides : public detail::DomainBase<G, ElementKind::side,
                                                detail::SelectElements<ElementKind::side, true>> {
  using Base =
      detail::DomainBase<G, ElementKind::side, detail::SelectElements<ElementKind::side, true>>;

public:
  explicit BoundarySides(const G& geometry) : Base(geometry) {}
  explicit BoundarySides(const typename Base::Partition& partition) : Base(partition) {}
  explicit BoundarySides(const geometry::TaggedBoundary<G>& tagged) : Base(tagged) {}
  /// A domain refers to its TaggedBoundary, which must outlive it.
  explicit BoundarySides(const geometry::TaggedBoundary<G>&& tagged) = delete;
};

template <geometry::Geometry G>
Cells(const G&) -> Cells<G>;
template <geometry::Geometry G>
Cells(const geometry::CellBasedGeometryPartition<G>&) -> Cells<G>;
template <geometry::Geometry G>
Sides(const G&) -> Sides<G>;
template <geometry::Geometry G>
Sides(const geometry::CellBasedGeometryPartition<G>&) -> Sides<G>;
template <geometry::Geometry G>
BoundarySides(const G&) -> BoundarySides<G>;
template <geometry::Geometry G>
BoundarySides(const geometry::CellBasedGeometryPartition<G>&) -> BoundarySides<G>;
template <geometry::Geometry G>
BoundarySides(const geometry::TaggedBoundary<G>&) -> BoundarySides<G>;

/// A domain type: Cells, Sides or BoundarySides of some geometry.
template <class D>
concept Domain = requires(const D domain) {
  typename D::Geometry;
  { domain.view() } -> std::same_as<typename D::View>;
  { domain.element_count() } -> std::same_as<std::int32_t>;
};

}  // namespace afem::quadrature
