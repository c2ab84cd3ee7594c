// CellBasedGeometryPartition: selections built on the backend. Compiled by nvcc in the CUDA build.
#include "arenafem/geometry/partition.hpp"

#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/fill.h>
#include <thrust/find.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <span>
#include <string>

#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::geometry {

namespace detail {

/// Marks the listed cells in `mask`; returns the position of the first index out of range, or
/// `cells.size()` when all are valid.
inline std::size_t mark_cells(memory::ArrayView<const std::int32_t> cells,
                              memory::ArrayView<std::uint8_t> mask, memory::Arena& arena) {
  auto policy = memory::arena_policy(arena, "Partition.thrust");
  const auto cell_total = static_cast<std::int32_t>(mask.size());
  const auto count = static_cast<std::int32_t>(cells.size());
  const std::int32_t bad = *thrust::find_if(
      policy, thrust::counting_iterator<std::int32_t>(0),
      thrust::counting_iterator<std::int32_t>(count), [=] AFEM_HOST_DEVICE(std::int32_t i) {
        const std::int32_t c = cells[static_cast<std::size_t>(i)];
        return c < 0 || c >= cell_total;
      });
  if (bad != count) {
    return static_cast<std::size_t>(bad);
  }
  thrust::fill(policy, mask.begin(), mask.end(), std::uint8_t{0});
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), count,
                     [=] AFEM_HOST_DEVICE(std::int32_t i) {
                       mask[static_cast<std::size_t>(cells[static_cast<std::size_t>(i)])] = 1;
                     });
  return cells.size();
}

/// Buffers sized for `capacity` (> 0) cells, sides and boundary sides, or to fit the counts.
template <class View>
void select(const View& mesh, memory::ArrayView<const std::uint8_t> mask, memory::Pool& pool,
            memory::Arena& arena, std::int32_t max_cells, bool with_sides,
            memory::Temporary<std::int32_t>& cells_slot,
            memory::Temporary<std::int32_t>& sides_slot,
            memory::Temporary<std::int32_t>& boundary_slot, std::int32_t (&counts)[3]) {
  auto policy = memory::arena_policy(arena, "Partition.thrust");
  const std::int32_t cell_total = mesh.cell_count();
  const std::int32_t side_total = mesh.side_count();
  const auto in_cells = [=] AFEM_HOST_DEVICE(std::int32_t c) {
    return mask[static_cast<std::size_t>(c)] != 0;
  };
  const auto in_sides = [=] AFEM_HOST_DEVICE(std::int32_t s) {
    const std::int32_t outer = mesh.side_outer_cell(s);
    return mask[static_cast<std::size_t>(mesh.side_inner_cell(s))] != 0 ||
           (outer >= 0 && mask[static_cast<std::size_t>(outer)] != 0);
  };
  const auto on_boundary = [=] AFEM_HOST_DEVICE(std::int32_t s) {
    const std::int32_t outer = mesh.side_outer_cell(s);
    const bool a = mask[static_cast<std::size_t>(mesh.side_inner_cell(s))] != 0;
    const bool b = outer >= 0 && mask[static_cast<std::size_t>(outer)] != 0;
    return a != b;
  };
  const thrust::counting_iterator<std::int32_t> first(0);
  const auto cell_count =
      static_cast<std::int32_t>(thrust::count_if(policy, first, first + cell_total, in_cells));
  if (max_cells > 0 && cell_count > max_cells) {
    throw Error("CellBasedGeometryPartition: " + std::to_string(cell_count) +
                " cells selected, above the capacity of " + std::to_string(max_cells));
  }
  // The sides max_cells cells can touch.
  const std::int64_t side_bound =
      std::min<std::int64_t>(side_total, std::int64_t{max_cells} * View::Cell::side_count);
  // The buffer of the `count` indices of [0, total) that pass `predicate`, filled.
  auto gather = [&](std::int32_t total, auto predicate, std::int64_t capacity, const char* label,
                    std::int32_t count) {
    const std::int64_t size = max_cells > 0 ? capacity : count;
    auto indices =
        memory::borrow_temporary<std::int32_t>(pool, static_cast<std::size_t>(size), label);
    if (count > 0) {
      thrust::copy_if(policy, first, first + total, indices.data(), predicate);
    }
    return indices;
  };
  const auto count_sides = [&](auto predicate) {
    return with_sides ? static_cast<std::int32_t>(
                            thrust::count_if(policy, first, first + side_total, predicate))
                      : 0;
  };
  const std::int32_t fresh[3] = {cell_count, count_sides(in_sides), count_sides(on_boundary)};
  auto cells = gather(cell_total, in_cells, max_cells, "Partition.cells", fresh[0]);
  auto sides = with_sides ? gather(side_total, in_sides, side_bound, "Partition.sides", fresh[1])
                          : memory::Temporary<std::int32_t>{};
  auto boundary =
      with_sides ? gather(side_total, on_boundary, side_bound, "Partition.boundary_sides", fresh[2])
                 : memory::Temporary<std::int32_t>{};
  memory::replace_owned(cells_slot, std::move(cells));
  memory::replace_owned(sides_slot, std::move(sides));
  memory::replace_owned(boundary_slot, std::move(boundary));
  for (int k = 0; k < 3; ++k) {
    counts[k] = fresh[k];
  }
}

}  // namespace detail

template <class Geometry>
void CellBasedGeometryPartition<Geometry>::select_cells(memory::ArrayView<const std::int32_t> cells,
                                                        memory::Arena& scratch) {
  auto mask = memory::borrow_temporary<std::uint8_t>(
      scratch, static_cast<std::size_t>(geometry_->cell_count()), "Partition.mask");
  const std::size_t bad = detail::mark_cells(cells, mask.view(), scratch);
  if (bad != cells.size()) {
    std::int32_t value = 0;
    memory::copy_to_host(std::span<std::int32_t>(&value, 1), cells.subview(bad, 1),
                         scratch.stream());
    throw Error("CellBasedGeometryPartition::select_cells: entry " + std::to_string(bad) +
                " is cell " + std::to_string(value) + ", expected a cell index in [0, " +
                std::to_string(geometry_->cell_count()) + ")");
  }
  select_mask(mask.view(), scratch);
}

template <class Geometry>
void CellBasedGeometryPartition<Geometry>::select_mask(memory::ArrayView<const std::uint8_t> mask,
                                                       memory::Arena& scratch) {
  AFEM_EXPECTS(mask.size() == static_cast<std::size_t>(geometry_->cell_count()),
               "CellBasedGeometryPartition::select_mask: " + std::to_string(mask.size()) +
                   " mask entries for " + std::to_string(geometry_->cell_count()) + " cells");
  detail::select(geometry_->view(), mask, *pool_, scratch, capacity_.max_cells, capacity_.sides,
                 cells_, sides_, boundary_sides_, counts_);
}

template <class Geometry>
CellBasedGeometryPartition<Geometry>::CellBasedGeometryPartition(const Geometry& geometry,
                                                                 memory::Pool& pool,
                                                                 PartitionCapacity capacity)
    : geometry_(&geometry), pool_(&pool), capacity_(capacity) {
  AFEM_EXPECTS(capacity.max_cells >= 0, "CellBasedGeometryPartition: max_cells is " +
                                            std::to_string(capacity.max_cells) + ", expected >= 0");
  capacity_.max_cells = std::min(capacity.max_cells, geometry.cell_count());
}

template class CellBasedGeometryPartition<Trimesh>;
template class CellBasedGeometryPartition<Quadmesh>;
template class CellBasedGeometryPartition<Tetmesh>;
template class CellBasedGeometryPartition<Hexmesh>;
template class CellBasedGeometryPartition<Grid2D>;
template class CellBasedGeometryPartition<Grid3D>;

}  // namespace afem::geometry
