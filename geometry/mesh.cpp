// Mesh<Type>: validation on the host, topology and lookup bins on the backend (Thrust with scratch
// from the arena). Compiled by nvcc in the CUDA build.
#include "arenafem/geometry/mesh.hpp"

#include "arenafem/geometry/geometry.hpp"

#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/fill.h>
#include <thrust/find.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/radix_sort.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/sort_rows.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::geometry {

namespace detail {

using memory::ArrayView;
using memory::Temporary;

constexpr int max_side_vertices = 4;
/// Local side or vertex index of the missing outer cell of a boundary side.
constexpr std::uint8_t no_local = 0xFF;
/// Marks, during the build, an outer cell that sees the side in the same order as the inner one.
constexpr std::uint8_t same_orientation = 0xFE;

/// Throws afem::Error naming the first cell whose vertices are out of range or whose map is
/// inverted or degenerate at one of its vertices.
template <CellType Type>
void validate_cells(std::span<const double> positions, std::span<const std::int32_t> cells,
                    std::string_view what) {
  using Cell = ReferenceCell<Type>;
  constexpr int dim = Cell::dimension;
  const auto vertex_total = static_cast<std::int64_t>(positions.size() / dim);
  const auto cell_total = static_cast<std::int32_t>(cells.size() / Cell::vertex_count);
  for (const double value : positions) {
    AFEM_EXPECTS(std::isfinite(value), std::string(what) + ": a vertex position is not finite");
  }
  MeshView<Type> host;
  host.positions = ArrayView<const double>(positions.data(), positions.size());
  host.cells = ArrayView<const std::int32_t>(cells.data(), cells.size());
  for (std::int32_t c = 0; c < cell_total; ++c) {
    double scale = 0.0;
    for (int v = 0; v < Cell::vertex_count; ++v) {
      const std::int32_t index = cells[static_cast<std::size_t>(c) * Cell::vertex_count + v];
      if (index < 0 || index >= vertex_total) {
        throw Error(std::string(what) + ": cell " + std::to_string(c) + " vertex " +
                    std::to_string(v) + " is " + std::to_string(index) +
                    ", expected an index in [0, " + std::to_string(vertex_total) + ")");
      }
    }
    for (int v = 1; v < Cell::vertex_count; ++v) {
      scale = std::max(scale, (host.cell_vertex(c, v) - host.cell_vertex(c, 0)).norm());
    }
    for (int v = 0; v < Cell::vertex_count; ++v) {
      typename MeshView<Type>::Coords xi;
      for (int d = 0; d < dim; ++d) {
        xi[d] = Cell::vertex_coordinate(v, d);
      }
      const double det = host.cell_jacobian(c, xi).determinant();
      const double tolerance = 1e-12 * std::pow(scale, dim);
      if (!(det > tolerance)) {
        throw Error(std::string(what) + ": cell " + std::to_string(c) + " is " +
                    (det < -tolerance ? "inverted" : "degenerate") + " (Jacobian determinant " +
                    std::to_string(det) + " at its vertex " + std::to_string(v) +
                    "); expected positively oriented cells in " + std::string(name(Type)) +
                    " vertex order");
      }
    }
  }
}

/// The sorted vertex tuple of `count` vertices (padded with INT_MAX), the key sides are matched by.
AFEM_HOST_DEVICE inline void side_key(const std::int32_t* vertices, int count,
                                      std::int32_t (&tuple)[max_side_vertices]) {
  for (int j = 0; j < max_side_vertices; ++j) {
    tuple[j] = j < count ? vertices[j] : INT_MAX;
  }
  for (int a = 1; a < count; ++a) {  // insertion sort of at most 4 values
    for (int b = a; b > 0 && tuple[b - 1] > tuple[b]; --b) {
      const std::int32_t t = tuple[b];
      tuple[b] = tuple[b - 1];
      tuple[b - 1] = t;
    }
  }
}

/// The key of local side `local` of cell `c` (see side_key).
template <class Cell>
AFEM_HOST_DEVICE void cell_side_key(ArrayView<const std::int32_t> cells, std::int32_t c, int local,
                                    std::int32_t (&tuple)[max_side_vertices]) {
  std::int32_t vertices[max_side_vertices] = {0, 0, 0, 0};
  for (int j = 0; j < Cell::side_vertex_count; ++j) {
    vertices[j] =
        cells[static_cast<std::size_t>(c) * Cell::vertex_count + Cell::side_vertex(local, j)];
  }
  side_key(vertices, Cell::side_vertex_count, tuple);
}

/// Topology in fresh buffers, swapped into the mesh only when complete.
struct Topology {
  Temporary<std::int32_t> side_cells;
  Temporary<std::uint8_t> side_local;
  Temporary<std::uint8_t> side_outer_vertex;
  Temporary<std::int32_t> boundary_sides;
  Temporary<std::int32_t> side_tags;
};

template <CellType Type>
Topology build_topology(ArrayView<const std::int32_t> cells, memory::Pool& pool,
                        memory::Arena& arena) {
  using Cell = ReferenceCell<Type>;
  constexpr int vertices_per_cell = Cell::vertex_count;
  constexpr int sides_per_cell = Cell::side_count;
  constexpr int vertices_per_side = Cell::side_vertex_count;
  const auto cell_total = static_cast<std::int32_t>(cells.size() / vertices_per_cell);
  const auto n = static_cast<std::int32_t>(cell_total * sides_per_cell);
  auto policy = memory::arena_policy(arena, "Mesh.topology.thrust");

  auto keys = memory::borrow_temporary<std::int32_t>(
      arena, static_cast<std::size_t>(n) * max_side_vertices, "Mesh.topology.keys");
  auto order = memory::borrow_temporary<std::int32_t>(arena, static_cast<std::size_t>(n),
                                                      "Mesh.topology.order");
  auto head = memory::borrow_temporary<std::int32_t>(arena, static_cast<std::size_t>(n),
                                                     "Mesh.topology.head");
  auto side_of = memory::borrow_temporary<std::int32_t>(arena, static_cast<std::size_t>(n),
                                                        "Mesh.topology.side_of");
  const auto k = keys.view();
  const auto o = order.view();
  const auto h = head.view();
  const auto id = side_of.view();

  // Each (cell, local side) gets the sorted tuple of its global vertex indices as key.
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), n,
                     [=] AFEM_HOST_DEVICE(std::int32_t e) {
                       std::int32_t tuple[max_side_vertices];
                       cell_side_key<Cell>(cells, e / sides_per_cell, e % sides_per_cell, tuple);
                       for (int j = 0; j < max_side_vertices; ++j) {
                         k[static_cast<std::size_t>(e) * max_side_vertices + j] = tuple[j];
                       }
                     });
  memory::sort_rows(k, max_side_vertices, o, arena);
  auto same_key = [=] AFEM_HOST_DEVICE(std::int32_t a, std::int32_t b) {
    for (int j = 0; j < max_side_vertices; ++j) {
      if (k[static_cast<std::size_t>(a) * max_side_vertices + j] !=
          k[static_cast<std::size_t>(b) * max_side_vertices + j]) {
        return false;
      }
    }
    return true;
  };
  thrust::for_each_n(
      policy, thrust::counting_iterator<std::int32_t>(0), n, [=] AFEM_HOST_DEVICE(std::int32_t i) {
        h[static_cast<std::size_t>(i)] =
            i == 0 || !same_key(o[static_cast<std::size_t>(i)], o[static_cast<std::size_t>(i) - 1])
                ? 1
                : 0;
      });
  // Side index of each sorted entry: the number of heads up to and including it, minus one.
  thrust::inclusive_scan(policy, h.begin(), h.end(), id.begin());

  // A side shared by more than two cells makes the mesh non-manifold.
  const std::int32_t crowded = *thrust::find_if(
      policy, thrust::counting_iterator<std::int32_t>(0),
      thrust::counting_iterator<std::int32_t>(n), [=] AFEM_HOST_DEVICE(std::int32_t i) {
        return i + 2 < n && h[static_cast<std::size_t>(i)] == 1 &&
               h[static_cast<std::size_t>(i) + 1] == 0 && h[static_cast<std::size_t>(i) + 2] == 0;
      });
  if (crowded != n) {
    std::int32_t entry = 0;
    memory::copy_to_host(std::span<std::int32_t>(&entry, 1),
                         ArrayView<const std::int32_t>(o.data() + crowded, 1), arena.stream());
    throw Error("Mesh: side " + std::to_string(entry % sides_per_cell) + " of cell " +
                std::to_string(entry / sides_per_cell) +
                " is shared by more than two cells; expected a conforming, manifold mesh");
  }

  std::int32_t side_total = 0;
  memory::copy_to_host(std::span<std::int32_t>(&side_total, 1),
                       ArrayView<const std::int32_t>(id.data() + (n - 1), 1), arena.stream());

  auto side_cells_buffer = memory::borrow_temporary<std::int32_t>(
      pool, 2 * static_cast<std::size_t>(side_total), "Mesh.side_cells");
  auto side_local_buffer = memory::borrow_temporary<std::uint8_t>(
      pool, 2 * static_cast<std::size_t>(side_total), "Mesh.side_local");
  auto outer_vertex_buffer = memory::borrow_temporary<std::uint8_t>(
      pool, static_cast<std::size_t>(side_total) * vertices_per_side, "Mesh.side_outer_vertex");
  const auto side_cells = side_cells_buffer.view();
  const auto side_local = side_local_buffer.view();
  const auto outer_vertex = outer_vertex_buffer.view();
  thrust::for_each_n(
      policy, thrust::counting_iterator<std::int32_t>(0), n, [=] AFEM_HOST_DEVICE(std::int32_t i) {
        const auto at = static_cast<std::size_t>(i);
        const std::int32_t e = o[at];
        const auto side = static_cast<std::size_t>(id[at] - 1);
        const std::int32_t c = e / sides_per_cell;
        const int local = e % sides_per_cell;
        if (h[at] == 1) {
          side_cells[2 * side] = c;
          side_local[2 * side] = static_cast<std::uint8_t>(local);
          if (i + 1 == n || h[at + 1] == 1) {  // no second cell: a boundary side
            side_cells[2 * side + 1] = -1;
            side_local[2 * side + 1] = no_local;
            for (int j = 0; j < vertices_per_side; ++j) {
              outer_vertex[side * vertices_per_side + j] = no_local;
            }
          }
          return;
        }
        side_cells[2 * side + 1] = c;
        side_local[2 * side + 1] = static_cast<std::uint8_t>(local);
        const std::int32_t inner = o[at - 1];
        int position[max_side_vertices] = {0, 0, 0,
                                           0};  // where inner's side vertex j sits in outer's
        for (int j = 0; j < vertices_per_side; ++j) {
          const std::int32_t global =
              cells[static_cast<std::size_t>(inner / sides_per_cell) * vertices_per_cell +
                    Cell::side_vertex(inner % sides_per_cell, j)];
          for (int m = 0; m < vertices_per_side; ++m) {
            const int vertex = Cell::side_vertex(local, m);
            if (cells[static_cast<std::size_t>(c) * vertices_per_cell + vertex] == global) {
              outer_vertex[side * vertices_per_side + j] = static_cast<std::uint8_t>(vertex);
              position[j] = m;
            }
          }
        }
        // Two positively oriented cells see their common side in opposite vertex order; the same
        // order means the cells overlap (or one is listed twice).
        for (int j = 0; j < vertices_per_side; ++j) {
          const int next = position[(j + 1) % vertices_per_side];
          if (next != (position[j] + vertices_per_side - 1) % vertices_per_side) {
            side_local[2 * side + 1] = same_orientation;
          }
        }
      });

  const std::int32_t overlapping = *thrust::find_if(
      policy, thrust::counting_iterator<std::int32_t>(0),
      thrust::counting_iterator<std::int32_t>(side_total), [=] AFEM_HOST_DEVICE(std::int32_t s) {
        return side_local[2 * static_cast<std::size_t>(s) + 1] == same_orientation;
      });
  if (overlapping != side_total) {
    std::int32_t pair[2] = {0, 0};
    memory::copy_to_host(std::span<std::int32_t>(pair, 2),
                         ArrayView<const std::int32_t>(
                             side_cells.data() + 2 * static_cast<std::size_t>(overlapping), 2),
                         arena.stream());
    throw Error("Mesh: cells " + std::to_string(pair[0]) + " and " + std::to_string(pair[1]) +
                " list their common side in the same vertex order: they overlap or repeat; "
                "expected a conforming mesh of positively oriented cells");
  }

  const auto on_boundary = [=] AFEM_HOST_DEVICE(std::int32_t side) {
    return side_cells[2 * static_cast<std::size_t>(side) + 1] < 0;
  };
  const auto boundary_total = static_cast<std::size_t>(
      thrust::count_if(policy, thrust::counting_iterator<std::int32_t>(0),
                       thrust::counting_iterator<std::int32_t>(side_total), on_boundary));
  auto boundary_buffer =
      memory::borrow_temporary<std::int32_t>(pool, boundary_total, "Mesh.boundary_sides");
  if (boundary_total > 0) {
    thrust::copy_if(policy, thrust::counting_iterator<std::int32_t>(0),
                    thrust::counting_iterator<std::int32_t>(side_total), boundary_buffer.data(),
                    on_boundary);
  }
  auto side_tags_buffer = memory::borrow_temporary<std::int32_t>(
      pool, static_cast<std::size_t>(side_total), "Mesh.side_tags");
  const auto side_tags = side_tags_buffer.view();
  thrust::fill(policy, side_tags.begin(), side_tags.end(), std::int32_t{0});
  return Topology{std::move(side_cells_buffer), std::move(side_local_buffer),
                  std::move(outer_vertex_buffer), std::move(boundary_buffer),
                  std::move(side_tags_buffer)};
}

/// Writes into `topology.side_tags` the tag of every side listed in `tagged_vertices` (side
/// vertex tuples) with `tagged_tags`; other sides keep 0. Throws afem::Error naming the first
/// tagged side that is not a side of any cell, or two tagged sides with the same vertices.
template <CellType Type>
void match_tagged_sides(ArrayView<const std::int32_t> cells,
                        ArrayView<const std::int32_t> tagged_vertices,
                        ArrayView<const std::int32_t> tagged_tags, Topology& topology,
                        memory::Arena& arena) {
  using Cell = ReferenceCell<Type>;
  constexpr int vertices_per_side = Cell::side_vertex_count;
  const auto tagged = static_cast<std::int32_t>(tagged_tags.size());
  if (tagged == 0) {
    return;
  }
  auto policy = memory::arena_policy(arena, "Mesh.side_tags.thrust");
  auto keys = memory::borrow_temporary<std::int32_t>(
      arena, static_cast<std::size_t>(tagged) * max_side_vertices, "Mesh.side_tags.keys");
  auto order = memory::borrow_temporary<std::int32_t>(arena, static_cast<std::size_t>(tagged),
                                                      "Mesh.side_tags.order");
  auto matched = memory::borrow_temporary<std::uint8_t>(arena, static_cast<std::size_t>(tagged),
                                                        "Mesh.side_tags.matched");
  const auto k = keys.view();
  const auto o = order.view();
  const auto m = matched.view();
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), tagged,
                     [=] AFEM_HOST_DEVICE(std::int32_t t) {
                       std::int32_t tuple[max_side_vertices];
                       side_key(
                           tagged_vertices.data() + static_cast<std::size_t>(t) * vertices_per_side,
                           vertices_per_side, tuple);
                       for (int j = 0; j < max_side_vertices; ++j) {
                         k[static_cast<std::size_t>(t) * max_side_vertices + j] = tuple[j];
                       }
                       m[static_cast<std::size_t>(t)] = 0;
                     });
  memory::sort_rows(k, max_side_vertices, o, arena);
  // -1 for an entry before which none is the same, else the one it repeats.
  const auto compare = [=] AFEM_HOST_DEVICE(std::int32_t row, const std::int32_t(&tuple)[4]) {
    for (int j = 0; j < max_side_vertices; ++j) {
      const std::int32_t a = k[static_cast<std::size_t>(row) * max_side_vertices + j];
      if (a != tuple[j]) {
        return a < tuple[j] ? -1 : 1;
      }
    }
    return 0;
  };
  const std::int32_t repeated = *thrust::find_if(
      policy, thrust::counting_iterator<std::int32_t>(1),
      thrust::counting_iterator<std::int32_t>(tagged), [=] AFEM_HOST_DEVICE(std::int32_t i) {
        std::int32_t tuple[max_side_vertices];
        for (int j = 0; j < max_side_vertices; ++j) {
          tuple[j] =
              k[static_cast<std::size_t>(o[static_cast<std::size_t>(i)]) * max_side_vertices + j];
        }
        return compare(o[static_cast<std::size_t>(i) - 1], tuple) == 0;
      });
  if (repeated != tagged) {
    std::int32_t pair[2] = {0, 0};
    memory::copy_to_host(std::span<std::int32_t>(pair, 2),
                         ArrayView<const std::int32_t>(o.data() + repeated - 1, 2), arena.stream());
    throw Error("Mesh: tagged sides " + std::to_string(std::min(pair[0], pair[1])) + " and " +
                std::to_string(std::max(pair[0], pair[1])) +
                " have the same vertices; expected each side tagged once");
  }
  const auto side_cells = ArrayView<const std::int32_t>(topology.side_cells.view());
  const auto side_local = ArrayView<const std::uint8_t>(topology.side_local.view());
  const auto side_tags = topology.side_tags.view();
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0),
                     static_cast<std::int32_t>(side_tags.size()),
                     [=] AFEM_HOST_DEVICE(std::int32_t side) {
                       std::int32_t tuple[max_side_vertices];
                       cell_side_key<Cell>(cells, side_cells[2 * static_cast<std::size_t>(side)],
                                           side_local[2 * static_cast<std::size_t>(side)], tuple);
                       std::int32_t low = 0;
                       std::int32_t high = tagged;
                       while (low < high) {  // first sorted entry not below the side's key
                         const std::int32_t mid = low + (high - low) / 2;
                         if (compare(o[static_cast<std::size_t>(mid)], tuple) < 0) {
                           low = mid + 1;
                         } else {
                           high = mid;
                         }
                       }
                       if (low < tagged && compare(o[static_cast<std::size_t>(low)], tuple) == 0) {
                         const auto t = static_cast<std::size_t>(o[static_cast<std::size_t>(low)]);
                         side_tags[static_cast<std::size_t>(side)] = tagged_tags[t];
                         m[t] = 1;
                       }
                     });
  const std::int32_t unmatched = *thrust::find_if(
      policy, thrust::counting_iterator<std::int32_t>(0),
      thrust::counting_iterator<std::int32_t>(tagged),
      [=] AFEM_HOST_DEVICE(std::int32_t t) { return m[static_cast<std::size_t>(t)] == 0; });
  if (unmatched != tagged) {
    std::int32_t vertices[max_side_vertices] = {0, 0, 0, 0};
    memory::copy_to_host(
        std::span<std::int32_t>(vertices, vertices_per_side),
        ArrayView<const std::int32_t>(
            tagged_vertices.data() + static_cast<std::size_t>(unmatched) * vertices_per_side,
            vertices_per_side),
        arena.stream());
    std::string list;
    for (int j = 0; j < vertices_per_side; ++j) {
      list += (j > 0 ? ", " : "") + std::to_string(vertices[j]);
    }
    throw Error("Mesh: tagged side " + std::to_string(unmatched) + " (vertices " + list +
                ") is not a side of any cell");
  }
}

/// Uniform bins over the mesh's bounding box, each listing the cells whose bounding box meets it.
struct BinBuffers {
  Temporary<std::int32_t> offsets;
  Temporary<std::int32_t> cells;
};

template <int Dim>
struct BinGrid {
  double origin[Dim];
  double size[Dim];
  std::int32_t counts[Dim];

  AFEM_HOST_DEVICE std::int32_t clamp_index(int d, double x) const {
    const double t = std::floor((x - origin[d]) / size[d]);
    if (t < 0.0) {
      return 0;
    }
    return t >= counts[d] ? counts[d] - 1 : static_cast<std::int32_t>(t);
  }
  AFEM_HOST_DEVICE std::int32_t total() const {
    std::int32_t n = 1;
    for (int d = 0; d < Dim; ++d) {
      n *= counts[d];
    }
    return n;
  }
};

template <CellType Type>
BinGrid<ReferenceCell<Type>::dimension> bin_grid(std::span<const double> positions,
                                                 std::int32_t cell_total) {
  constexpr int dim = ReferenceCell<Type>::dimension;
  BinGrid<dim> grid{};
  double lower[dim];
  double upper[dim];
  for (int d = 0; d < dim; ++d) {
    lower[d] = std::numeric_limits<double>::max();
    upper[d] = std::numeric_limits<double>::lowest();
  }
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const int d = static_cast<int>(i % dim);
    lower[d] = std::min(lower[d], positions[i]);
    upper[d] = std::max(upper[d], positions[i]);
  }
  // About one cell per bin: bins of equal size h along every axis with extent / h of them.
  double volume = 1.0;
  int spanned = 0;
  for (int d = 0; d < dim; ++d) {
    if (upper[d] > lower[d]) {
      volume *= upper[d] - lower[d];
      ++spanned;
    }
  }
  const double h = spanned == 0 ? 1.0 : std::pow(volume / std::max(cell_total, 1), 1.0 / spanned);
  for (int d = 0; d < dim; ++d) {
    const double extent = std::max(upper[d] - lower[d], 1e-300);
    grid.counts[d] = static_cast<std::int32_t>(std::clamp(std::round(extent / h), 1.0, 1024.0));
    grid.origin[d] = lower[d];
    grid.size[d] = extent / grid.counts[d];
  }
  return grid;
}

template <CellType Type>
BinBuffers build_bins(const MeshView<Type>& mesh,
                      const BinGrid<ReferenceCell<Type>::dimension>& grid, memory::Pool& pool,
                      memory::Arena& arena) {
  using Cell = ReferenceCell<Type>;
  constexpr int dim = Cell::dimension;
  const std::int32_t cell_total = mesh.cell_count();
  auto policy = memory::arena_policy(arena, "Mesh.bins.thrust");

  // The range of bins each cell's bounding box covers, as lower and upper bin index per axis.
  auto range = memory::borrow_temporary<std::int32_t>(
      arena, static_cast<std::size_t>(cell_total) * 2 * dim, "Mesh.bins.range");
  auto count = memory::borrow_temporary<std::int32_t>(
      arena, static_cast<std::size_t>(cell_total) + 1, "Mesh.bins.count");
  const auto r = range.view();
  const auto cnt = count.view();
  thrust::for_each_n(
      policy, thrust::counting_iterator<std::int32_t>(0), cell_total,
      [=] AFEM_HOST_DEVICE(std::int32_t c) {
        std::int32_t bins = 1;
        for (int d = 0; d < dim; ++d) {
          double lo = mesh.cell_vertex(c, 0)[d];
          double hi = lo;
          for (int v = 1; v < Cell::vertex_count; ++v) {
            const double x = mesh.cell_vertex(c, v)[d];
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
          }
          const std::int32_t a = grid.clamp_index(d, lo);
          // A box ending exactly on a bin boundary does not reach into the next bin.
          const std::int32_t b_shrunk = grid.clamp_index(d, hi - 1e-9 * grid.size[d]);
          const std::int32_t b = b_shrunk < a ? a : b_shrunk;
          r[static_cast<std::size_t>(c) * 2 * dim + 2 * static_cast<std::size_t>(d)] = a;
          r[static_cast<std::size_t>(c) * 2 * dim + 2 * static_cast<std::size_t>(d) + 1] = b;
          bins *= b - a + 1;
        }
        cnt[static_cast<std::size_t>(c)] = bins;
      });
  thrust::fill_n(policy, cnt.begin() + cell_total, 1, 0);
  const std::int64_t pairs = thrust::reduce(policy, cnt.begin(), cnt.end(), std::int64_t{0});
  if (pairs > std::numeric_limits<std::int32_t>::max()) {
    throw Error("Mesh: lookup bins would list " + std::to_string(pairs) +
                " (cell, bin) pairs, beyond 32-bit offsets; the cells are far larger than a bin");
  }
  thrust::exclusive_scan(policy, cnt.begin(), cnt.end(), cnt.begin());
  std::int32_t pair_total = 0;
  memory::copy_to_host(std::span<std::int32_t>(&pair_total, 1),
                       ArrayView<const std::int32_t>(cnt.data() + cell_total, 1), arena.stream());

  auto bin_of_pair = memory::borrow_temporary<std::int32_t>(
      arena, static_cast<std::size_t>(pair_total), "Mesh.bins.keys");
  auto bin_cells = memory::borrow_temporary<std::int32_t>(
      pool, static_cast<std::size_t>(pair_total), "Mesh.bin_cells");
  auto bin_offsets = memory::borrow_temporary<std::int32_t>(
      pool, static_cast<std::size_t>(grid.total()) + 1, "Mesh.bin_offsets");
  const auto keys = bin_of_pair.view();
  const auto values = bin_cells.view();
  thrust::for_each_n(policy, thrust::counting_iterator<std::int32_t>(0), cell_total,
                     [=] AFEM_HOST_DEVICE(std::int32_t c) {
                       const std::int32_t* box = r.data() + static_cast<std::size_t>(c) * 2 * dim;
                       std::int32_t out = cnt[static_cast<std::size_t>(c)];
                       std::int32_t index[3] = {box[0], dim > 1 ? box[2] : 0, dim > 2 ? box[4] : 0};
                       while (true) {
                         std::int32_t bin = 0;
                         for (int d = dim - 1; d >= 0; --d) {
                           bin = bin * grid.counts[d] + index[d];
                         }
                         keys[static_cast<std::size_t>(out)] = bin;
                         values[static_cast<std::size_t>(out)] = c;
                         ++out;
                         int d = 0;
                         for (; d < dim; ++d) {  // odometer over the bin range
                           if (index[d] < box[2 * static_cast<std::size_t>(d) + 1]) {
                             ++index[d];
                             break;
                           }
                           index[d] = box[2 * static_cast<std::size_t>(d)];
                         }
                         if (d == dim) {
                           break;
                         }
                       }
                     });
  memory::radix_sort_by_key(keys, values, arena);
  thrust::lower_bound(policy, keys.begin(), keys.end(), thrust::counting_iterator<std::int32_t>(0),
                      thrust::counting_iterator<std::int32_t>(grid.total() + 1),
                      bin_offsets.data());
  return BinBuffers{std::move(bin_offsets), std::move(bin_cells)};
}

/// Reference coordinates of `x` in `cell` (closed form on simplices, Newton on multilinear cells);
/// true when the point lies in the cell (within a small tolerance).
template <CellType Type>
AFEM_HOST_DEVICE bool locate(const MeshView<Type>& mesh, std::int32_t cell,
                             const typename MeshView<Type>::Point& x,
                             typename MeshView<Type>::Coords& xi) {
  using Cell = ReferenceCell<Type>;
  constexpr int dim = Cell::dimension;
  constexpr double tolerance = 1e-10;
  if constexpr (Cell::simplex) {
    xi = mesh.cell_jacobian(cell, MeshView<Type>::Coords::Zero()).inverse() *
         (x - mesh.cell_vertex(cell, 0));
    double sum = 0.0;
    for (int d = 0; d < dim; ++d) {
      if (xi[d] < -tolerance) {
        return false;
      }
      sum += xi[d];
    }
    return sum <= 1.0 + tolerance;
  } else {
    xi.setConstant(0.5);
    bool converged = false;
    for (int iteration = 0; iteration < 30 && !converged; ++iteration) {
      const auto residual = (mesh.cell_position(cell, xi) - x).eval();
      const auto step = (mesh.cell_jacobian(cell, xi).inverse() * residual).eval();
      xi -= step;
      converged = step.norm() < 1e-12;  // reference coordinates are O(1): a relative test
      for (int d = 0; d < dim; ++d) {
        if (!(xi[d] > -2.0 && xi[d] < 3.0)) {
          return false;  // wandering far outside: the point is not in this cell
        }
      }
    }
    if (!converged) {
      return false;
    }
    for (int d = 0; d < dim; ++d) {
      if (!(xi[d] >= -tolerance && xi[d] <= 1.0 + tolerance)) {
        return false;
      }
    }
    return true;
  }
}

}  // namespace detail

void check_lookup_buffers(memory::ArrayView<const double> points, const LookupResult& result,
                          int dimension, std::string_view who) {
  const auto dim = static_cast<std::size_t>(dimension);
  AFEM_EXPECTS(points.size() % dim == 0 && result.cells.size() == points.size() / dim &&
                   result.coords.size() == points.size(),
               std::string(who) + ": " + std::to_string(points.size()) + " point values, " +
                   std::to_string(result.cells.size()) + " cell slots and " +
                   std::to_string(result.coords.size()) + " coordinate slots do not match");
}

template <CellType Type>
Mesh<Type>::Mesh(const MeshData& data, memory::Pool& pool, memory::Arena& scratch) : pool_(&pool) {
  AFEM_EXPECTS(data.cell_type == Type, "Mesh<" + std::string(name(Type)) + ">: the data holds " +
                                           std::string(name(data.cell_type)) + " cells");
  AFEM_EXPECTS(data.positions.size() % dimension == 0,
               "Mesh: " + std::to_string(data.positions.size()) +
                   " position values is not a multiple of the dimension " +
                   std::to_string(dimension));
  AFEM_EXPECTS(data.cells.size() % Cell::vertex_count == 0,
               "Mesh: " + std::to_string(data.cells.size()) +
                   " connectivity entries is not a multiple of " +
                   std::to_string(Cell::vertex_count));
  AFEM_EXPECTS(!data.cells.empty(), "Mesh: no cells; expected at least one");
  AFEM_EXPECTS(
      data.cell_tags.empty() || data.cell_tags.size() == data.cells.size() / Cell::vertex_count,
      "Mesh: " + std::to_string(data.cell_tags.size()) + " cell tags for " +
          std::to_string(data.cells.size() / Cell::vertex_count) + " cells");
  AFEM_EXPECTS(data.cells.size() / Cell::vertex_count * Cell::side_count <=
                   static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()),
               "Mesh: " + std::to_string(data.cells.size() / Cell::vertex_count) +
                   " cells have more sides than 32-bit indices can number");
  detail::validate_cells<Type>(data.positions, data.cells, "Mesh");
  check_consistent(data, "Mesh");  // what is left to check: the tagged sides
  vertex_count_ = static_cast<std::int32_t>(data.positions.size() / dimension);
  cell_count_ = static_cast<std::int32_t>(data.cells.size() / Cell::vertex_count);

  const memory::Stream& stream = pool.stream();
  auto positions = memory::borrow_temporary<double>(pool, data.positions.size(), "Mesh.positions");
  auto cells = memory::borrow_temporary<std::int32_t>(pool, data.cells.size(), "Mesh.cells");
  auto tags = memory::borrow_temporary<std::int32_t>(pool, static_cast<std::size_t>(cell_count_),
                                                     "Mesh.cell_tags");
  memory::copy_to_device(positions.view(), std::span<const double>(data.positions), stream);
  memory::copy_to_device(cells.view(), std::span<const std::int32_t>(data.cells), stream);
  const std::vector<std::int32_t> zeros(
      data.cell_tags.empty() ? static_cast<std::size_t>(cell_count_) : 0, 0);
  memory::copy_to_device(
      tags.view(), std::span<const std::int32_t>(data.cell_tags.empty() ? zeros : data.cell_tags),
      stream);
  auto side_vertices = memory::borrow_temporary<std::int32_t>(pool, data.side_vertices.size(),
                                                              "Mesh.tagged_side_vertices");
  auto side_tags =
      memory::borrow_temporary<std::int32_t>(pool, data.side_tags.size(), "Mesh.tagged_side_tags");
  memory::copy_to_device(side_vertices.view(), std::span<const std::int32_t>(data.side_vertices),
                         stream);
  memory::copy_to_device(side_tags.view(), std::span<const std::int32_t>(data.side_tags), stream);
  memory::replace_owned(positions_, std::move(positions));
  memory::replace_owned(cells_, std::move(cells));
  memory::replace_owned(cell_tags_, std::move(tags));
  memory::replace_owned(tagged_side_vertices_, std::move(side_vertices));
  memory::replace_owned(tagged_side_tags_, std::move(side_tags));
  rebuild_topology(scratch);
  rebuild_bins(data.positions, view(), scratch);
}

template <CellType Type>
void Mesh<Type>::rebuild_bins(std::span<const double> positions, const View& from,
                              memory::Arena& scratch) {
  const auto grid = detail::bin_grid<Type>(positions, cell_count_);
  auto bins = detail::build_bins<Type>(from, grid, *pool_, scratch);
  memory::replace_owned(bin_offsets_, std::move(bins.offsets));
  memory::replace_owned(bin_cells_, std::move(bins.cells));
  for (int d = 0; d < dimension; ++d) {
    bins_.origin[d] = grid.origin[d];
    bins_.size[d] = grid.size[d];
    bins_.counts[d] = grid.counts[d];
  }
}

template <CellType Type>
typename Mesh<Type>::View Mesh<Type>::view() const {
  View result;
  result.positions = positions_.view();
  result.cells = cells_.view();
  result.side_cells = side_cells_.view();
  result.side_local = side_local_.view();
  result.side_outer_vertex = side_outer_vertex_.view();
  result.boundary_sides = boundary_sides_.view();
  result.side_tags = side_tags_.view();
  return result;
}

template <CellType Type>
void Mesh<Type>::rebuild_topology(memory::Arena& scratch) {
  auto topology = detail::build_topology<Type>(cells_.view(), *pool_, scratch);
  detail::match_tagged_sides<Type>(cells_.view(), tagged_side_vertices_.view(),
                                   tagged_side_tags_.view(), topology, scratch);
  memory::replace_owned(side_cells_, std::move(topology.side_cells));
  memory::replace_owned(side_local_, std::move(topology.side_local));
  memory::replace_owned(side_outer_vertex_, std::move(topology.side_outer_vertex));
  memory::replace_owned(boundary_sides_, std::move(topology.boundary_sides));
  memory::replace_owned(side_tags_, std::move(topology.side_tags));
}

template <CellType Type>
void Mesh<Type>::set_positions(std::span<const double> positions, memory::Arena& scratch) {
  AFEM_EXPECTS(positions.size() == positions_.size(),
               "Mesh::set_positions: " + std::to_string(positions.size()) + " values for " +
                   std::to_string(vertex_count_) + " vertices of dimension " +
                   std::to_string(dimension));
  std::vector<std::int32_t> cells(cells_.size());
  memory::copy_to_host(std::span<std::int32_t>(cells),
                       memory::ArrayView<const std::int32_t>(cells_.view()), pool_->stream());
  detail::validate_cells<Type>(positions, cells, "Mesh::set_positions");
  auto fresh = memory::borrow_temporary<double>(*pool_, positions.size(), "Mesh.positions");
  memory::copy_to_device(fresh.view(), positions, pool_->stream());
  View next = view();
  next.positions = fresh.view();
  rebuild_bins(positions, next, scratch);  // nothing changes if this throws
  memory::replace_owned(positions_, std::move(fresh));
}

template <CellType Type>
void Mesh<Type>::lookup(memory::ArrayView<const double> points, const LookupResult& result,
                        memory::Arena& scratch) const {
  const auto count = points.size() / dimension;
  check_lookup_buffers(points, result, dimension, "Mesh::lookup");
  detail::BinGrid<dimension> grid{};
  for (int d = 0; d < dimension; ++d) {
    grid.origin[d] = bins_.origin[d];
    grid.size[d] = bins_.size[d];
    grid.counts[d] = bins_.counts[d];
  }
  const View mesh = view();
  const auto offsets = bin_offsets_.view();
  const auto candidates = bin_cells_.view();
  const auto out_cells = result.cells;
  const auto out_coords = result.coords;
  thrust::for_each_n(
      memory::arena_policy(scratch, "Mesh.lookup.thrust"),
      thrust::counting_iterator<std::int32_t>(0), static_cast<std::int32_t>(count),
      [=] AFEM_HOST_DEVICE(std::int32_t p) {
        typename View::Point x;
        std::int32_t base[dimension];
        bool on_lower_edge[dimension];
        bool inside_box = true;
        for (int d = 0; d < dimension; ++d) {
          x[d] = points[static_cast<std::size_t>(p) * dimension + d];
          const double t = (x[d] - grid.origin[d]) / grid.size[d];
          inside_box = inside_box && t >= -1e-9 && t <= grid.counts[d] + 1e-9;
          base[d] = grid.clamp_index(d, x[d]);
          // A cell ending exactly on this bin's lower edge is listed only in the bin below.
          on_lower_edge[d] = base[d] > 0 && t - base[d] < 1e-9;
        }
        std::int32_t found = -1;
        typename View::Coords xi = View::Coords::Zero();
        for (int corner = 0; inside_box && corner < (1 << dimension) && found < 0; ++corner) {
          std::int32_t bin = 0;
          bool exists = true;
          for (int d = dimension - 1; d >= 0; --d) {
            const int below = (corner >> d) & 1;
            exists = exists && (below == 0 || on_lower_edge[d]);
            bin = bin * grid.counts[d] + base[d] - below;
          }
          if (!exists) {
            continue;
          }
          for (std::int32_t i = offsets[static_cast<std::size_t>(bin)];
               i < offsets[static_cast<std::size_t>(bin) + 1] && found < 0; ++i) {
            const std::int32_t cell = candidates[static_cast<std::size_t>(i)];
            if (detail::locate<Type>(mesh, cell, x, xi)) {
              found = cell;
            }
          }
        }
        out_cells[static_cast<std::size_t>(p)] = found;
        for (int d = 0; d < dimension; ++d) {
          out_coords[static_cast<std::size_t>(p) * dimension + d] = found >= 0 ? xi[d] : 0.0;
        }
      });
}

template <CellType Type>
MeshData Mesh<Type>::to_mesh_data() const {
  MeshData data;
  data.cell_type = Type;
  data.positions.resize(positions_.size());
  data.cells.resize(cells_.size());
  data.cell_tags.resize(cell_tags_.size());
  memory::copy_to_host(std::span<double>(data.positions),
                       memory::ArrayView<const double>(positions_.view()), pool_->stream());
  memory::copy_to_host(std::span<std::int32_t>(data.cells),
                       memory::ArrayView<const std::int32_t>(cells_.view()), pool_->stream());
  memory::copy_to_host(std::span<std::int32_t>(data.cell_tags),
                       memory::ArrayView<const std::int32_t>(cell_tags_.view()), pool_->stream());
  data.side_vertices.resize(tagged_side_vertices_.size());
  data.side_tags.resize(tagged_side_tags_.size());
  memory::copy_to_host(std::span<std::int32_t>(data.side_vertices),
                       memory::ArrayView<const std::int32_t>(tagged_side_vertices_.view()),
                       pool_->stream());
  memory::copy_to_host(std::span<std::int32_t>(data.side_tags),
                       memory::ArrayView<const std::int32_t>(tagged_side_tags_.view()),
                       pool_->stream());
  return data;
}

template class Mesh<CellType::triangle>;
static_assert(Geometry<Trimesh> && Geometry<Quadmesh> && Geometry<Tetmesh> && Geometry<Hexmesh>);
template class Mesh<CellType::quadrilateral>;
template class Mesh<CellType::tetrahedron>;
template class Mesh<CellType::hexahedron>;

}  // namespace afem::geometry
