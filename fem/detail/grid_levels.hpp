#pragma once

/// @file
/// The levels of geometric multigrid on a grid's vertices (numbered x fastest, as the Q1 nodes of
/// Grid2D/Grid3D): the coarser lattices, the rows of the prolongation P (multilinear
/// interpolation) and of the restriction R = P^T in closed form, and the Galerkin coarse operator
/// R A P of a scalar operator row by row, its interior rows from the stencil they share.

#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/scan.h>
#include <thrust/transform_reduce.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/stencil_operator.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::fem::detail {

/// The 1D rule of the geometric coarsening: fine vertex i of a line of n cells takes its value
/// from coarse vertices first/second (weight 1 on first alone when second < 0). The coarse line
/// has (n + 1) / 2 cells, its vertex k at fine vertex min(2k, n).
struct LineParents {
  std::int32_t first = 0;
  std::int32_t second = -1;
};
AFEM_HOST_DEVICE inline LineParents line_parents(std::int32_t i, std::int32_t n) {
  if (i % 2 == 0) {
    return {i / 2, -1};
  }
  if (i == n) {
    return {(n + 1) / 2, -1};
  }
  return {i / 2, i / 2 + 1};
}

/// The vertices of a geometric level: up to 2^D lattices (boxes of vertices, x fastest), each at
/// an offset in the level's numbering. The finest level is the grid's one lattice.
template <int D>
struct Lattices {
  static constexpr int most = 1 << D;
  int count = 1;
  std::int32_t offset[most] = {};
  std::int32_t cells[most][D] = {};  // cells per axis (vertices: one more)
  [[nodiscard]] AFEM_HOST_DEVICE std::int32_t vertices(int l) const {
    std::int32_t n = 1;
    for (int d = 0; d < D; ++d) {
      n *= cells[l][d] + 1;
    }
    return n;
  }
  [[nodiscard]] AFEM_HOST_DEVICE std::int32_t total() const {
    return offset[count - 1] + vertices(count - 1);
  }
};

/// The next coarser level: every lattice with half its cells per axis (rounded up), or, with
/// `split`, the one lattice of the finest level split first into 2^D lattices by the parity of
/// the vertex index along each axis (lattice bit d: odd along axis d), each then coarsened.
template <int D>
Lattices<D> coarser_lattices(const Lattices<D>& fine, bool split) {
  Lattices<D> coarse;
  std::int32_t offset = 0;
  if (split) {
    coarse.count = Lattices<D>::most;
    for (int l = 0; l < coarse.count; ++l) {
      for (int d = 0; d < D; ++d) {
        const int bit = (l >> d) & 1;
        const std::int32_t parity_cells =
            (fine.cells[0][d] - bit) / 2;  // vertices of that parity - 1
        coarse.cells[l][d] = (std::max(parity_cells, 0) + 1) / 2;
      }
      coarse.offset[l] = offset;
      offset += coarse.vertices(l);
    }
    return coarse;
  }
  coarse.count = fine.count;
  for (int l = 0; l < fine.count; ++l) {
    for (int d = 0; d < D; ++d) {
      coarse.cells[l][d] = (fine.cells[l][d] + 1) / 2;
    }
    coarse.offset[l] = offset;
    offset += coarse.vertices(l);
  }
  return coarse;
}

/// Row i of the prolongation from the coarse level to the fine one: multilinear interpolation
/// within each lattice (with `split`, within the lattice of the vertex's parity); writes the
/// coarse columns (increasing) and weights, gives their count (1 to 2^D).
template <int D>
struct GridProlongationRows {
  static constexpr int most = 1 << D;
  Lattices<D> fine;
  Lattices<D> coarse;
  bool split = false;
  AFEM_HOST_DEVICE int row(std::int32_t vertex, std::int32_t* columns, double* weights) const {
    int l = 0;
    while (l + 1 < fine.count && vertex >= fine.offset[l + 1]) {
      ++l;
    }
    std::int32_t local = vertex - fine.offset[l];
    LineParents parents[D];
    int target = l;
    for (int d = 0; d < D; ++d) {
      std::int32_t i = local % (fine.cells[l][d] + 1);
      local /= fine.cells[l][d] + 1;
      std::int32_t n = fine.cells[l][d];
      if (split) {
        const int bit = i % 2;
        target += bit << d;
        n = n - bit > 0 ? (n - bit) / 2 : 0;
        i /= 2;
      }
      parents[d] = line_parents(i, n);
    }
    int count = 1;
    columns[0] = coarse.offset[target];
    weights[0] = 1.0;
    std::int32_t stride = 1;
    for (int d = 0; d < D; ++d) {
      if (parents[d].second < 0) {
        for (int c = 0; c < count; ++c) {
          columns[c] += parents[d].first * stride;
        }
      } else {
        for (int c = 0; c < count; ++c) {
          columns[count + c] = columns[c] + parents[d].second * stride;
          weights[count + c] = weights[c] * 0.5;
          columns[c] += parents[d].first * stride;
          weights[c] *= 0.5;
        }
        count *= 2;
      }
      stride *= coarse.cells[target][d] + 1;
    }
    for (int c = 1; c < count; ++c) {
      for (int e = c; e > 0 && columns[e - 1] > columns[e]; --e) {
        const std::int32_t column = columns[e - 1];
        columns[e - 1] = columns[e];
        columns[e] = column;
        const double weight = weights[e - 1];
        weights[e - 1] = weights[e];
        weights[e] = weight;
      }
    }
    return count;
  }
};

/// The weight of coarse vertex c in the 1D interpolation of fine vertex `parents` came from.
AFEM_HOST_DEVICE inline double parent_weight(const LineParents& parents, std::int32_t c) {
  if (parents.first == c) {
    return parents.second < 0 ? 1.0 : 0.5;
  }
  return parents.second == c ? 0.5 : 0.0;
}

/// The fine vertices along one axis whose interpolation reads coarse vertex c (at most 3, the
/// fine vertices 2c - 1 to 2c + 1 of a line of n cells), increasing, with their weights.
struct LineChildren {
  int count = 0;
  std::int32_t index[3] = {};
  double weight[3] = {};
};
AFEM_HOST_DEVICE inline LineChildren line_children(std::int32_t c, std::int32_t n) {
  LineChildren children;
  for (std::int32_t m = 2 * c - 1; m <= 2 * c + 1; ++m) {
    if (m < 0 || m > n) {
      continue;
    }
    const double w = parent_weight(line_parents(m, n), c);
    if (w != 0.0) {
      children.index[children.count] = m;
      children.weight[children.count] = w;
      ++children.count;
    }
  }
  return children;
}

/// 3^D: the entries of a stencil row.
template <int D>
inline constexpr int stencil_taps = D == 2 ? 9 : 27;

/// Row c of the restriction R = P^T (GridProlongationRows' transpose, the same weights): the fine
/// vertices whose interpolation reads coarse vertex c, increasing, with their weights.
template <int D>
struct GridRestrictionRows {
  static constexpr int most = stencil_taps<D>;
  Lattices<D> fine;
  Lattices<D> coarse;
  bool split = false;
  AFEM_HOST_DEVICE int row(std::int32_t vertex, std::int32_t* columns, double* weights) const {
    int t = 0;
    while (t + 1 < coarse.count && vertex >= coarse.offset[t + 1]) {
      ++t;
    }
    const int f = split ? 0 : t;
    std::int32_t local = vertex - coarse.offset[t];
    LineChildren children[D];
    for (int d = 0; d < D; ++d) {
      const std::int32_t c = local % (coarse.cells[t][d] + 1);
      local /= coarse.cells[t][d] + 1;
      const std::int32_t n = fine.cells[f][d];
      const int bit = split ? (t >> d) & 1 : 0;
      children[d] = line_children(c, split ? (n - bit > 0 ? (n - bit) / 2 : 0) : n);
      if (split) {
        for (int k = 0; k < children[d].count; ++k) {
          children[d].index[k] = 2 * children[d].index[k] + bit;
        }
      }
    }
    int total = 1;
    for (int d = 0; d < D; ++d) {
      total *= children[d].count;
    }
    // x fastest: the columns come out increasing.
    for (int q = 0; q < total; ++q) {
      int rest = q;
      std::int32_t column = 0;
      std::int32_t stride = 1;
      double weight = 1.0;
      for (int d = 0; d < D; ++d) {
        const int k = rest % children[d].count;
        rest /= children[d].count;
        column += children[d].index[k] * stride;
        weight *= children[d].weight[k];
        stride *= fine.cells[f][d] + 1;
      }
      columns[q] = fine.offset[f] + column;
      weights[q] = weight;
    }
    return total;
  }
};

/// The 1D interpolation weight of a fine vertex m fine cells away from a coarse vertex (1, 0.5 or
/// 0), on a line without ends.
AFEM_HOST_DEVICE inline double lattice_weight(int m) {
  if (m == 0) {
    return 1.0;
  }
  return m == 1 || m == -1 ? 0.5 : 0.0;
}

/// Offset along axis d (-1, 0 or 1) of tap `tap` of a 3^D stencil (x fastest).
AFEM_HOST_DEVICE inline int tap_offset(int tap, int d) {
  for (int e = 0; e < d; ++e) {
    tap /= 3;
  }
  return tap % 3 - 1;
}

/// What the Galerkin rows take from the fine stencil s (3^D taps, x fastest): `rows[k * taps +
/// o]`, the contribution of a fine stencil row at offset k from 2c (k, o taps) to slot o of coarse
/// row c, R_ck sum_t s_t P_(k+t),(c+o); and `coarse`, the rows summed over k in order: the coarse
/// stencil, the row of every coarse vertex whose fine neighbourhood holds s.
template <int D>
struct GalerkinStencils {
  static constexpr std::size_t taps = stencil_taps<D>;
  std::array<double, taps * taps> rows{};
  std::array<double, taps> coarse{};
};
template <int D>
GalerkinStencils<D> galerkin_stencils(std::span<const double> s) {
  constexpr int taps = stencil_taps<D>;
  GalerkinStencils<D> g;
  for (int k = 0; k < taps; ++k) {
    double wk = 1.0;
    for (int d = 0; d < D; ++d) {
      wk *= lattice_weight(tap_offset(k, d));
    }
    for (int o = 0; o < taps; ++o) {
      double sum = 0.0;
      for (int t = 0; t < taps; ++t) {
        double wp = 1.0;
        for (int d = 0; d < D; ++d) {
          wp *= lattice_weight(tap_offset(k, d) + tap_offset(t, d) - 2 * tap_offset(o, d));
        }
        sum += s[static_cast<std::size_t>(t)] * wp;
      }
      const std::size_t at = static_cast<std::size_t>(k) * taps + static_cast<std::size_t>(o);
      g.rows[at] = wk * sum;
      g.coarse[static_cast<std::size_t>(o)] += g.rows[at];
    }
  }
  return g;
}

/// Row c of the Galerkin coarse operator R A P of a scalar operator A on the vertices of a grid
/// of `fine_cells` cells per axis, P the multilinear interpolation from the grid with half the
/// cells per axis (rounded up). Its pattern is every coarse vertex within one step along each
/// axis (a superset of the product's when A couples only such neighbours). With the fine stencil
/// known (`flags`, `stencil_rows`, `stencil`), each fine stencil row adds its precomputed
/// contribution and a row whose fine neighbourhood is all stencil rows away from the ends takes
/// the coarse stencil (the same bits); each other fine row k adds R_ck times its row of A P,
/// formed once for all its coarse parents (product_row(), into `products`: see
/// fill_galerkin_rows). A row of A that reaches beyond its vertex's neighbours is refused (not a
/// grid operator). On the CPU fill_rows forms the coarse rows a line at a time, and a row whose
/// fine rows of A P all repeat the rows two before them is a copy of the row before it
/// (repeats_previous).
template <int D>
struct GridGalerkinRows {
  static constexpr int most = stencil_taps<D>;
  std::int32_t fine_cells[D] = {};
  ConstBsrView<1> a;
  /// The fine rows' StencilOperator flags: those that hold the fine stencil (read with the
  /// table below) and those that repeat the row before them (empty: none known).
  memory::ArrayView<const std::uint8_t> flags;
  /// GalerkinStencils::rows of the fine stencil, on the backend (read for the stencil rows).
  memory::ArrayView<const double> stencil_rows;
  /// GalerkinStencils::coarse of the fine stencil.
  std::array<double, most> stencil{};
  /// Rows of A P of the fine rows from `products_first` on, `most` slots each: slot s of fine row
  /// k (at m along the axes) is coarse vertex m / 2 - 1 + s along each axis (x fastest).
  memory::ArrayView<double> products;
  std::int64_t products_first = 0;
  /// Column offsets of the taps from their row (increasing) and their steps along each axis (0 to
  /// 2), from fine_cells (set_taps()).
  std::int32_t tap_delta[most] = {};
  int tap_step[most][D] = {};

  void set_taps() {
    std::int32_t stride = 1;
    for (int t = 0; t < most; ++t) {
      tap_delta[t] = 0;
    }
    for (int d = 0; d < D; ++d) {
      for (int t = 0; t < most; ++t) {
        tap_step[t][d] = tap_offset(t, d) + 1;
        tap_delta[t] += (tap_step[t][d] - 1) * stride;
      }
      stride *= fine_cells[d] + 1;
    }
  }

  [[nodiscard]] AFEM_HOST_DEVICE std::int32_t coarse_vertices(int d) const {
    return (fine_cells[d] + 1) / 2 + 1;
  }
  [[nodiscard]] AFEM_HOST_DEVICE int count(std::int32_t row) const {
    int count = 1;
    for (int d = 0; d < D; ++d) {
      const std::int32_t c = row % coarse_vertices(d);
      row /= coarse_vertices(d);
      count *= 1 + (c > 0 ? 1 : 0) + (c + 1 < coarse_vertices(d) ? 1 : 0);
    }
    return count;
  }
  AFEM_HOST_DEVICE int row(std::int32_t row, std::int32_t* columns, double* values) const {
    std::int32_t c[D];
    std::int32_t rest = row;
    for (int d = 0; d < D; ++d) {
      c[d] = rest % coarse_vertices(d);
      rest /= coarse_vertices(d);
    }
    double sum[most] = {};
    if (interior(c)) {
      for (int o = 0; o < most; ++o) {
        sum[o] = stencil[static_cast<std::size_t>(o)];
      }
    } else {
      accumulate(c, sum);
    }
    int k = 0;
    for (int o = 0; o < most; ++o) {
      std::int32_t column = row;
      std::int32_t stride = 1;
      bool inside = true;
      for (int d = 0; d < D; ++d) {
        const int e = tap_offset(o, d);
        inside = inside && c[d] + e >= 0 && c[d] + e < coarse_vertices(d);
        column += e * stride;
        stride *= coarse_vertices(d);
      }
      if (inside) {
        columns[k] = column;
        values[k] = sum[o];
        ++k;
      }
    }
    return k;
  }

  /// Forms the rows of A P of one line of fine vertices along x (product_row), where a row of A
  /// repeats the two rows before it (`flags`: repeated_row) as a copy of the row two before: its
  /// neighbours have the same parities, so their interpolation weights and coarse parents, one
  /// coarse vertex further, are the same (not next to either end of the line, where the parents
  /// are cut off or the odd last vertex interpolates otherwise). Gives the rows refused.
  [[nodiscard]] AFEM_HOST_DEVICE std::int64_t product_line(std::int64_t line) const {
    const std::int32_t n = fine_cells[0] + 1;
    std::int64_t refused = 0;
    for (std::int32_t i = 0; i < n; ++i) {
      const std::int64_t k = line * n + i;
      if (product_repeats(k, i)) {
        double* row = products.data() + static_cast<std::size_t>(k - products_first) * most;
        const double* before = row - 2 * std::ptrdiff_t{most};
        for (int s = 0; s < most; ++s) {
          row[s] = before[s];
        }
        continue;
      }
      refused += product_row(k);
    }
    return refused;
  }

  /// Whether fine row k of A P (at i along x) is, bit for bit, the row two before it with its
  /// parents one coarse vertex further: rows k and k - 1 of A repeat the rows before them, and k
  /// is neither among the first three of its line nor next to the line's end.
  [[nodiscard]] AFEM_HOST_DEVICE bool product_repeats(std::int64_t k, std::int32_t i) const {
    const bool odd_end = fine_cells[0] % 2 == 1;
    const auto at = static_cast<std::size_t>(k);
    return !flags.empty() && i >= 3 && i + (odd_end ? 1 : 0) < fine_cells[0] &&
           flags[at] == repeated_row && flags[at - 1] == repeated_row;
  }

  /// Coarse rows per line along x (RowLineEntries forms them a line at a time).
  [[nodiscard]] AFEM_HOST_DEVICE std::int32_t line_length() const { return coarse_vertices(0); }

  /// Whether coarse row `row` (at c along x) is, bit for bit, the row before it one column on:
  /// on every fine line it reads, its children 2c - 1 to 2c + 1 along x repeat the rows of A P two
  /// before them (product_repeats), which row c - 1 reads with the same weights in the same order,
  /// and neither row is at an end of its line (the same entries along x, the regular weights).
  [[nodiscard]] AFEM_HOST_DEVICE bool repeats_previous(std::int32_t row, std::int32_t c) const {
    const std::int32_t n = fine_cells[0];
    if (flags.empty() || c < 2 || 2 * c + 2 > n) {
      return false;
    }
    // The fine lines along x that the coarse line reads: its children along the other axes.
    std::int32_t rest = row / coarse_vertices(0);
    LineChildren children[D];
    int lines = 1;
    for (int d = 1; d < D; ++d) {
      children[d] = line_children(rest % coarse_vertices(d), fine_cells[d]);
      rest /= coarse_vertices(d);
      lines *= children[d].count;
    }
    for (int q = 0; q < lines; ++q) {
      int left = q;
      std::int64_t line = 0;
      std::int64_t stride = 1;
      for (int d = 1; d < D; ++d) {
        line += children[d].index[left % children[d].count] * stride;
        left /= children[d].count;
        stride *= fine_cells[d] + 1;
      }
      for (std::int32_t i = 2 * c - 1; i <= 2 * c + 1; ++i) {
        if (!product_repeats(line * (n + 1) + i, i)) {
          return false;
        }
      }
    }
    return true;
  }

  /// Forms row k of A P into `products` unless the stencil's table stands for it; gives 1 when a
  /// row of A has a column that is not one of its neighbours, else 0.
  [[nodiscard]] AFEM_HOST_DEVICE std::int64_t product_row(std::int64_t k) const {
    std::int32_t m[D];
    std::int32_t base[D];
    std::int64_t rest = k;
    for (int d = 0; d < D; ++d) {
      m[d] = static_cast<std::int32_t>(rest % (fine_cells[d] + 1));
      rest /= fine_cells[d] + 1;
      base[d] = m[d] / 2;
    }
    if (from_table(m, static_cast<std::int32_t>(k))) {
      return 0;
    }
    double* row = products.data() + static_cast<std::size_t>(k - products_first) * most;
    for (int s = 0; s < most; ++s) {
      row[s] = 0.0;
    }
    return add_row(base, m, static_cast<std::int32_t>(k), row) ? 0 : 1;
  }

private:
  /// Whether fine row k (at m) adds the stencil's table: it holds the stencil and the
  /// interpolation of m + 1 has no end (m + 1 is not the odd last vertex).
  [[nodiscard]] AFEM_HOST_DEVICE bool from_table(const std::int32_t* m, std::int32_t k) const {
    if (flags.empty() || flags[static_cast<std::size_t>(k)] != stencil_row) {
      return false;
    }
    for (int d = 0; d < D; ++d) {
      if (m[d] + 1 == fine_cells[d] && fine_cells[d] % 2 == 1) {
        return false;
      }
    }
    return true;
  }

  /// Whether the fine rows 2c - 1 to 2c + 1 along every axis hold the stencil and the
  /// interpolation of their neighbours 2c - 2 to 2c + 2 is the one without ends.
  [[nodiscard]] AFEM_HOST_DEVICE bool interior(const std::int32_t* c) const {
    if (flags.empty()) {
      return false;
    }
    std::int32_t centre = 0;
    std::int32_t stride = 1;
    for (int d = 0; d < D; ++d) {
      if (c[d] < 1 || 2 * c[d] + 2 > fine_cells[d]) {
        return false;
      }
      centre += 2 * c[d] * stride;
      stride *= fine_cells[d] + 1;
    }
    for (int t = 0; t < most; ++t) {
      std::int32_t at = centre;
      std::int32_t step = 1;
      for (int d = 0; d < D; ++d) {
        at += tap_offset(t, d) * step;
        step *= fine_cells[d] + 1;
      }
      if (flags[static_cast<std::size_t>(at)] != stencil_row) {
        return false;
      }
    }
    return true;
  }

  /// sum[o] += R_ck (A P)_kj over the fine rows k, into the slot o of coarse vertex j: from the
  /// stencil's table or from `products` (whose window sits at m / 2 along each axis, c or c - 1).
  AFEM_HOST_DEVICE void accumulate(const std::int32_t* c, double* sum) const {
    LineChildren children[D];
    std::int32_t fine_stride[D];
    int total = 1;
    std::int32_t stride = 1;
    for (int d = 0; d < D; ++d) {
      children[d] = line_children(c[d], fine_cells[d]);
      total *= children[d].count;
      fine_stride[d] = stride;
      stride *= fine_cells[d] + 1;
    }
    for (int q = 0; q < total; ++q) {
      // Fine row k (x fastest over R's columns), its offset from 2c as a tap, its weight.
      int rest = q;
      std::int32_t k = 0;
      double wk = 1.0;
      int k_tap = 0;
      int tap_stride = 1;
      std::int32_t m[D];
      int shift[D];
      for (int d = 0; d < D; ++d) {
        const int i = rest % children[d].count;
        rest /= children[d].count;
        m[d] = children[d].index[i];
        k += m[d] * fine_stride[d];
        wk *= children[d].weight[i];
        k_tap += (m[d] - 2 * c[d] + 1) * tap_stride;
        tap_stride *= 3;
        shift[d] = m[d] / 2 - c[d];
      }
      if (from_table(m, k)) {
        const auto from = static_cast<std::size_t>(k_tap) * most;
        for (int o = 0; o < most; ++o) {
          sum[o] += stencil_rows[from + static_cast<std::size_t>(o)];
        }
        continue;
      }
      // Slot s of the window is slot s + shift of the row's (shift -1: its slot 0 is 0).
      const double* row = products.data() + static_cast<std::size_t>(k - products_first) * most;
      const int x0 = shift[0] < 0 ? 1 : 0;
      const int y0 = shift[1] < 0 ? 1 : 0;
      const int z0 = D == 3 && shift[D - 1] < 0 ? 1 : 0;
      const int moved = shift[0] + 3 * shift[1] + (D == 3 ? 9 * shift[D - 1] : 0);
      for (int z = z0; z < (D == 3 ? 3 : 1); ++z) {
        for (int y = y0; y < 3; ++y) {
          for (int x = x0; x < 3; ++x) {
            const int at = x + 3 * y + 9 * z;
            sum[at + moved] += wk * row[at];
          }
        }
      }
    }
  }

  /// sum[o] += A_kl P_lj over the entries l of fine row k (at m along the axes), o the slot of
  /// coarse vertex j in the window centred at c.
  AFEM_HOST_DEVICE bool add_row(const std::int32_t* c, const std::int32_t* m, std::int32_t k,
                                double* sum) const {
    // For each axis and step e in 0..2 (m - 1 to m + 1): the slots (coarse offset + 1, times the
    // slot stride of the axis) and weights of the coarse parents of that fine vertex.
    int parent_count[D][3];
    int parent_slot[D][3][2];
    double parent_weight_of[D][3][2];
    int slot_stride = 1;
    for (int d = 0; d < D; ++d) {
      for (int e = 0; e < 3; ++e) {
        const std::int32_t l = m[d] + e - 1;
        int& count = parent_count[d][e];
        count = 0;
        if (l < 0 || l > fine_cells[d]) {
          continue;
        }
        const LineParents p = line_parents(l, fine_cells[d]);
        parent_slot[d][e][0] = (p.first - c[d] + 1) * slot_stride;
        parent_weight_of[d][e][0] = p.second < 0 ? 1.0 : 0.5;
        count = 1;
        if (p.second >= 0) {
          parent_slot[d][e][1] = (p.second - c[d] + 1) * slot_stride;
          parent_weight_of[d][e][1] = 0.5;
          count = 2;
        }
      }
      slot_stride *= 3;
    }
    // A's row k against the taps inside the grid, both increasing (a tap past the grid's end
    // can share its column offset with one inside when an axis has one cell).
    bool inside[most];
    for (int tap = 0; tap < most; ++tap) {
      inside[tap] = true;
      for (int d = 0; d < D; ++d) {
        inside[tap] = inside[tap] && parent_count[d][tap_step[tap][d]] > 0;
      }
    }
    int t = 0;
    const auto end = static_cast<std::size_t>(a.offsets[static_cast<std::size_t>(k) + 1]);
    for (auto j = static_cast<std::size_t>(a.offsets[static_cast<std::size_t>(k)]); j < end; ++j) {
      const std::int32_t delta = a.columns[j] - k;
      while (t < most && (!inside[t] || tap_delta[t] < delta)) {
        ++t;
      }
      if (t == most || tap_delta[t] != delta) {
        return false;
      }
      const int* e = tap_step[t];
      const double term = a.values[j];
      // The coarse parents of the column: products of one parent per axis (at most 2^D).
      int slot[1 << D];
      double wp[1 << D];
      int combinations = 1;
      slot[0] = 0;
      wp[0] = 1.0;
      for (int d = 0; d < D; ++d) {
        const int ed = e[d];
        if (parent_count[d][ed] == 2) {
          for (int p = 0; p < combinations; ++p) {
            slot[combinations + p] = slot[p] + parent_slot[d][ed][1];
            wp[combinations + p] = wp[p] * parent_weight_of[d][ed][1];
          }
        }
        for (int p = 0; p < combinations; ++p) {
          slot[p] += parent_slot[d][ed][0];
          wp[p] *= parent_weight_of[d][ed][0];
        }
        combinations *= parent_count[d][ed];
      }
      for (int p = 0; p < combinations; ++p) {
        sum[slot[p]] += term * wp[p];
      }
    }
    return true;
  }
};

/// b = R r between the vertices of a grid of `fine_cells` cells per axis and the grid with half the
/// cells (rounded up), B unknowns per vertex, without a matrix: one coarse line along x per call.
/// Each coarse value sums its fine lines (increasing) of its x children (increasing).
template <int D, int B>
struct GridRestrictLines {
  std::int32_t fine_cells[D] = {};
  memory::ArrayView<const double> r;
  memory::ArrayView<double> b;
  AFEM_HOST_DEVICE void operator()(std::int64_t line) const {
    const std::int32_t n = fine_cells[0];
    const std::int32_t coarse_x = (n + 1) / 2 + 1;
    const std::int32_t coarse_y = (fine_cells[1] + 1) / 2 + 1;
    const auto c1 = static_cast<std::int32_t>(line % coarse_y);
    const auto c2 = static_cast<std::int32_t>(line / coarse_y);
    const LineChildren y = line_children(c1, fine_cells[1]);
    LineChildren z;
    z.count = 1;
    z.weight[0] = 1.0;
    if constexpr (D == 3) {
      z = line_children(c2, fine_cells[2]);
    }
    double* __restrict__ out = &b[static_cast<std::size_t>(line) * coarse_x * B];
    for (std::int32_t i = 0; i < coarse_x * B; ++i) {
      out[i] = 0.0;
    }
    // Coarse vertices 1 <= c with 2c + 2 <= n read fine 2c - 1, 2c, 2c + 1 with 1/2, 1, 1/2.
    const std::int32_t regular_end = n / 2;
    for (int kz = 0; kz < z.count; ++kz) {
      for (int ky = 0; ky < y.count; ++ky) {
        const double w = z.weight[kz] * y.weight[ky];
        const std::int64_t fine_line =
            std::int64_t{z.index[kz]} * (fine_cells[1] + 1) + y.index[ky];
        const double* __restrict__ in = &r[static_cast<std::size_t>(fine_line) * (n + 1) * B];
        for (std::int32_t c = 1; c < regular_end; ++c) {
          for (int u = 0; u < B; ++u) {
            const std::int32_t at = 2 * c * B + u;
            out[c * B + u] += w * ((0.5 * in[at - B] + in[at]) + 0.5 * in[at + B]);
          }
        }
        for (std::int32_t c = 0; c < coarse_x; c = c == 0 ? std::max(regular_end, 1) : c + 1) {
          const LineChildren x = line_children(c, n);
          for (int u = 0; u < B; ++u) {
            double sum = 0.0;
            for (int k = 0; k < x.count; ++k) {
              sum += x.weight[k] * in[x.index[k] * B + u];
            }
            out[c * B + u] += w * sum;
          }
        }
      }
    }
  }
};

/// x += P xc from the grid with half the cells (rounded up) to the vertices of a grid of
/// `fine_cells` cells per axis, B unknowns per vertex, without a matrix: one fine line along x per
/// call. Each fine value adds the multilinear interpolation of its coarse lines (increasing).
template <int D, int B>
struct GridProlongAddLines {
  std::int32_t fine_cells[D] = {};
  memory::ArrayView<const double> xc;
  memory::ArrayView<double> x;
  AFEM_HOST_DEVICE void operator()(std::int64_t line) const {
    const std::int32_t n = fine_cells[0];
    const std::int32_t coarse_x = (n + 1) / 2 + 1;
    const std::int32_t coarse_y = (fine_cells[1] + 1) / 2 + 1;
    const auto j = static_cast<std::int32_t>(line % (fine_cells[1] + 1));
    const auto k = static_cast<std::int32_t>(line / (fine_cells[1] + 1));
    // The coarse lines this fine line interpolates (1 to 4) and their weights.
    const LineParents y = line_parents(j, fine_cells[1]);
    LineParents z{0, -1};
    if constexpr (D == 3) {
      z = line_parents(k, fine_cells[2]);
    }
    const double* from[4] = {};
    double weight[4] = {};
    int lines = 0;
    for (int kz = 0; kz < (z.second < 0 ? 1 : 2); ++kz) {
      for (int ky = 0; ky < (y.second < 0 ? 1 : 2); ++ky) {
        const std::int32_t cz = kz == 0 ? z.first : z.second;
        const std::int32_t cy = ky == 0 ? y.first : y.second;
        from[lines] = &xc[(static_cast<std::size_t>(cz) * coarse_y + static_cast<std::size_t>(cy)) *
                          coarse_x * B];
        weight[lines] = (z.second < 0 ? 1.0 : 0.5) * (y.second < 0 ? 1.0 : 0.5);
        ++lines;
      }
    }
    double* __restrict__ out = &x[static_cast<std::size_t>(line) * (n + 1) * B];
    for (int u = 0; u < B; ++u) {
      double here = 0.0;
      for (int q = 0; q < lines; ++q) {
        here += weight[q] * from[q][u];
      }
      for (std::int32_t c = 0; 2 * c <= n; ++c) {
        out[2 * c * B + u] += here;
        if (2 * c + 1 > n) {
          break;
        }
        double next = 0.0;
        for (int q = 0; q < lines; ++q) {
          next += weight[q] * from[q][(c + 1) * B + u];
        }
        // An odd last vertex has the last coarse vertex alone.
        out[(2 * c + 1) * B + u] += 2 * c + 1 == n ? next : 0.5 * (here + next);
        here = next;
      }
    }
  }
};

/// rows.count(i) where Rows has one (in closed form), else the length of rows.row(i).
template <class Rows>
AFEM_HOST_DEVICE int row_count(const Rows& rows, std::int32_t i) {
  if constexpr (requires { rows.count(i); }) {
    return rows.count(i);
  } else {
    std::int32_t columns[Rows::most];
    double weights[Rows::most];
    return rows.row(i, columns, weights);
  }
}

/// Block counts of rows.row() (block 0: 0, for the scan into offsets).
template <class Rows>
struct RowCounts {
  Rows rows;
  memory::ArrayView<std::int32_t> offsets;
  AFEM_HOST_DEVICE void operator()(std::size_t i) const {
    offsets[i] = i == 0 ? 0 : row_count(rows, static_cast<std::int32_t>(i - 1));
  }
};

/// Writes rows.row(i) at its offset, each entry w as the block w I; gives 1 for a row that
/// rows.row() refused (-1), else 0.
template <int B, class Rows>
struct RowEntries {
  Rows rows;
  memory::ArrayView<const std::int32_t> offsets;
  memory::ArrayView<std::int32_t> columns;
  memory::ArrayView<double> values;
  AFEM_HOST_DEVICE std::int64_t operator()(std::size_t i) const {
    std::int32_t cols[Rows::most];
    double weights[Rows::most];
    const int k = rows.row(static_cast<std::int32_t>(i), cols, weights);
    if (k < 0) {
      return 1;
    }
    for (int e = 0; e < k; ++e) {
      const std::size_t at = static_cast<std::size_t>(offsets[i]) + static_cast<std::size_t>(e);
      columns[at] = cols[e];
      for (int q = 0; q < B * B; ++q) {
        values[at * B * B + static_cast<std::size_t>(q)] = q % (B + 1) == 0 ? weights[e] : 0.0;
      }
    }
    return 0;
  }
};

/// RowEntries a line of rows.line_length() rows at a time (scalar rows): a row that
/// rows.repeats_previous(row, place in its line) says holds the row before it one column on is
/// copied from it, the others are formed by rows.row(). Gives the rows refused.
template <class Rows>
struct RowLineEntries {
  RowEntries<1, Rows> form;
  AFEM_HOST_DEVICE std::int64_t operator()(std::size_t line) const {
    const std::int32_t length = form.rows.line_length();
    std::int64_t refused = 0;
    for (std::int32_t c = 0; c < length; ++c) {
      const auto row = static_cast<std::size_t>(line) * static_cast<std::size_t>(length) +
                       static_cast<std::size_t>(c);
      const auto at = static_cast<std::size_t>(form.offsets[row]);
      const std::size_t entries = static_cast<std::size_t>(form.offsets[row + 1]) - at;
      const auto before = static_cast<std::size_t>(c > 0 ? form.offsets[row - 1] : 0);
      if (c > 0 && at - before == entries &&
          form.rows.repeats_previous(static_cast<std::int32_t>(row), c)) {
        for (std::size_t e = 0; e < entries; ++e) {
          form.columns[at + e] = form.columns[before + e] + 1;
          form.values[at + e] = form.values[before + e];
        }
        continue;
      }
      refused += form(row);
    }
    return refused;
  }
};

/// Whether fill_rows forms the rows of `Rows` a line at a time (RowLineEntries): scalar rows that
/// can say which repeat the row before them, on the CPU.
template <int B, class Rows>
inline constexpr bool fills_lines = !afem::has_cuda && B == 1 && requires(const Rows& rows) {
  rows.line_length();
  rows.repeats_previous(std::int32_t{0}, std::int32_t{0});
};

/// Makes `p` the BsrMatrix<B> whose block row i is rows.row(i) (at most Rows::most blocks, each
/// weight * I), pattern and values, through set_pattern. Gives how many
/// rows rows.row() refused; when any, `p` is left as it was. With `prepare`, the rows are formed
/// `chunk` at a time, each range [first, last) after prepare(rows, first, last), which readies
/// the rows (a copy of `rows`) for it and gives how many of them it refuses.
template <int B, class Rows, class Prepare>
std::int64_t fill_rows(const Rows& rows, std::int32_t block_rows, std::int32_t block_columns,
                       BsrMatrix<B>& p, memory::Arena& scratch, std::int32_t chunk,
                       Prepare&& prepare) {
  memory::Pool& pool = p.pool();
  const auto n = static_cast<std::size_t>(block_rows);
  auto offsets = memory::borrow_temporary<std::int32_t>(pool, n + 1, "BsrMatrix.offsets");
  const memory::ArrayView<std::int32_t> off = offsets.view();
  auto policy = memory::arena_policy(scratch, "multigrid.thrust");
  const auto count = thrust::counting_iterator<std::size_t>(0);
  thrust::for_each_n(policy, count, n + 1, RowCounts<Rows>{rows, off});
  thrust::inclusive_scan(policy, off.begin(), off.end(), off.begin());
  std::int32_t blocks = 0;
  memory::copy_to_host(std::span<std::int32_t>(&blocks, 1),
                       memory::ArrayView<const std::int32_t>(off).subview(n, 1), scratch.stream());
  auto columns = memory::borrow_temporary<std::int32_t>(pool, static_cast<std::size_t>(blocks),
                                                        "BsrMatrix.columns");
  auto values = memory::borrow_temporary<double>(pool, static_cast<std::size_t>(blocks) * B * B,
                                                 "BsrMatrix.values");
  Rows ready = rows;
  std::int64_t refused = 0;
  for (std::int32_t first = 0; first < block_rows && refused == 0; first += chunk) {
    const std::int32_t last = std::min(block_rows, first + chunk);
    refused += prepare(ready, first, last);
    if (refused == 0) {
      if constexpr (fills_lines<B, Rows>) {
        // Chunks start on a line; the last ends with the rows.
        const std::int32_t length = ready.line_length();
        refused += thrust::transform_reduce(
            policy, count + first / length, count + (last + length - 1) / length,
            RowLineEntries<Rows>{{ready, off, columns.view(), values.view()}}, std::int64_t{0},
            thrust::plus<std::int64_t>());
      } else {
        refused +=
            thrust::transform_reduce(policy, count + first, count + last,
                                     RowEntries<B, Rows>{ready, off, columns.view(), values.view()},
                                     std::int64_t{0}, thrust::plus<std::int64_t>());
      }
    }
  }
  if (refused == 0) {
    p.set_pattern(block_rows, block_columns, std::move(offsets), std::move(columns),
                  std::move(values));
  }
  return refused;
}
template <int B, class Rows>
std::int64_t fill_rows(const Rows& rows, std::int32_t block_rows, std::int32_t block_columns,
                       BsrMatrix<B>& p, memory::Arena& scratch) {
  return fill_rows<B>(rows, block_rows, block_columns, p, scratch, std::max(block_rows, 1),
                      [](Rows&, std::int32_t, std::int32_t) { return std::int64_t{0}; });
}

/// The fine rows of A P that a GridGalerkinRows' coarse rows read (into its `products`), from
/// products_first on: on the CPU a line of fine vertices along x at a time (the repeated rows are
/// copies), on CUDA a row at a time (a thread each).
template <int D>
struct GalerkinProducts {
  GridGalerkinRows<D> rows;
  AFEM_HOST_DEVICE std::int64_t operator()(std::size_t i) const {
    if constexpr (afem::has_cuda) {
      return rows.product_row(rows.products_first + static_cast<std::int64_t>(i));
    } else {
      return rows.product_line(rows.products_first / (rows.fine_cells[0] + 1) +
                               static_cast<std::int64_t>(i));
    }
  }
};

/// Makes `p` the Galerkin coarse operator of `rows` (its `products` and `products_first` are set
/// here): the coarse planes (along the last axis) in ranges whose fine rows of A P fit in
/// `budget` doubles of scratch, borrowed for the call (at least three fine planes' worth, however
/// large a plane). Gives a count above 0 when a row of A reaches beyond its neighbours; then `p`
/// is left as it was.
template <int D>
std::int64_t fill_galerkin_rows(GridGalerkinRows<D> rows, BsrMatrix<1>& p, memory::Arena& scratch,
                                std::size_t budget = std::size_t{1} << 20) {
  constexpr int most = GridGalerkinRows<D>::most;
  std::int64_t fine_plane = 1;
  std::int32_t coarse_plane = 1;
  for (int d = 0; d + 1 < D; ++d) {
    fine_plane *= rows.fine_cells[d] + 1;
    coarse_plane *= rows.coarse_vertices(d);
  }
  const std::int32_t fine_last = rows.fine_cells[D - 1];
  const std::int32_t planes = rows.coarse_vertices(D - 1);
  // Coarse planes [c0, c1) read the fine planes 2 c0 - 1 to 2 c1 - 1 (at most 2 (c1 - c0) + 1).
  const auto fit = static_cast<std::int64_t>(budget) / (fine_plane * most);
  const auto step = static_cast<std::int32_t>(std::clamp<std::int64_t>((fit - 1) / 2, 1, planes));
  const std::int64_t most_planes =
      std::min<std::int64_t>(2 * std::int64_t{step} + 1, fine_last + 1);
  auto products = memory::borrow_temporary<double>(
      scratch, static_cast<std::size_t>(most_planes * fine_plane * most), "multigrid.galerkin_ap");
  rows.products = products.view();
  rows.set_taps();
  auto policy = memory::arena_policy(scratch, "multigrid.thrust");
  return fill_rows<1>(
      rows, planes * coarse_plane, planes * coarse_plane, p, scratch, step * coarse_plane,
      [&](GridGalerkinRows<D>& ready, std::int32_t first, std::int32_t last) {
        const std::int32_t c0 = first / coarse_plane;
        const std::int32_t c1 = last / coarse_plane;
        const std::int64_t f0 = std::max(0, 2 * c0 - 1);
        const std::int64_t f1 = std::min(fine_last, 2 * c1 - 1);
        ready.products_first = f0 * fine_plane;
        const std::int64_t fine_rows = (f1 - f0 + 1) * fine_plane;
        const std::int64_t items =
            afem::has_cuda ? fine_rows : fine_rows / (rows.fine_cells[0] + 1);
        return thrust::transform_reduce(
            policy, thrust::counting_iterator<std::size_t>(0),
            thrust::counting_iterator<std::size_t>(static_cast<std::size_t>(items)),
            GalerkinProducts<D>{ready}, std::int64_t{0}, thrust::plus<std::int64_t>());
      });
}

}  // namespace afem::fem::detail
