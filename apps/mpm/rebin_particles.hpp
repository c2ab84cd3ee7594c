#pragma once

/// @file
/// rebin_particles(): the step's binning of the particles into a grid's PicQuadrature: locate
/// them, select the cells that hold them, restrict the space to those cells, bin. Used by
/// Simulation<D> for its grid and for each staggered velocity component's; compiled by nvcc in
/// the CUDA build.

#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::apps::mpm::detail {

/// Marks the cell of every located particle (particles outside the grid mark nothing). Equal
/// values may be written by several threads.
struct MarkLocatedCells {
  memory::ArrayView<const std::int32_t> cells;
  memory::ArrayView<std::uint8_t> mask;
  AFEM_HOST_DEVICE void operator()(std::size_t p) const {
    const std::int32_t cell = cells[p];
    if (cell >= 0) {
      mask[static_cast<std::size_t>(cell)] = 1;
    }
  }
};

/// Locates the particles in `quadrature`'s grid, selects the cells that hold them in
/// `partition`, restricts `restriction` to them and bins the particles.
template <class Quadrature, class Partition, class Restriction>
void rebin_particles(Quadrature& quadrature, Partition& partition, Restriction& restriction,
                     std::int32_t cell_count, memory::ArrayView<const double> positions,
                     memory::ArrayView<const double> volumes, memory::Arena& arena) {
  auto located = quadrature.locate(positions, volumes, arena);
  {
    auto mask = memory::borrow_temporary<std::uint8_t>(arena, static_cast<std::size_t>(cell_count),
                                                       "Mpm.active_mask");
    auto policy = memory::arena_policy(arena, "Mpm.thrust");
    thrust::fill(policy, mask.view().begin(), mask.view().end(), std::uint8_t{0});
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0),
                       static_cast<std::size_t>(located.count()),
                       MarkLocatedCells{located.cells(), mask.view()});
    partition.select_mask(mask.view(), arena);
  }
  restriction.rebuild(arena);
  quadrature.bin(std::move(located), arena);
}

}  // namespace afem::apps::mpm::detail
