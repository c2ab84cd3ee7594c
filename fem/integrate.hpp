#pragma once

/// @file
/// integrate(): bilinear forms into a BsrMatrix, linear forms into a vector, and integrals into a
/// value, over the samples of a Quadrature. Integrands are callables marked AFEM_HOST_DEVICE:
///   bilinear  f(sample, test, trial, fields...) -> double
///   linear    f(sample, test, fields...)        -> double
///   integral  f(sample, fields...)              -> double or a fixed-size Eigen vector/matrix
/// where test and trial are ShapeFunction accessors (value(), grad(), div()) and fields are
/// DiscreteField views or AnalyticFields. All scratch comes from the step arena and is given back
/// before returning; sums run in a fixed order (results do not depend on thread count).
///
/// Linear and bilinear integrands may also say what they need per sample
/// (detail/integrand_needs.hpp):
/// - `static constexpr bool reads_gradients = false`: the integrand never reads a test or trial
///   function's gradient, so only the basis values are evaluated (the gradients are zero);
/// - `static constexpr bool symmetric = true` (bilinear): f(sample, v, u) == f(sample, u, v), so
///   with the same element on both sides only half of each element matrix is evaluated;
/// - `static constexpr bool tests_by_node = true` (linear): called once per node with a
///   NodeBasis (the node's scalar basis function) instead of once per node and component, it
///   returns the form's values at the node's C test functions, a FieldValue<D, C> (a number, or a
///   column of exactly C rows; any other shape, or the flag on a bilinear integrand, is refused
///   at compile time);
/// - `prepare(sample, fields...)`: called once per sample; its result stands for the sample and
///   the fields in the calls per function, f(prepared, test) and f(prepared, test, trial).

#include <thrust/copy.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/reduce.h>
#include <thrust/sequence.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/detail/assembly_plan.hpp"
#include "arenafem/fem/detail/evaluate.hpp"
#include "arenafem/fem/detail/field_pack.hpp"
#include "arenafem/fem/detail/integrand_needs.hpp"
#include "arenafem/fem/detail/value_traits.hpp"
#include "arenafem/fem/field.hpp"
#include "arenafem/fem/sample.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/thrust_allocator.hpp"
#include "arenafem/quadrature/quadrature.hpp"

namespace afem::fem {

namespace detail {

template <class Restriction, class Q>
void check_restriction(const Restriction& restriction, const Q& q, const char* role) {
  using Domain = typename Q::DomainType;
  static_assert(std::is_same_v<typename Restriction::DomainType::View, typename Domain::View>,
                "integrate: the restriction's domain is of another kind or geometry type than "
                "the quadrature's");
  AFEM_EXPECTS(&restriction.domain().geometry() == &q.domain().geometry(),
               std::string("integrate: the ") + role +
                   " space is on another geometry than the quadrature's domain");
  AFEM_EXPECTS(restriction.element_count() == q.domain().element_count(),
               std::string("integrate: the ") + role + " restriction has " +
                   std::to_string(restriction.element_count()) +
                   " elements but the quadrature's domain has " +
                   std::to_string(q.domain().element_count()) +
                   "; rebuild the restriction after the domain changed");
}

/// Sums contiguous segments of `values` (Width entries per triplet) taken in `order`: block b is
/// the sum over order[starts[b] .. starts[b + 1]), triplet by triplet with its Width entries
/// together (each entry summed in triplet order). Fixed order, no atomics.
template <int Width>
void gather_segments(memory::ArrayView<const double> values,
                     memory::ArrayView<const std::int32_t> order,
                     memory::ArrayView<const std::int32_t> starts, memory::ArrayView<double> out,
                     memory::Arena& scratch) {
  auto policy = memory::arena_policy(scratch, "integrate.thrust");
  const auto segments = static_cast<std::int32_t>(starts.size()) - 1;
  thrust::for_each_n(
      policy, thrust::counting_iterator<std::int32_t>(0), segments,
      [=] AFEM_HOST_DEVICE(std::int32_t b) {
        double sum[Width] = {};
#if !defined(__CUDA_ARCH__)
        // The entries of the triplets `lookahead` places on, which later blocks read: they are
        // spread over the element matrices, beyond the reach of the hardware prefetcher.
        constexpr std::size_t lookahead = 256;
        const auto ahead_end =
            static_cast<std::size_t>(starts[static_cast<std::size_t>(b) + 1]) + lookahead;
        const std::size_t last = ahead_end < order.size() ? ahead_end : order.size();
        for (auto t = static_cast<std::size_t>(starts[static_cast<std::size_t>(b)]) + lookahead;
             t < last; ++t) {
          const double* entries = &values[static_cast<std::size_t>(order[t]) * Width];
          memory::prefetch(entries);
          if constexpr (Width > 1) {
            memory::prefetch(entries + (Width - 1));
          }
        }
#endif
        for (auto t = starts[static_cast<std::size_t>(b)];
             t < starts[static_cast<std::size_t>(b) + 1]; ++t) {
          const double* entries =
              &values[static_cast<std::size_t>(order[static_cast<std::size_t>(t)]) * Width];
          for (int k = 0; k < Width; ++k) {
            sum[k] += entries[k];
          }
        }
        for (int k = 0; k < Width; ++k) {
          out[static_cast<std::size_t>(b) * Width + static_cast<std::size_t>(k)] = sum[k];
        }
      });
}

/// A table row of an element's basis: values, then reference gradients, at one point.
template <class Element>
struct BasisRow {
  static constexpr int size = Basis<Element>::row_size;
  using Coords = typename Element::Coords;
  AFEM_HOST_DEVICE static void fill(const Coords& xi, double* row) {
    Element::values(xi, row);
    Element::gradients(xi, row + Element::node_count);
  }
};

/// A table row of a geometry map's shape functions: values, then reference gradients.
template <class GView>
struct GeometryRow {
  static constexpr int size = geometry_row_size<GView>;
  using Coords = typename GView::Coords;
  AFEM_HOST_DEVICE static void fill(const Coords& xi, double* row) {
    geometry::shape_values<GView::cell_type>(xi, row);
    geometry::shape_gradients<GView::cell_type>(xi, row + GView::Cell::vertex_count);
  }
};

/// Row::size doubles per quadrature point, filled by Row::fill at the point, in `scratch`: the
/// values every element of a cell domain shares. Empty unless Tabulated (side domains, whose cell
/// coordinates differ per side, evaluate at each sample instead).
template <class Row, bool Tabulated, class QView>
memory::Temporary<double> tabulate(const QView& q, memory::Arena& scratch) {
  if constexpr (!Tabulated) {
    return {};
  } else {
    const std::int32_t points = q.points_per_element();
    auto table = memory::borrow_temporary<double>(
        scratch, static_cast<std::size_t>(points) * Row::size, "integrate.table");
    const memory::ArrayView<double> out = table.view();
    auto policy = memory::arena_policy(scratch, "integrate.thrust");
    thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), points,
                       [=] AFEM_HOST_DEVICE(std::int32_t p) {
                         typename Row::Coords xi;
                         for (int d = 0; d < xi.size(); ++d) {
                           xi[d] = q.coordinate(p, d);
                         }
                         Row::fill(xi, &out[static_cast<std::size_t>(p) * Row::size]);
                       });
    return table;
  }
}

/// The basis at a sample of a cell of `GView`: from its table row (cell domains) or evaluated
/// there; gradients mapped by the diagonal inverse Jacobian on grids, or not evaluated when the
/// integrand reads none.
template <class Element, bool Tabulated, class GView, bool Gradients, int D>
AFEM_HOST_DEVICE auto basis_at(const Sample<D>& s, memory::ArrayView<const double> rows) {
  using Mapped = Basis<Element, GridMap<GView>, Gradients>;
  if constexpr (Tabulated) {
    return Mapped(s, &rows[static_cast<std::size_t>(s.point) * Mapped::row_size]);
  } else {
    return Mapped(s);
  }
}

/// Where the entry of test function (i, ci) and trial function (j, cj) sits in an element matrix
/// of R x C blocks.
template <int R, int C, int nu>
AFEM_HOST_DEVICE constexpr int entry_index(int i, int ci, int j, int cj) {
  return ((i * nu + j) * R + ci) * C + cj;
}

/// Adds weight * f(s, test_i, trial_j, fields...) (f(prepared, test_i, trial_j) when Prepared)
/// for every basis pair and component pair; with Upper, only for the pairs whose trial function
/// (j, cj) does not come before the test function (i, ci) (see mirror_upper).
template <int R, int C, bool Prepared, bool Upper, int D, class TestBasis, class TrialBasis,
          class TestNodes, class TrialNodes, class Integrand, class Pack>
AFEM_HOST_DEVICE void add_pairs(double* block, const Sample<D>& s, const TestBasis& test,
                                const TestNodes& test_nodes, const TrialBasis& trial,
                                const TrialNodes& trial_nodes, const Integrand& integrand,
                                const Pack& pack) {
  constexpr int nt = TestBasis::node_count;
  constexpr int nu = TrialBasis::node_count;
  const auto& at = sample_part<Prepared>(integrand, s, pack);
  for (int i = 0; i < nt; ++i) {
    for (int ci = 0; ci < R; ++ci) {
      const ShapeFunction<D, R> v{test.value[i], test.gradient_of(i), ci, -1, test_nodes.at(i)};
      for (int j = Upper ? i : 0; j < nu; ++j) {
        for (int cj = Upper && j == i ? ci : 0; cj < C; ++cj) {
          const ShapeFunction<D, C> u{trial.value[j], trial.gradient_of(j), cj, -1,
                                      trial_nodes.at(j)};
          block[entry_index<R, C, nu>(i, ci, j, cj)] +=
              s.weight * call_at<Prepared>(integrand, at, pack, v, u);
        }
      }
    }
  }
}

/// Copies the entries add_pairs<..., Upper = true> summed to their mirror images: entry (j, cj;
/// i, ci) takes the value of (i, ci; j, cj).
template <int B, int n>
AFEM_HOST_DEVICE void mirror_upper(double* block) {
  for (int i = 0; i < n; ++i) {
    for (int ci = 0; ci < B; ++ci) {
      for (int j = i; j < n; ++j) {
        for (int cj = j == i ? ci + 1 : 0; cj < B; ++cj) {
          block[entry_index<B, B, n>(j, cj, i, ci)] = block[entry_index<B, B, n>(i, ci, j, cj)];
        }
      }
    }
  }
}

/// Whether element matrices of `Integrand` are computed as an upper half and mirrored: it
/// declares itself symmetric and both sides have the same element and component count.
template <class Integrand, class TestElement, class TrialElement, int R, int C>
inline constexpr bool upper_half =
    declares_symmetric<Integrand>() && std::is_same_v<TestElement, TrialElement>&& R == C;

/// Adds one sample's contributions to an element matrix (the trial basis is the test basis when
/// both spaces have the same element).
template <int R, int C, bool Prepared, class TestElement, class TrialElement, bool Tabulated,
          class GView, int D, class TestNodes, class TrialNodes, class Integrand, class Pack>
AFEM_HOST_DEVICE void add_point(double* block, const Sample<D>& s,
                                memory::ArrayView<const double> test_rows,
                                memory::ArrayView<const double> trial_rows,
                                const TestNodes& test_nodes, const TrialNodes& trial_nodes,
                                const Integrand& integrand, const Pack& pack) {
  constexpr bool gradients = reads_gradients<Integrand>();
  const auto test_basis = basis_at<TestElement, Tabulated, GView, gradients>(s, test_rows);
  if constexpr (std::is_same_v<TestElement, TrialElement>) {
    add_pairs<R, C, Prepared, upper_half<Integrand, TestElement, TrialElement, R, C>>(
        block, s, test_basis, test_nodes, test_basis, trial_nodes, integrand, pack);
  } else {
    add_pairs<R, C, Prepared, false>(
        block, s, test_basis, test_nodes,
        basis_at<TrialElement, Tabulated, GView, gradients>(s, trial_rows), trial_nodes, integrand,
        pack);
  }
}

/// Element matrices of a bilinear form: for element e, test node i, trial node j and components
/// (ci, cj), out[((e * nt + i) * nu + j) * R * C + ci * C + cj] (overwritten).
template <int R, int C, class TestElement, class TrialElement, quadrature::QuadratureRule Q,
          class Integrand, class... Fields>
void element_matrices(memory::ArrayView<double> out, const Q& quadrature,
                      const Integrand& integrand, memory::Arena& scratch, const Fields&... fields) {
  using Domain = typename Q::DomainType;
  constexpr int nt = TestElement::node_count;
  constexpr int nu = TrialElement::node_count;
  const std::int32_t elements = quadrature.domain().element_count();
  detail::check_size(out.size(), static_cast<std::int64_t>(elements) * nt * nu * R * C,
                     "element_matrices");
  auto policy = memory::arena_policy(scratch, "integrate.thrust");
  const auto domain = quadrature.domain().view();
  const auto q = quadrature.view();
  detail::check_fields_on(quadrature, "integrate", fields...);
  const auto pack = detail::make_field_pack(fields...);
  constexpr bool prepared =
      PreparedIntegrand<Integrand, Domain::dimension, FieldArgument<Fields>...>;
  constexpr bool tabulated =
      Domain::kind == quadrature::ElementKind::cell && decltype(quadrature.view())::uniform;
  using GView = typename Domain::View::GeometryView;
  auto test_table = tabulate<BasisRow<TestElement>, tabulated>(q, scratch);
  auto trial_table = tabulate<BasisRow<TrialElement>, tabulated>(q, scratch);
  constexpr bool map_table = tabulated && tabulate_map<GView>;
  auto geometry_rows = tabulate<GeometryRow<GView>, map_table>(q, scratch);
  const memory::ArrayView<const double> map_rows = geometry_rows.view();
  const memory::ArrayView<const double> test_rows = test_table.view();
  const memory::ArrayView<const double> trial_rows = trial_table.view();
  thrust::for_each_n(
      policy, thrust::counting_iterator<std::int32_t>(0), elements,
      [=] AFEM_HOST_DEVICE(std::int32_t e) {
        // Small element matrices are summed in registers/stack and written once.
        constexpr int size = nt * nu * R * C;
        constexpr bool on_stack = size <= 1024;
        double local[on_stack ? size : 1];
        double* block = on_stack ? local : &out[static_cast<std::size_t>(e) * size];
        for (int i = 0; i < size; ++i) {
          block[i] = 0.0;
        }
        const ElementSamples<decltype(domain), decltype(q), map_table> samples(domain, q, map_rows,
                                                                               e);
        const std::int32_t cell = domain.element_cell(e);
        const auto add_points = [&](const auto& test_nodes, const auto& trial_nodes) {
          for (std::int32_t p = 0; p < q.point_count(e); ++p) {
            add_point<R, C, prepared, TestElement, TrialElement, tabulated, GView>(
                block, samples(p), test_rows, trial_rows, test_nodes, trial_nodes, integrand, pack);
          }
        };
        const NodePositions<TestElement, GView> test_nodes(domain.geometry, cell);
        if constexpr (std::is_same_v<TestElement, TrialElement>) {
          add_points(test_nodes, test_nodes);
        } else {
          add_points(test_nodes, NodePositions<TrialElement, GView>(domain.geometry, cell));
        }
        if constexpr (upper_half<Integrand, TestElement, TrialElement, R, C>) {
          mirror_upper<R, nt>(block);
        }
        if constexpr (on_stack) {
          for (int i = 0; i < size; ++i) {
            out[static_cast<std::size_t>(e) * size + static_cast<std::size_t>(i)] = local[i];
          }
        }
      });
}

/// Sums weight * f(sample, fields...) over the domain into `total` (ValueTraits<Result>::size
/// entries): per-element sums, then a reduction per entry.
template <class Result, quadrature::QuadratureRule Q, class Integrand, class... Fields>
void integral_sums(double* total, const Q& quadrature, const Integrand& integrand,
                   memory::Arena& scratch, const Fields&... fields) {
  using Domain = typename Q::DomainType;
  constexpr int dim = Domain::dimension;
  using Traits = ValueTraits<Result>;
  constexpr int width = Traits::size;
  const std::int32_t elements = quadrature.domain().element_count();
  auto policy = memory::arena_policy(scratch, "integrate.thrust");
  auto sums = memory::borrow_temporary<double>(scratch, static_cast<std::size_t>(elements) * width,
                                               "integrate.element_sums");
  const memory::ArrayView<double> out = sums.view();
  const auto domain = quadrature.domain().view();
  const auto q = quadrature.view();
  detail::check_fields_on(quadrature, "integrate", fields...);
  const auto pack = make_field_pack(fields...);
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), elements,
                     [=] AFEM_HOST_DEVICE(std::int32_t e) {
                       double* local = &out[static_cast<std::size_t>(e) * width];
                       for (int c = 0; c < width; ++c) {
                         local[c] = 0.0;
                       }
                       const ElementSamples<decltype(domain), decltype(q), false> samples(domain, q,
                                                                                          {}, e);
                       for (std::int32_t p = 0; p < q.point_count(e); ++p) {
                         const Sample<dim> s = samples(p);
                         double value[width];
                         Traits::store(static_cast<Result>(pack.call(integrand, s)), value);
                         for (int c = 0; c < width; ++c) {
                           local[c] += s.weight * value[c];
                         }
                       }
                     });
  for (int c = 0; c < width; ++c) {
    total[c] = thrust::transform_reduce(
        policy, thrust::counting_iterator<std::size_t>(0),
        thrust::counting_iterator<std::size_t>(static_cast<std::size_t>(elements)),
        [=] AFEM_HOST_DEVICE(std::size_t e) {
          return out[e * width + static_cast<std::size_t>(c)];
        },
        0.0, thrust::plus<double>());
  }
}

}  // namespace detail

/// Assembles the bilinear form sum over samples of weight * f(sample, test_i, trial_j, fields...)
/// into `matrix` (rows: test nodes, columns: trial nodes; R x C blocks: the test space's and the
/// trial space's component counts, e.g. 1 x D for the divergence of a vector field tested by a
/// scalar). The pattern and its
/// triplet plan (which element triplets sum into each block; detail/assembly_plan.hpp) are built
/// on the first call and whenever a restriction was rebuilt; later calls only compute element
/// matrices into the arena and sum each block's triplets in element order. A call that throws
/// (afem::OutOfMemory when the arena cannot hold the element matrices) leaves the matrix as it
/// was.
template <int R, int C, quadrature::QuadratureRule Q, class Test, class Trial, class Integrand,
          class... Fields>
void integrate(BsrMatrix<R, C>& matrix, const Q& quadrature, const Test& test, const Trial& trial,
               const Integrand& integrand, memory::Arena& scratch, const Fields&... fields) {
  using Domain = typename Q::DomainType;
  constexpr int dim = Domain::dimension;
  using TestElement = typename Test::Element;
  using TrialElement = typename Trial::Element;
  using TestFunction = ShapeFunction<dim, Test::components>;
  using TrialFunction = ShapeFunction<dim, Trial::components>;
  static_assert(Test::components == R && Trial::components == C,
                "integrate (bilinear form): the matrix's blocks must have as many rows as the test "
                "space has components and as many columns as the trial space");
  static_assert(!detail::tests_by_node<Integrand>(),
                "integrate (bilinear form): tests_by_node is for linear forms; a bilinear "
                "integrand takes a test and a trial function at a time");
  if constexpr (detail::PreparedIntegrand<Integrand, dim, detail::FieldArgument<Fields>...>) {
    using Prepared = detail::PreparedType<Integrand, dim, detail::FieldArgument<Fields>...>;
    static_assert(std::is_invocable_r_v<double, const Integrand&, const Prepared&,
                                        const TestFunction&, const TrialFunction&>,
                  "integrate (bilinear form): an integrand with prepare(sample, fields...) must be "
                  "callable as f(prepared, test, trial) and return a scalar");
    static_assert(detail::storable_prepared<Prepared>,
                  "integrate (bilinear form): prepare() returns an Eigen expression, which refers "
                  "to its own locals; return a plain matrix or vector (.eval())");
  } else {
    static_assert(
        std::is_invocable_v<const Integrand&, const Sample<dim>&, const TestFunction&,
                            const TrialFunction&, const detail::FieldArgument<Fields>&...>,
        "integrate (bilinear form): the integrand must be callable as "
        "f(sample, test, trial, fields...)");
    static_assert(
        std::is_convertible_v<
            std::invoke_result_t<const Integrand&, const Sample<dim>&, const TestFunction&,
                                 const TrialFunction&, const detail::FieldArgument<Fields>&...>,
            double>,
        "integrate (bilinear form): the integrand must return a scalar");
  }
  detail::check_restriction(test, quadrature, "test");
  detail::check_restriction(trial, quadrature, "trial");
  constexpr int nt = TestElement::node_count;
  constexpr int nu = TrialElement::node_count;
  const std::int32_t elements = quadrature.domain().element_count();
  const std::int64_t triplets = static_cast<std::int64_t>(elements) * nt * nu;
  AFEM_EXPECTS(triplets < std::numeric_limits<std::int32_t>::max(),
               "integrate: " + std::to_string(triplets) +
                   " element triplets overflow 32-bit triplet indices; split the domain");
  const AssemblyKey key{test.version(), trial.version(), triplets};
  // A new plan is installed only once the element matrices are computed: a first assembly whose
  // memory does not fit leaves the matrix as it was.
  std::optional<detail::AssemblyPlan<R, C>> plan;
  if (!(matrix.plan_key() == key)) {
    plan.emplace(detail::build_plan<R, C, TestElement, TrialElement>(matrix.pool(), test.view(),
                                                                     trial.view(), key, scratch));
  }
  auto element_values = memory::borrow_temporary<double>(
      scratch, static_cast<std::size_t>(triplets) * R * C, "integrate.element_matrices");
  const memory::ArrayView<double> out = element_values.view();
  detail::element_matrices<R, C, TestElement, TrialElement>(out, quadrature, integrand, scratch,
                                                            fields...);
  if (plan) {
    std::move(*plan).install(matrix);
  }
  detail::gather_segments<R * C>(out, matrix.triplet_order(), matrix.block_starts(),
                                 matrix.view().values, scratch);
}

/// One linear form of integrate(std::tuple{LinearForm...}, ...): the vector it assembles into
/// (test.node_count() * components entries, overwritten), its test restriction and its integrand
/// (a linear integrand as in integrate(vector, ...)). Holds a view of the vector and a pointer to
/// the restriction, both owned by the caller, who keeps them alive through the call.
template <class Test, class Integrand>
struct LinearForm {
  LinearForm(memory::ArrayView<double> into, const Test& test_restriction, const Integrand& form)
      : vector(into), test(&test_restriction), integrand(form) {}
  static constexpr int components = Test::components;
  memory::ArrayView<double> vector;
  const Test* test;
  Integrand integrand;
};

namespace detail {

/// Whether f(args...) can be called and returns a node's values for `Components` test functions:
/// a number for one component, else a column of exactly `Components` rows at compile time (a
/// dynamic-size vector would convert to FieldValue and fail only when run).
template <int Components, class F, class... Args>
constexpr bool node_values_shape() {
  if constexpr (!std::is_invocable_v<F, Args...>) {
    return false;
  } else {
    using Result = std::remove_cvref_t<std::invoke_result_t<F, Args...>>;
    if constexpr (requires {
                    Result::RowsAtCompileTime;
                    Result::ColsAtCompileTime;
                  }) {
      return Components > 1 && Result::RowsAtCompileTime == Components &&
             Result::ColsAtCompileTime == 1;
    } else {
      return Components == 1 && std::is_convertible_v<Result, double>;
    }
  }
}

/// Compile-time checks of a linear integrand for test functions of `Components` components.
template <class Integrand, int D, int Components, class... Fields>
constexpr void check_linear_integrand() {
  using TestFunction = ShapeFunction<D, Components>;
  if constexpr (tests_by_node<Integrand>()) {
    using Node = NodeBasis<D>;
    if constexpr (PreparedIntegrand<Integrand, D, FieldArgument<Fields>...>) {
      using Prepared = PreparedType<Integrand, D, FieldArgument<Fields>...>;
      static_assert(
          node_values_shape<Components, const Integrand&, const Prepared&, const Node&>(),
          "integrate (linear form): an integrand with tests_by_node and prepare(sample, "
          "fields...) must be callable as f(prepared, node) with a NodeBasis and return the "
          "node's values, a FieldValue<D, components>");
      static_assert(storable_prepared<Prepared>,
                    "integrate (linear form): prepare() returns an Eigen expression, which refers "
                    "to its own locals; return a plain matrix or vector (.eval())");
    } else {
      static_assert(node_values_shape<Components, const Integrand&, const Sample<D>&, const Node&,
                                      const FieldArgument<Fields>&...>(),
                    "integrate (linear form): an integrand with tests_by_node must be callable "
                    "as f(sample, node, fields...) with a NodeBasis and return the node's values, "
                    "a FieldValue<D, components>");
    }
  } else if constexpr (PreparedIntegrand<Integrand, D, FieldArgument<Fields>...>) {
    using Prepared = PreparedType<Integrand, D, FieldArgument<Fields>...>;
    static_assert(
        std::is_invocable_r_v<double, const Integrand&, const Prepared&, const TestFunction&>,
        "integrate (linear form): an integrand with prepare(sample, fields...) must be callable "
        "as f(prepared, test) and return a scalar");
    static_assert(storable_prepared<Prepared>,
                  "integrate (linear form): prepare() returns an Eigen expression, which refers to "
                  "its own locals; return a plain matrix or vector (.eval())");
  } else {
    static_assert(std::is_invocable_v<const Integrand&, const Sample<D>&, const TestFunction&,
                                      const FieldArgument<Fields>&...>,
                  "integrate (linear form): the integrand must be callable as "
                  "f(sample, test, fields...)");
    static_assert(std::is_convertible_v<
                      std::invoke_result_t<const Integrand&, const Sample<D>&, const TestFunction&,
                                           const FieldArgument<Fields>&...>,
                      double>,
                  "integrate (linear form): the integrand must return a scalar");
  }
}

/// What the element kernel of integrate (linear forms) holds of one form: its integrand, its
/// restriction's element nodes and the element vectors it writes (nt * Components per element).
template <int D, int Components, class Element, class Integrand, bool Prepared>
struct LinearFormPart {
  static constexpr int nt = Element::node_count;
  static constexpr int size = nt * Components;
  static constexpr bool by_node = tests_by_node<Integrand>();

  Integrand integrand;
  memory::ArrayView<const std::int32_t> element_nodes;
  memory::ArrayView<double> out;

  /// Adds the sample's weight * f(sample, test_i) for every test function of the element.
  template <class Basis, class Nodes, class Pack>
  AFEM_HOST_DEVICE AFEM_INLINE void add(double* local, std::int32_t e, const Sample<D>& s,
                                        const Basis& basis, const Nodes& nodes,
                                        const Pack& pack) const {
    const auto& at = sample_part<Prepared>(integrand, s, pack);
    // Unrolled whole, as GCC unrolls the loop of one form alone: with several forms in the
    // kernel its size limits leave a loop, summed in scalar instructions.
#if defined(__CUDA_ARCH__)
#pragma unroll
#elif defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#pragma GCC unroll 64
#endif
    for (int i = 0; i < nt; ++i) {
      const std::int32_t node =
          element_nodes[static_cast<std::size_t>(e) * nt + static_cast<std::size_t>(i)];
      if constexpr (by_node) {
        const NodeBasis<D> v{basis.value[i], basis.gradient_of(i), node, nodes.at(i)};
        const FieldValue<D, Components> values = call_node<Prepared>(integrand, at, pack, v);
        if constexpr (Components == 1) {
          local[i] += s.weight * values;
        } else {
          for (int c = 0; c < Components; ++c) {
            local[i * Components + c] += s.weight * values[c];
          }
        }
      } else {
        for (int c = 0; c < Components; ++c) {
          const ShapeFunction<D, Components> v{basis.value[i], basis.gradient_of(i), c, node,
                                               nodes.at(i)};
          local[i * Components + c] += s.weight * call_at<Prepared>(integrand, at, pack, v);
        }
      }
    }
  }
  AFEM_HOST_DEVICE AFEM_INLINE void store(const double* local, std::int32_t e) const {
    for (int i = 0; i < size; ++i) {
      out[static_cast<std::size_t>(e) * size + static_cast<std::size_t>(i)] = local[i];
    }
  }
};

/// The part of a linear form of `Test` and `Integrand` with these field arguments.
template <int D, class Test, class Integrand, class... Fields>
using LinearFormPartOf = LinearFormPart<D, Test::components, typename Test::Element, Integrand,
                                        PreparedIntegrand<Integrand, D, FieldArgument<Fields>...>>;

/// The parts of the forms of one pass, with what the element kernel does to each in turn (folds,
/// not lambdas: each part's work inlines into the kernel).
template <class... Part>
struct LinearFormParts {
  using List = std::tuple<Part...>;
  static constexpr auto each = std::index_sequence_for<Part...>{};
  /// The element vectors of all the forms, one after the other, in one stack array.
  static constexpr int local_size = (Part::size + ...);
  thrust::tuple<Part...> parts;

  template <std::size_t... I, class... Args>
  AFEM_HOST_DEVICE AFEM_INLINE void add(double* local, std::index_sequence<I...> /*forms*/,
                                        const Args&... args) const {
    (thrust::get<I>(parts).add(local + offset<I>(), args...), ...);
  }
  template <std::size_t... I>
  AFEM_HOST_DEVICE AFEM_INLINE void store(const double* local, std::int32_t e,
                                          std::index_sequence<I...> /*forms*/) const {
    (thrust::get<I>(parts).store(local + offset<I>(), e), ...);
  }

private:
  /// Where form I's element vector starts in the stack array.
  template <std::size_t I>
  AFEM_HOST_DEVICE static constexpr int offset() {
    constexpr int sizes[] = {Part::size...};
    int at = 0;
    for (int k = 0; k < static_cast<int>(I); ++k) {
      at += sizes[k];
    }
    return at;
  }
};

/// vector[n * Components + c] = the sum of entry c of the element vectors that hold node n, in
/// element order (the restriction's node pairs).
template <int Components>
void sum_node_pairs(memory::ArrayView<const double> element_vectors,
                    const RestrictionView& restriction, memory::ArrayView<double> vector,
                    memory::Arena& scratch) {
  auto policy = memory::arena_policy(scratch, "integrate.thrust");
  const memory::ArrayView<const std::int32_t> index = restriction.node_pairs;
  const memory::ArrayView<const std::int32_t> start = restriction.node_pair_offsets;
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), restriction.node_count,
                     [=] AFEM_HOST_DEVICE(std::int32_t n) {
                       const auto at = static_cast<std::size_t>(n);
                       const auto first = static_cast<std::size_t>(start[at]);
                       const auto last = static_cast<std::size_t>(start[at + 1]);
                       double sum[Components] = {};
                       for (std::size_t u = first; u < last; ++u) {
                         const double* pair =
                             &element_vectors[static_cast<std::size_t>(index[u]) * Components];
                         for (int c = 0; c < Components; ++c) {
                           sum[c] += pair[c];
                         }
                       }
                       for (int c = 0; c < Components; ++c) {
                         vector[at * Components + static_cast<std::size_t>(c)] = sum[c];
                       }
                     });
}

}  // namespace detail

namespace detail {

/// The parts of the kernel for `forms`, form I writing its element vectors into values[I].
template <class Parts, class Forms, class Values, std::size_t... I>
Parts make_parts(const Forms& forms, Values& values, std::index_sequence<I...> /*forms*/) {
  return Parts{thrust::make_tuple(std::tuple_element_t<I, typename Parts::List>{
      std::get<I>(forms).integrand, std::get<I>(forms).test->view().element_nodes,
      values[I].view()}...)};
}

/// The element vectors of every part of `parts` over the elements of `quadrature`: each sample
/// built and its basis (with gradients when `Gradients`) evaluated once for all the parts.
template <class Element, bool Gradients, class Parts, quadrature::QuadratureRule Q, class Pack>
void linear_form_elements(const Parts& parts, const Q& quadrature, const Pack& pack,
                          memory::Arena& scratch) {
  using Domain = typename Q::DomainType;
  constexpr int dim = Domain::dimension;
  constexpr bool tabulated =
      Domain::kind == quadrature::ElementKind::cell && decltype(quadrature.view())::uniform;
  using GView = typename Domain::View::GeometryView;
  const auto domain = quadrature.domain().view();
  const auto q = quadrature.view();
  auto table = tabulate<BasisRow<Element>, tabulated>(q, scratch);
  constexpr bool map_table = tabulated && tabulate_map<GView>;
  auto geometry_rows = tabulate<GeometryRow<GView>, map_table>(q, scratch);
  const memory::ArrayView<const double> rows = table.view();
  const memory::ArrayView<const double> map_rows = geometry_rows.view();
  auto policy = memory::arena_policy(scratch, "integrate.thrust");
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), domain.element_count(),
                     [=] AFEM_HOST_DEVICE(std::int32_t e) {
                       constexpr auto each = Parts::each;
                       // Summed on the stack (no store of it can alias the integrand's loads),
                       // written once.
                       double local[Parts::local_size];
                       for (double& entry : local) {
                         entry = 0.0;
                       }
                       const ElementSamples<decltype(domain), decltype(q), map_table> samples(
                           domain, q, map_rows, e);
                       const NodePositions<Element, GView> nodes(domain.geometry,
                                                                 domain.element_cell(e));
                       for (std::int32_t p = 0; p < q.point_count(e); ++p) {
                         const Sample<dim> s = samples(p);
                         const auto basis = basis_at<Element, tabulated, GView, Gradients>(s, rows);
                         parts.add(local, each, e, s, basis, nodes, pack);
                       }
                       parts.store(local, e, each);
                     });
}

/// Each form's vector from its element vectors (values[I] for form I).
template <class Forms, class Values, std::size_t... I>
void sum_forms_node_pairs(const Forms& forms, const Values& values, memory::Arena& scratch,
                          std::index_sequence<I...> /*forms*/) {
  (sum_node_pairs<std::tuple_element_t<I, Forms>::components>(
       values[I].view(), std::get<I>(forms).test->view(), std::get<I>(forms).vector, scratch),
   ...);
}

}  // namespace detail

/// Assembles several linear forms over the same quadrature in one pass over its samples: each
/// sample is built and its basis evaluated once for all the forms (their test spaces share one
/// element; their component counts may differ), then each form's element vectors are summed per
/// node as integrate(vector, ...) sums them: every vector is the one that call assembles, the same
/// sums in the same order (the compiler may contract a product into a sum differently in the two
/// kernels: equal to rounding). Particle-to-grid transfers of mass and momentum are such a pair.
/// Scratch comes from `scratch` and is given back before returning; a call that throws (a size or
/// domain mismatch, afem::OutOfMemory) writes no vector.
template <quadrature::QuadratureRule Q, class... Tests, class... Integrands, class... Fields>
void integrate(const std::tuple<LinearForm<Tests, Integrands>...>& forms, const Q& quadrature,
               memory::Arena& scratch, const Fields&... fields) {
  using Domain = typename Q::DomainType;
  constexpr int dim = Domain::dimension;
  constexpr std::size_t count = sizeof...(Tests);
  static_assert(count >= 1, "integrate (linear forms): give at least one form");
  using Element = typename std::tuple_element_t<0, std::tuple<Tests...>>::Element;
  static_assert((std::is_same_v<typename Tests::Element, Element> && ...),
                "integrate (linear forms): the forms of one pass share their test element");
  (detail::check_linear_integrand<Integrands, dim, Tests::components, Fields...>(), ...);
  const auto check = [&](const auto& form) {
    detail::check_restriction(*form.test, quadrature, "test");
    detail::check_size(form.vector.size(),
                       static_cast<std::int64_t>(form.test->node_count()) * form.components,
                       "integrate (linear form)");
  };
  std::apply([&](const auto&... form) { (check(form), ...); }, forms);
  detail::check_fields_on(quadrature, "integrate", fields...);
  const auto pairs =
      static_cast<std::size_t>(quadrature.domain().element_count()) * Element::node_count;
  // Borrowed in the forms' order (a braced list runs left to right).
  std::array<memory::Temporary<double>, count> element_values{memory::borrow_temporary<double>(
      scratch, pairs * Tests::components, "integrate.element_vectors")...};
  using Parts =
      detail::LinearFormParts<detail::LinearFormPartOf<dim, Tests, Integrands, Fields...>...>;
  constexpr auto each = std::index_sequence_for<Tests...>{};
  constexpr bool gradients = (detail::reads_gradients<Integrands>() || ...);
  detail::linear_form_elements<Element, gradients>(
      detail::make_parts<Parts>(forms, element_values, each), quadrature,
      detail::make_field_pack(fields...), scratch);
  detail::sum_forms_node_pairs(forms, element_values, scratch, each);
}

/// Assembles the linear form sum over samples of weight * f(sample, test_i, fields...) into
/// `vector` (test.node_count() * components entries, overwritten; entries of nodes no element
/// touches become 0). Element vectors are summed per node in element order.
template <quadrature::QuadratureRule Q, class Test, class Integrand, class... Fields>
void integrate(memory::ArrayView<double> vector, const Q& quadrature, const Test& test,
               const Integrand& integrand, memory::Arena& scratch, const Fields&... fields) {
  integrate(std::tuple{LinearForm{vector, test, integrand}}, quadrature, scratch, fields...);
}

/// The integral sum over samples of weight * f(sample, fields...): a scalar, or a fixed-size
/// Eigen vector or matrix summed entry by entry. Element sums are reduced in a fixed order.
template <quadrature::QuadratureRule Q, class Integrand, class... Fields>
auto integrate(const Q& quadrature, const Integrand& integrand, memory::Arena& scratch,
               const Fields&... fields) {
  using Domain = typename Q::DomainType;
  constexpr int dim = Domain::dimension;
  static_assert(std::is_invocable_v<const Integrand&, const Sample<dim>&,
                                    const detail::FieldArgument<Fields>&...>,
                "integrate (integral): the integrand must be callable as f(sample, fields...)");
  using Result = std::decay_t<std::invoke_result_t<const Integrand&, const Sample<dim>&,
                                                   const detail::FieldArgument<Fields>&...>>;
  static_assert(detail::IntegrandValue<Result>,
                "integrate (integral): the integrand must return a scalar or a fixed-size Eigen "
                "vector or matrix");
  using Traits = detail::ValueTraits<Result>;
  constexpr int width = Traits::size;
  double total[width];
  detail::integral_sums<Result>(total, quadrature, integrand, scratch, fields...);
  return Traits::load(total);
}

}  // namespace afem::fem
