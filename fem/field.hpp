#pragma once

/// @file
/// Fields an integrand can read at a sample: DiscreteField (a space and its dof values, owned in
/// the pool) and AnalyticField (a callable of the position).

#include <cstdint>
#include <span>
#include <string>

#include "arenafem/fem/detail/evaluate.hpp"
#include "arenafem/fem/sample.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/temporary.hpp"

namespace afem::fem {

/// A field's value at a sample and the first moment of its nodal values about it (see
/// DiscreteFieldView::value_and_moment).
template <int D, int C>
struct ValueAndMoment {
  FieldValue<D, C> value;
  Eigen::Matrix<double, C, D> moment;
};

/// What kernels see of a DiscreteField: its space and dof values; value/grad/div at a sample.
template <class SpaceViewType>
struct DiscreteFieldView {
  using SpaceView = SpaceViewType;
  using Element = typename SpaceView::Element;
  static constexpr int dim = SpaceView::dimension;
  static constexpr int components = SpaceView::components;

  SpaceView space;
  memory::ArrayView<const double> dofs;

  AFEM_HOST_DEVICE FieldValue<dim, components> value(const Sample<dim>& s) const {
    double basis[Element::node_count];
    Element::values(s.coords, basis);
    FieldValue<dim, components> result{};
    if constexpr (components == 1) {
      result = 0.0;
    } else {
      result.setZero();
    }
    for (int k = 0; k < Element::node_count; ++k) {
      const auto base = static_cast<std::size_t>(space.cell_node(s.cell, k)) * components;
      if constexpr (components == 1) {
        result += basis[k] * dofs[base];
      } else {
        Eigen::Matrix<double, components, 1> u;
        for (int c = 0; c < components; ++c) {
          u[c] = dofs[base + static_cast<std::size_t>(c)];
        }
        result += basis[k] * u;
      }
    }
    return result;
  }
  /// The gradient: the dofs times the reference gradients, mapped once by the inverse Jacobian
  /// (the same sum as mapping every basis gradient first, with fewer products); on a grid by its
  /// diagonal, read entry by entry (the sample's matrix may have been stored in pieces that a
  /// whole-vector load would wait for).
  AFEM_HOST_DEVICE FieldGradient<dim, components> grad(const Sample<dim>& s) const {
    double reference[Element::node_count * dim];
    Element::gradients(s.coords, reference);
    Eigen::Matrix<double, components, dim> sum = Eigen::Matrix<double, components, dim>::Zero();
    for (int k = 0; k < Element::node_count; ++k) {
      const auto base = static_cast<std::size_t>(space.cell_node(s.cell, k)) * components;
      Eigen::Matrix<double, components, 1> u;
      for (int c = 0; c < components; ++c) {
        u[c] = dofs[base + static_cast<std::size_t>(c)];
      }
      for (int d = 0; d < dim; ++d) {
        sum.col(d) += u * reference[k * dim + d];
      }
    }
    Eigen::Matrix<double, components, dim> mapped;
    if constexpr (detail::GridMap<typename SpaceView::GeometryView>) {
      for (int d = 0; d < dim; ++d) {
        mapped.col(d) = sum.col(d) * s.inverse_jacobian(d, d);
      }
    } else {
      mapped = sum * s.inverse_jacobian;
    }
    if constexpr (components == 1) {
      return mapped.transpose();
    } else {
      return mapped;
    }
  }
  /// The value and the first moment of the nodal values about the sample, sum_k N_k u_k (x_k -
  /// x)^T (row c for component c; x_k the node's position), from one evaluation of the basis;
  /// spaces on grids. APIC's B matrix: on quadratic B-splines, whose moment matrix sum_k N_k
  /// (x_k - x)(x_k - x)^T is h^2 / 4 I everywhere, B * 4 / h^2 is MLS-MPM's affine velocity (the
  /// gradient of a linear field exactly).
  /// On elements whose functions are products of 1D ones (B-splines) the sums run axis by axis:
  /// a row of nodes along the first axis at a time, then the rows of a plane, then the planes,
  /// each level weighting the one below by its axis's functions (a quarter fewer products for a
  /// 3-component field in 3D, and no table of the basis values).
  AFEM_HOST_DEVICE ValueAndMoment<dim, components> value_and_moment(const Sample<dim>& s) const {
    static_assert(detail::GridMap<typename SpaceView::GeometryView>,
                  "value_and_moment: the field's space must be on a grid");
    Eigen::Matrix<double, components, 1> value;
    Eigen::Matrix<double, components, dim> moment;
    // x_k - x = (xi_k - xi) h along each axis: summed in reference units, scaled once.
    if constexpr (detail::LineFactoredElement<Element>) {
      line_value_and_moment(s, value, moment);
    } else {
      node_value_and_moment(s, value, moment);
    }
    // One division per axis, not per entry (in 3D the interpolation's nine divisions took a
    // third of its kernel outside the sums).
    const Eigen::Matrix<double, dim, 1> cell_size = s.inverse_jacobian.diagonal().cwiseInverse();
    // Written into the returned object column by column: a local copied out at the return was
    // stored in pieces that the copy's wider loads had to wait for.
    ValueAndMoment<dim, components> result{};
    for (int d = 0; d < dim; ++d) {
      result.moment.col(d) = moment.col(d) * cell_size[d];
    }
    if constexpr (components == 1) {
      result.value = value[0];
    } else {
      result.value = value;
    }
    return result;
  }
  AFEM_HOST_DEVICE double div(const Sample<dim>& s) const {
    static_assert(components == dim, "div() needs a field with one component per dimension");
    return grad(s).trace();
  }
  AFEM_HOST_DEVICE FieldValue<dim, components> operator()(const Sample<dim>& s) const {
    return value(s);
  }

private:
  using Components = Eigen::Matrix<double, components, 1>;

  AFEM_HOST_DEVICE Components node_dofs(const Sample<dim>& s, int k) const {
    const auto base = static_cast<std::size_t>(space.cell_node(s.cell, k)) * components;
    Components u;
    for (int c = 0; c < components; ++c) {
      u[c] = dofs[base + static_cast<std::size_t>(c)];
    }
    return u;
  }
  /// value_and_moment's sums (moment in reference units), node by node.
  AFEM_HOST_DEVICE void node_value_and_moment(
      const Sample<dim>& s, Components& value,
      Eigen::Matrix<double, components, dim>& moment) const {
    double basis[Element::node_count];
    Element::values(s.coords, basis);
    value.setZero();
    moment.setZero();
    for (int k = 0; k < Element::node_count; ++k) {
      const Components weighted = basis[k] * node_dofs(s, k);
      value += weighted;
      for (int d = 0; d < dim; ++d) {
        moment.col(d) += weighted * (Element::node_coordinate(k, d) - s.coords[d]);
      }
    }
  }
  /// The same sums axis by axis, for elements of products of 1D functions.
  AFEM_HOST_DEVICE AFEM_INLINE void line_value_and_moment(
      const Sample<dim>& s, Components& value,
      Eigen::Matrix<double, components, dim>& moment) const {
    constexpr int n = Element::line_node_count;
    double line[dim][n];
    double first_moment[dim][n];  // line[d][a] (xi_a - xi_d), the node's distance along axis d
    Element::line_values(s.coords, line);
    int stride = 1;
    for (int d = 0; d < dim; ++d) {
      for (int a = 0; a < n; ++a) {
        first_moment[d][a] = line[d][a] * (Element::node_coordinate(a * stride, d) - s.coords[d]);
      }
      stride *= n;
    }
    // A row's sums over the first axis (its value and moment along that axis), a plane's over
    // the first two (its value and moments along both).
    const auto row = [&](int first, Components& sum, Components& along) {
      sum.setZero();
      along.setZero();
      for (int a = 0; a < n; ++a) {
        const Components u = node_dofs(s, first + a);
        sum += line[0][a] * u;
        along += first_moment[0][a] * u;
      }
    };
    const auto plane = [&](int first, Components& sum, Components(&along)[2]) {
      sum.setZero();
      along[0].setZero();
      along[1].setZero();
      for (int a = 0; a < n; ++a) {
        Components row_sum;
        Components row_along;
        row(first + a * n, row_sum, row_along);
        sum += line[1][a] * row_sum;
        along[0] += line[1][a] * row_along;
        along[1] += first_moment[1][a] * row_sum;
      }
    };
    if constexpr (dim == 2) {
      Components along[2];
      plane(0, value, along);
      moment.col(0) = along[0];
      moment.col(1) = along[1];
    } else {
      value.setZero();
      moment.setZero();
      for (int a = 0; a < n; ++a) {
        Components plane_sum;
        Components plane_along[2];
        plane(a * n * n, plane_sum, plane_along);
        value += line[2][a] * plane_sum;
        moment.col(0) += line[2][a] * plane_along[0];
        moment.col(1) += line[2][a] * plane_along[1];
        moment.col(2) += first_moment[2][a] * plane_sum;
      }
    }
  }
};

/// A field on a LagrangeSpace or BSplineSpace: owns its dof values ("DiscreteField.dofs" in the
/// space's pool, zero-initialised) until destroyed. Its dofs follow the space's numbering of its
/// construction: after the space's rebuild() every access throws afem::Error (make a new field).
template <class Space>
class DiscreteField {
public:
  using View = DiscreteFieldView<typename Space::View>;

  explicit DiscreteField(const Space& space)
      : space_(&space),
        version_(space.version()),
        dofs_(memory::borrow_temporary<double>(
            space.pool(), static_cast<std::size_t>(space.dof_count()), "DiscreteField.dofs")) {
    std::vector<double> zeros(dofs_.size(), 0.0);
    memory::copy_to_device(dofs_.view(), std::span<const double>(zeros), space.pool().stream());
    space.pool().stream().synchronize();
  }

  [[nodiscard]] const Space& space() const { return *space_; }
  /// Dof values (node-major: node * components + component), in the backend's memory, to read.
  [[nodiscard]] memory::ArrayView<const double> dofs() const {
    check_current();
    return dofs_.view();
  }
  /// The same, to write (the field must not be const).
  [[nodiscard]] memory::ArrayView<double> dofs() {
    check_current();
    return dofs_.view();
  }
  /// What kernels read: the space's view and the dofs.
  [[nodiscard]] View view() const {
    check_current();
    return {space_->view(), dofs_.view()};
  }

private:
  void check_current() const {
    AFEM_EXPECTS(space_->version() == version_,
                 "DiscreteField: its space was rebuilt (renumbered) after the field was made, so "
                 "its dofs follow the old numbering; make a new field on the space");
  }

  const Space* space_;
  std::uint64_t version_;
  memory::Temporary<double> dofs_;
};

/// A field given by a callable of the position: `function(x)` returns a scalar or vector.
template <class Function>
struct AnalyticField {
  Function function;

  template <int D>
  AFEM_HOST_DEVICE auto value(const Sample<D>& s) const {
    return function(s.x);
  }
  template <int D>
  AFEM_HOST_DEVICE auto operator()(const Sample<D>& s) const {
    return function(s.x);
  }
};

template <class Function>
AnalyticField(Function) -> AnalyticField<Function>;

}  // namespace afem::fem
