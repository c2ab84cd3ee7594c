// Grid<D>: closed-form lookup on the backend. Compiled by nvcc in the CUDA build.
#include "arenafem/geometry/grid.hpp"

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <string>

#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/geometry.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::geometry {

template <int D>
Grid<D>::Grid(std::array<double, D> origin, std::array<double, D> cell_size,
              std::array<std::int32_t, D> resolution) {
  std::int64_t cells = 1;
  for (int d = 0; d < D; ++d) {
    const auto axis = static_cast<std::size_t>(d);
    AFEM_EXPECTS(resolution[axis] > 0, "Grid: resolution " + std::to_string(resolution[axis]) +
                                           " along axis " + std::to_string(d) +
                                           "; expected at least one cell");
    AFEM_EXPECTS(cell_size[axis] > 0.0 && std::isfinite(cell_size[axis]),
                 "Grid: cell size " + std::to_string(cell_size[axis]) + " along axis " +
                     std::to_string(d) + "; expected a positive, finite size");
    AFEM_EXPECTS(std::isfinite(origin[axis]),
                 "Grid: origin along axis " + std::to_string(d) + " is not finite");
    cells *= resolution[axis] + 1;
    view_.origin[d] = origin[axis];
    view_.cell_size[d] = cell_size[axis];
    view_.inverse_cell_size[d] = 1.0 / cell_size[axis];
    view_.resolution[d] = resolution[axis];
  }
  AFEM_EXPECTS(cells < (std::int64_t{1} << 31),
               "Grid: " + std::to_string(cells) + " vertices exceed 32-bit indices");
  std::int64_t sides = 0;
  for (int a = 0; a < D; ++a) {
    std::int64_t family = view_.resolution[a] + 1;
    for (int d = 0; d < D; ++d) {
      family *= d == a ? 1 : view_.resolution[d];
    }
    sides += family;
  }
  AFEM_EXPECTS(sides < (std::int64_t{1} << 31),
               "Grid: " + std::to_string(sides) + " sides exceed 32-bit indices");
}

template <int D>
std::int32_t Grid<D>::vertex_count() const {
  std::int32_t n = 1;
  for (int d = 0; d < D; ++d) {
    n *= view_.resolution[d] + 1;
  }
  return n;
}

template <int D>
void Grid<D>::lookup(memory::ArrayView<const double> points, const LookupResult& result,
                     memory::Arena& scratch) const {
  const auto count = points.size() / D;
  check_lookup_buffers(points, result, D, "Grid::lookup");
  const View grid = view_;
  const auto out_cells = result.cells;
  const auto out_coords = result.coords;
  thrust::for_each_n(memory::arena_policy(scratch, "Grid.lookup.thrust"),
                     thrust::counting_iterator<std::int32_t>(0), static_cast<std::int32_t>(count),
                     [=] AFEM_HOST_DEVICE(std::int32_t p) {
                       typename View::Point x;
                       for (int d = 0; d < D; ++d) {
                         x[d] = points[static_cast<std::size_t>(p) * D + d];
                       }
                       std::int32_t cell = -1;
                       typename View::Coords xi = View::Coords::Zero();
                       if (!grid.locate(x, cell, xi)) {
                         cell = -1;
                         xi.setZero();
                       }
                       out_cells[static_cast<std::size_t>(p)] = cell;
                       for (int d = 0; d < D; ++d) {
                         out_coords[static_cast<std::size_t>(p) * D + d] = xi[d];
                       }
                     });
}

template <int D>
MeshData Grid<D>::to_mesh_data() const {
  std::array<std::int32_t, 3> resolution = {1, 1, 1};
  std::array<double, 3> lower = {0, 0, 0};
  std::array<double, 3> upper = {1, 1, 1};
  for (int d = 0; d < D; ++d) {
    const auto axis = static_cast<std::size_t>(d);
    resolution[axis] = view_.resolution[d];
    lower[axis] = view_.origin[d];
    upper[axis] = view_.origin[d] + view_.cell_size[d] * view_.resolution[d];
  }
  return box_mesh(View::cell_type, resolution, lower, upper);
}

template class Grid<2>;
template class Grid<3>;
static_assert(Geometry<Grid2D> && Geometry<Grid3D>);

}  // namespace afem::geometry
