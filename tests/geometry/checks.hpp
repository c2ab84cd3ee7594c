#pragma once

/// @file
/// Kernels shared by the geometry tests: evaluate a functor per cell or side on the backend and
/// bring the results to the host. Work for MeshView and GridView alike.

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <span>
#include <vector>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::geometry::checks {

using memory::ArrayView;

/// Runs `f(view, index, out)` for one index on the backend, `width` outputs per index.
template <class View, class F>
struct EvaluateKernel {
  View view;
  F f;
  double* out;
  int width;
  AFEM_HOST_DEVICE void operator()(std::int32_t i) const {
    f(view, i, out + static_cast<std::size_t>(i) * width);
  }
};

/// Evaluates `f` for indices [0, count) of `mesh` on the backend and returns the outputs on the
/// host.
template <class MeshType, class F>
inline std::vector<double> evaluate(const MeshType& mesh, memory::Arena& arena, std::int32_t count,
                                    int width, F f) {
  auto out =
      memory::borrow_temporary<double>(arena, static_cast<std::size_t>(count) * width, "test.out");
  using View = typename MeshType::View;
  thrust::for_each_n(memory::arena_policy(arena), thrust::counting_iterator<std::int32_t>(0), count,
                     EvaluateKernel<View, F>{mesh.view(), f, out.data(), width});
  std::vector<double> host(out.size());
  memory::copy_to_host(std::span<double>(host), ArrayView<const double>(out.view()),
                       arena.stream());
  return host;
}

struct CellMeasure {
  template <class View>
  AFEM_HOST_DEVICE void operator()(const View& view, std::int32_t c, double* out) const {
    out[0] = view.cell_measure(c);
  }
};

/// Per side: outer cell (-1 on the boundary); normal . (outer centroid, or the side point, minus
/// the inner centroid); distance between the side point seen from the inner and the outer cell.
struct SideCheck {
  template <class View>
  AFEM_HOST_DEVICE static typename View::Point centroid(const View& view, std::int32_t c) {
    typename View::Point sum = View::Point::Zero();
    for (int v = 0; v < View::Cell::vertex_count; ++v) {
      sum += view.cell_vertex(c, v);
    }
    return sum / static_cast<double>(View::Cell::vertex_count);
  }
  template <class View>
  AFEM_HOST_DEVICE void operator()(const View& view, std::int32_t s, double* out) const {
    typename View::SideCoords point;
    for (int d = 0; d < View::dimension - 1; ++d) {
      point[d] = 0.2 + 0.1 * d;
    }
    const std::int32_t inner = view.side_inner_cell(s);
    const std::int32_t outer = view.side_outer_cell(s);
    const typename View::Point x = view.cell_position(inner, view.side_inner_coords(s, point));
    const typename View::Point target = outer >= 0 ? centroid(view, outer) : x;
    out[0] = outer;
    out[1] = view.side_normal(s).dot(target - centroid(view, inner));
    out[2] =
        outer >= 0 ? (view.cell_position(outer, view.side_outer_coords(s, point)) - x).norm() : 0.0;
  }
};

}  // namespace afem::geometry::checks
