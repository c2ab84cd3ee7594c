#pragma once

/// @file
/// MacProjection<D>: the pressure projection of a fluid whose velocity is staggered (a MAC grid):
/// component d lives on the centres of the cell faces normal to axis d, the pressure on the cell
/// centres. The divergence of a cell is its net outflow, (1/h) sum_d (u_d(high face) - u_d(low
/// face)), the pressure gradient on a face the difference of its two cells over h, so B W B^T is
/// the (2D + 1)-point Laplacian on the fluid cells: a compact operator that the geometric
/// multigrid solves in a number of CG iterations that does not grow with the resolution. A cell
/// holds fluid or not (the caller says which); a cell without fluid holds p = 0 (the free
/// surface), a face within `wall_layers` cells of a closed side of the box is held at rest by the
/// wall (no pressure acts across it), and u = u* - (dt / (rho h)) grad p on the other faces
/// beside fluid. The system A p = b (A the Laplacian times h^2, one row per cell, 1e-6 times the
/// identity on the cells without fluid) is solved by CG to `tolerance`, preconditioned by Jacobi
/// or the geometric multigrid (rebuilt every projection: the fluid cells change), its products
/// through a StencilOperator (the rows of a run of fluid or of empty cells along x are alike); then
/// the divergence left is (dt / (rho h^2)) (A p - b): at the solver's tolerance. The faces beside
/// no fluid cell then take the mean of their projected neighbours (two layers of velocity beyond
/// the fluid). A sticky side also holds the faces along it within its layers. Used by the MPM
/// programs; compiled by nvcc in the CUDA build.

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "arenafem/apps/mpm/setup.hpp"
#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/multigrid.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/stencil_operator.hpp"
#include "arenafem/fem/vector_ops.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/temporary.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::apps::mpm {

/// The cells and faces of a MAC grid of `cells[d]` cells per axis, numbered with the first axis
/// fastest. The faces of component d form a lattice of cells[d] + 1 layers along axis d and
/// cells[a] + 2 along every other axis a: the faces of the grid's cells and one ghost layer
/// beside each side (so that a lattice of faces covers the whole box); face index i along a != d
/// sits at (i - 1/2) h, along d at i h.
template <int D>
struct MacLattice {
  std::int32_t cells[D] = {};
  /// Faces within this many cells of a closed side are held by the wall.
  int wall_layers = 0;
  /// Whether the low (2d) and high (2d + 1) side of axis d is a wall.
  bool closed[2 * D] = {};
  /// Whether that wall also holds the faces along it (within its layers) at rest.
  bool sticky[2 * D] = {};

  [[nodiscard]] AFEM_HOST_DEVICE std::int64_t cell_count() const {
    std::int64_t n = 1;
    for (int a = 0; a < D; ++a) {
      n *= cells[a];
    }
    return n;
  }
  [[nodiscard]] AFEM_HOST_DEVICE std::int32_t face_layers(int d, int a) const {
    return a == d ? cells[a] + 1 : cells[a] + 2;
  }
  [[nodiscard]] AFEM_HOST_DEVICE std::int64_t face_count(int d) const {
    std::int64_t n = 1;
    for (int a = 0; a < D; ++a) {
      n *= face_layers(d, a);
    }
    return n;
  }
  AFEM_HOST_DEVICE void cell_coords(std::int64_t c, std::int32_t (&k)[D]) const {
    split_index(c, k, [&](int a) { return cells[a]; });
  }
  /// The cell at `k`, or -1 outside the grid.
  [[nodiscard]] AFEM_HOST_DEVICE std::int64_t cell_at(const std::int32_t (&k)[D]) const {
    std::int64_t c = 0;
    for (int a = D - 1; a >= 0; --a) {
      if (k[a] < 0 || k[a] >= cells[a]) {
        return -1;
      }
      c = c * cells[a] + k[a];
    }
    return c;
  }
  AFEM_HOST_DEVICE void face_coords(int d, std::int64_t f, std::int32_t (&i)[D]) const {
    split_index(f, i, [&](int a) { return face_layers(d, a); });
  }
  /// The coordinates of `index` on a lattice of layers(a) along each axis a (first axis fastest):
  /// in 32-bit divisions when the index fits, which take a fraction of a 64-bit one's time.
  template <class Layers>
  AFEM_HOST_DEVICE static void split_index(std::int64_t index, std::int32_t (&at)[D],
                                           const Layers& layers) {
    if (index >= 0 && index <= std::numeric_limits<std::int32_t>::max()) {
      auto rest = static_cast<std::int32_t>(index);
      for (int a = 0; a < D; ++a) {
        at[a] = rest % layers(a);
        rest /= layers(a);
      }
      return;
    }
    for (int a = 0; a < D; ++a) {
      at[a] = static_cast<std::int32_t>(index % layers(a));
      index /= layers(a);
    }
  }
  /// The face of component d on the low (side 0) or high (side 1) end of the cell at `k`.
  [[nodiscard]] AFEM_HOST_DEVICE std::int64_t cell_face(int d, const std::int32_t (&k)[D],
                                                        int side) const {
    std::int64_t f = 0;
    for (int a = D - 1; a >= 0; --a) {
      f = f * face_layers(d, a) + (a == d ? k[a] + side : k[a] + 1);
    }
    return f;
  }
  /// The cells below (side 0) and above (side 1) the face of component d at `i` along axis d.
  AFEM_HOST_DEVICE void face_cell(int d, const std::int32_t (&i)[D], int side,
                                  std::int32_t (&k)[D]) const {
    for (int a = 0; a < D; ++a) {
      k[a] = a == d ? i[a] - 1 + side : i[a] - 1;
    }
  }
  /// Whether a cell beside the face of component d at `i` holds fluid.
  [[nodiscard]] AFEM_HOST_DEVICE bool beside_fluid(
      int d, const std::int32_t (&i)[D], memory::ArrayView<const std::uint8_t> fluid) const {
    for (int side = 0; side < 2; ++side) {
      std::int32_t k[D];
      face_cell(d, i, side, k);
      const std::int64_t c = cell_at(k);
      if (c >= 0 && fluid[static_cast<std::size_t>(c)] != 0) {
        return true;
      }
    }
    return false;
  }
  /// Whether the walls hold the face of component d at `i` at rest: it is normal to a closed side
  /// within that side's wall layers, or along a sticky side within its layers.
  [[nodiscard]] AFEM_HOST_DEVICE bool held(int d, const std::int32_t (&i)[D]) const {
    if ((closed[2 * d] && i[d] <= wall_layers) ||
        (closed[2 * d + 1] && i[d] >= cells[d] - wall_layers)) {
      return true;
    }
    for (int a = 0; a < D; ++a) {  // face index i along a sits at (i - 1/2) cells
      if (a != d && ((sticky[2 * a] && i[a] <= wall_layers) ||
                     (sticky[2 * a + 1] && i[a] > cells[a] - wall_layers))) {
        return true;
      }
    }
    return false;
  }
  /// Whether the cell at `k` lies outside the wall layers of every closed side (where fluid is).
  [[nodiscard]] AFEM_HOST_DEVICE bool inside_walls(const std::int32_t (&k)[D]) const {
    for (int a = 0; a < D; ++a) {
      if ((closed[2 * a] && k[a] < wall_layers) ||
          (closed[2 * a + 1] && k[a] >= cells[a] - wall_layers)) {
        return false;
      }
    }
    return true;
  }
  /// The coordinates of the face of component d on the low (side 0) or high (1) end of cell `k`.
  AFEM_HOST_DEVICE void cell_face_coords(int d, const std::int32_t (&k)[D], int side,
                                         std::int32_t (&i)[D]) const {
    for (int a = 0; a < D; ++a) {
      i[a] = a == d ? k[a] + side : k[a] + 1;
    }
  }
};

/// The D face velocity arrays of a MAC grid (component d: MacLattice::face_count(d) values).
template <int D>
struct MacVelocity {
  memory::ArrayView<double> component[D];
};

namespace detail {

/// The diagonal of a dry cell's row (its pressure is 0). Small next to the wet rows' (1 per free
/// face), so that the multigrid's Galerkin coarse operators see the free surface only through the
/// wet rows, which hold it as a Dirichlet condition: with 1 the dry rows would add a mass that
/// the coarse levels mistake for fluid (CG took 37 iterations at 256^2 instead of 10).
inline constexpr double dry_diagonal = 1e-6;

/// Row c of A (in the pattern's order: the neighbours below along the last axis first, the cell,
/// the neighbours above along the first axis first), and b_c = -(rho h / dt) times the net
/// outflow of the cell through its faces that the walls do not hold. Cells without fluid get the
/// identity row times dry_diagonal and b = 0.
template <int D>
struct MacRows {
  MacLattice<D> lattice;
  memory::ArrayView<const std::uint8_t> fluid;
  memory::ArrayView<const std::int32_t> offsets;
  memory::ArrayView<double> values;
  MacVelocity<D> velocity;
  double rhs_scale = 0.0;
  memory::ArrayView<double> rhs;
  AFEM_HOST_DEVICE void operator()(std::size_t c) const {
    std::int32_t k[D];
    lattice.cell_coords(static_cast<std::int64_t>(c), k);
    const bool wet = fluid[c] != 0;
    double diagonal = 0.0;
    double below[D] = {};
    double above[D] = {};
    double outflow = 0.0;
    if (wet) {
      for (int a = 0; a < D; ++a) {
        for (int side = 0; side < 2; ++side) {
          std::int32_t i[D];
          lattice.cell_face_coords(a, k, side, i);
          if (lattice.held(a, i)) {
            continue;  // a held face lets nothing through
          }
          const auto face = static_cast<std::size_t>(lattice.cell_face(a, k, side));
          outflow += side == 0 ? -velocity.component[a][face] : velocity.component[a][face];
          diagonal += 1.0;
          std::int32_t n[D];
          for (int b = 0; b < D; ++b) {
            n[b] = k[b];
          }
          n[a] += side == 0 ? -1 : 1;
          const std::int64_t neighbour = lattice.cell_at(n);
          if (neighbour >= 0 && fluid[static_cast<std::size_t>(neighbour)] != 0) {
            (side == 0 ? below : above)[a] = -1.0;
          }
        }
      }
    }
    auto slot = static_cast<std::size_t>(offsets[c]);
    for (int a = D - 1; a >= 0; --a) {
      if (k[a] > 0) {
        values[slot++] = below[a];
      }
    }
    // A wet cell whose every face the wall holds takes p = 0 like a dry one.
    values[slot++] = wet && diagonal > 0.0 ? diagonal : dry_diagonal;
    for (int a = 0; a < D; ++a) {
      if (k[a] + 1 < lattice.cells[a]) {
        values[slot++] = above[a];
      }
    }
    rhs[c] = wet && diagonal > 0.0 ? rhs_scale * outflow : 0.0;
  }
};

/// Zeroes the held faces of component d and subtracts (dt / (rho h)) (p_above - p_below) from
/// the others beside a fluid cell (the pressure of a dry cell, or outside the grid, is 0); marks
/// both kinds in `projected` for the extension.
template <int D>
struct MacCorrect {
  MacLattice<D> lattice;
  int d = 0;
  memory::ArrayView<const std::uint8_t> fluid;
  memory::ArrayView<const double> pressure;
  memory::ArrayView<double> velocity;
  double scale = 0.0;  ///< dt / (rho h)
  /// Set to 1 on the faces held or beside a fluid cell (those the projection sets), else 0.
  memory::ArrayView<std::uint8_t> projected;
  AFEM_HOST_DEVICE void operator()(std::size_t f) const {
    std::int32_t i[D];
    lattice.face_coords(d, static_cast<std::int64_t>(f), i);
    if (lattice.held(d, i)) {
      velocity[f] = 0.0;
      projected[f] = 1;
      return;
    }
    double p[2] = {0.0, 0.0};
    bool beside_fluid = false;
    for (int side = 0; side < 2; ++side) {
      std::int32_t k[D];
      lattice.face_cell(d, i, side, k);
      const std::int64_t c = lattice.cell_at(k);
      if (c >= 0 && fluid[static_cast<std::size_t>(c)] != 0) {
        p[side] = pressure[static_cast<std::size_t>(c)];
        beside_fluid = true;
      }
    }
    if (beside_fluid) {
      velocity[f] -= scale * (p[1] - p[0]);
    }
    projected[f] = beside_fluid ? 1 : 0;
  }
};

/// Velocity beyond the fluid, so that a particle reads no face the projection did not see (in a
/// wall layer, above the surface). Layer 1 (`from` the projected faces, marking its own faces in
/// `mark`): a face of component d that is not projected and has projected neighbours along the
/// axes takes their mean. Layer 2 (`from` layer 1's marks, `mark` null): a face in neither takes
/// the mean of its neighbours in layer 1, or 0 without any (a particle near an edge of the fluid
/// reads faces two steps away in 3D). Each pass writes only its layer's faces and reads only the
/// faces before, which it leaves alone.
template <int D>
struct MacExtend {
  MacLattice<D> lattice;
  int d = 0;
  memory::ArrayView<const std::uint8_t> projected;
  memory::ArrayView<const std::uint8_t> from;
  memory::ArrayView<std::uint8_t> mark;  ///< layer 1: 1 on its faces, else 0; empty in layer 2
  memory::ArrayView<double> velocity;
  AFEM_HOST_DEVICE void operator()(std::size_t f) const {
    const bool first = !mark.empty();
    if (projected[f] != 0 || (!first && from[f] != 0)) {
      if (first) {
        mark[f] = 0;
      }
      return;
    }
    std::int32_t i[D];
    lattice.face_coords(d, static_cast<std::int64_t>(f), i);
    double sum = 0.0;
    int count = 0;
    std::size_t stride = 1;
    for (int a = 0; a < D; ++a) {
      if (i[a] > 0 && from[f - stride] != 0) {
        sum += velocity[f - stride];
        ++count;
      }
      if (i[a] + 1 < lattice.face_layers(d, a) && from[f + stride] != 0) {
        sum += velocity[f + stride];
        ++count;
      }
      stride *= static_cast<std::size_t>(lattice.face_layers(d, a));
    }
    if (first) {
      mark[f] = count > 0 ? 1 : 0;
      if (count > 0) {
        velocity[f] = sum / count;
      }
    } else {
      velocity[f] = count > 0 ? sum / count : 0.0;
    }
  }
};

/// p = 0 on the dry cells.
struct DryPressure {
  memory::ArrayView<const std::uint8_t> fluid;
  memory::ArrayView<double> pressure;
  AFEM_HOST_DEVICE void operator()(std::size_t c) const {
    if (fluid[c] == 0) {
      pressure[c] = 0.0;
    }
  }
};

/// The net outflow over h of each fluid cell through its faces that the walls do not hold (0 on
/// the other cells).
template <int D>
struct MacDivergence {
  MacLattice<D> lattice;
  memory::ArrayView<const std::uint8_t> fluid;
  MacVelocity<D> velocity;
  double inverse_h = 0.0;
  memory::ArrayView<double> out;
  AFEM_HOST_DEVICE void operator()(std::size_t c) const {
    if (fluid[c] == 0) {
      out[c] = 0.0;
      return;
    }
    std::int32_t k[D];
    lattice.cell_coords(static_cast<std::int64_t>(c), k);
    double outflow = 0.0;
    for (int a = 0; a < D; ++a) {
      double flow[2];  // through the low and the high face
      for (int side = 0; side < 2; ++side) {
        std::int32_t i[D];
        lattice.cell_face_coords(a, k, side, i);
        flow[side] =
            lattice.held(a, i)
                ? 0.0
                : velocity.component[a][static_cast<std::size_t>(lattice.cell_face(a, k, side))];
      }
      outflow += flow[1] - flow[0];
    }
    out[c] = inverse_h * outflow;
  }
};

}  // namespace detail

/// CG figures of the last projection and the divergence it left over the fluid cells,
/// ||div u|| / ||div u*||, with the seconds of the multigrid hierarchy's rebuild (0 with Jacobi).
struct MacProjectionResult {
  fem::SolveResult solve;
  double divergence = 0.0;
  double setup_seconds = 0.0;
};

/// Owns the pressure matrix A (its pattern is fixed: every cell and its 2D neighbours), the
/// multigrid hierarchy built on it (or, with Jacobi, the stencil operator's row flags) and the
/// pressure (the next solve's initial guess), all in the pool, until destroyed; project() rebuilds
/// A's values and the hierarchy or the flags (the fluid cells change every step) and borrows its
/// scratch from the arena, which it gives back.
template <int D>
class MacProjection {
  static_assert(D == 2 || D == 3, "MacProjection: 2D or 3D");

public:
  /// `lattice`: the grid's cells, walls and held layers; `cell_size` h; `density` rho.
  MacProjection(const MacLattice<D>& lattice, double cell_size, double density,
                PressurePreconditioner preconditioner, memory::Pool& pool)
      : lattice_(lattice),
        cell_size_(cell_size),
        density_(density),
        preconditioner_(preconditioner),
        matrix_(pool),
        pressure_(memory::borrow_temporary<double>(pool, checked_cells(lattice),
                                                   "MacProjection.pressure")) {
    AFEM_EXPECTS(cell_size > 0.0 && density > 0.0,
                 "MacProjection: cell size " + std::to_string(cell_size) + " and density " +
                     std::to_string(density) + " must be positive");
    build_pattern(pool);
    const std::vector<double> zeros(pressure_.size(), 0.0);
    memory::copy_to_device(pressure_.view(), std::span<const double>(zeros), pool.stream());
    pool.stream().synchronize();
  }

  /// Projects `velocity` (u* on entry) given which cells hold fluid (`fluid`: 1 or 0 per cell).
  /// The faces the walls hold are read as 0 and set to 0 with the correction. Throws
  /// fem::SolverError when the multigrid's rebuild or CG fails: the velocity is then as it was
  /// (its held faces too), the pressure CG's last iterate.
  MacProjectionResult project(const MacVelocity<D>& velocity,
                              memory::ArrayView<const std::uint8_t> fluid, double dt,
                              memory::Arena& scratch) {
    const auto cells = static_cast<std::size_t>(lattice_.cell_count());
    AFEM_EXPECTS(fluid.size() == cells, "MacProjection: " + std::to_string(fluid.size()) +
                                            " fluid flags for " + std::to_string(cells) + " cells");
    for (int d = 0; d < D; ++d) {
      AFEM_EXPECTS(velocity.component[d].size() == static_cast<std::size_t>(lattice_.face_count(d)),
                   "MacProjection: " + std::to_string(velocity.component[d].size()) +
                       " values of velocity component " + std::to_string(d) + " for " +
                       std::to_string(lattice_.face_count(d)) + " faces");
    }
    AFEM_EXPECTS(dt > 0.0, "MacProjection: time step " + std::to_string(dt));
    auto policy = memory::arena_policy(scratch, "MacProjection.thrust");
    const auto count = thrust::counting_iterator<std::size_t>(0);
    auto rhs = memory::borrow_temporary<double>(scratch, cells, "MacProjection.rhs");
    auto divergence = memory::borrow_temporary<double>(scratch, cells, "MacProjection.divergence");
    auto view = matrix_.view();
    thrust::for_each_n(policy, count, cells,
                       detail::MacRows<D>{lattice_, fluid, view.offsets, view.values, velocity,
                                          -density_ * cell_size_ / dt, rhs.view()});
    // b is -(rho h / dt) times each wet cell's outflow, which over h is its divergence.
    const double before =
        fem::norm(rhs.view(), scratch) * dt / (density_ * cell_size_ * cell_size_);
    MacProjectionResult result;
    const fem::SolveOptions options{.tolerance = tolerance,
                                    .max_iterations = max_iterations,
                                    .preconditioner = fem::Preconditioner::jacobi};
    // The cell centres as the vertices of a grid (the pressure's unknowns).
    std::array<std::int32_t, D> vertex_cells{};
    for (int d = 0; d < D; ++d) {
      vertex_cells[static_cast<std::size_t>(d)] = lattice_.cells[d] - 1;
    }
    if (preconditioner_ == PressurePreconditioner::multigrid) {
      const auto start = std::chrono::steady_clock::now();
      if (multigrid_) {
        multigrid_->rebuild(matrix_, vertex_cells, scratch);
      } else {
        multigrid_.emplace(matrix_, vertex_cells, scratch,
                           fem::MultigridOptions{.smoothing_degree = 1, .semidefinite = true});
      }
      matrix_.pool().stream().synchronize();
      result.setup_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

      const fem::StencilOperator* stencil = multigrid_->fine_stencil();
      result.solve = stencil != nullptr ? fem::cg(*stencil, rhs.view(), pressure_.view(), scratch,
                                                  options, *multigrid_)
                                        : fem::cg(fem::as_operator(matrix_), rhs.view(),
                                                  pressure_.view(), scratch, options, *multigrid_);
    } else {
      if (jacobi_stencil_) {
        jacobi_stencil_->rebuild(matrix_, vertex_cells, scratch);
      } else {
        jacobi_stencil_.emplace(matrix_, vertex_cells, scratch);
      }
      result.solve = fem::cg(*jacobi_stencil_, rhs.view(), pressure_.view(), scratch, options);
    }
    // The dry rows are solved to the tolerance only: their pressure is 0.
    thrust::for_each_n(policy, count, cells, detail::DryPressure{fluid, pressure_.view()});
    // Per component: the correction, which marks the faces it sets, then the two layers beyond.
    std::size_t faces = 0;
    for (int d = 0; d < D; ++d) {
      faces = std::max(faces, velocity.component[d].size());
    }
    auto projected = memory::borrow_temporary<std::uint8_t>(scratch, faces, "MacProjection.faces");
    auto first = memory::borrow_temporary<std::uint8_t>(scratch, faces, "MacProjection.layer");
    for (int d = 0; d < D; ++d) {
      const std::size_t n = velocity.component[d].size();
      const memory::ArrayView<std::uint8_t> p = projected.view().subview(0, n);
      const memory::ArrayView<std::uint8_t> l = first.view().subview(0, n);
      thrust::for_each_n(
          policy, count, n,
          detail::MacCorrect<D>{lattice_, d, fluid, pressure_.view(), velocity.component[d],
                                dt / (density_ * cell_size_), p});
      thrust::for_each_n(policy, count, n,
                         detail::MacExtend<D>{lattice_, d, p, p, l, velocity.component[d]});
      thrust::for_each_n(policy, count, n,
                         detail::MacExtend<D>{lattice_, d, p, l, {}, velocity.component[d]});
    }
    const double after = divergence_norm(velocity, fluid, divergence.view(), scratch);
    result.divergence = before > 0.0 ? after / before : 0.0;
    return result;
  }

  /// The pressure of the last projection, one value per cell (0 on the cells without fluid).
  [[nodiscard]] memory::ArrayView<double> pressure() { return pressure_.view(); }
  [[nodiscard]] const MacLattice<D>& lattice() const { return lattice_; }
  /// The relative residual CG stops at, and the iterations it may take.
  static constexpr double tolerance = 1e-9;
  static constexpr int max_iterations = 5000;

private:
  static std::size_t checked_cells(const MacLattice<D>& lattice) {
    for (int d = 0; d < D; ++d) {
      AFEM_EXPECTS(lattice.cells[d] >= 2, "MacProjection: " + std::to_string(lattice.cells[d]) +
                                              " cells along axis " + std::to_string(d) +
                                              " (at least 2)");
    }
    AFEM_EXPECTS(lattice.cell_count() * (2 * D + 1) < (std::int64_t{1} << 31),
                 "MacProjection: " + std::to_string(lattice.cell_count()) +
                     " cells overflow 32-bit indices");
    return static_cast<std::size_t>(lattice.cell_count());
  }

  /// Every cell's row holds the cell and its neighbours along each axis, in increasing columns.
  void build_pattern(memory::Pool& pool) {
    const std::int64_t cells = lattice_.cell_count();
    std::vector<std::int32_t> offsets{0};
    std::vector<std::int32_t> columns;
    offsets.reserve(static_cast<std::size_t>(cells) + 1);
    columns.reserve(static_cast<std::size_t>(cells) * (2 * D + 1));
    std::int64_t stride[D];
    stride[0] = 1;
    for (int a = 1; a < D; ++a) {
      stride[a] = stride[a - 1] * lattice_.cells[a - 1];
    }
    for (std::int64_t c = 0; c < cells; ++c) {
      std::int32_t k[D];
      lattice_.cell_coords(c, k);
      for (int a = D - 1; a >= 0; --a) {
        if (k[a] > 0) {
          columns.push_back(static_cast<std::int32_t>(c - stride[a]));
        }
      }
      columns.push_back(static_cast<std::int32_t>(c));
      for (int a = 0; a < D; ++a) {
        if (k[a] + 1 < lattice_.cells[a]) {
          columns.push_back(static_cast<std::int32_t>(c + stride[a]));
        }
      }
      offsets.push_back(static_cast<std::int32_t>(columns.size()));
    }
    const std::vector<double> values(columns.size(), 0.0);
    matrix_.replace_with(fem::BsrMatrix<1>::from_host(pool, static_cast<std::int32_t>(cells),
                                                      static_cast<std::int32_t>(cells), offsets,
                                                      columns, values));
  }

  double divergence_norm(const MacVelocity<D>& velocity,
                         memory::ArrayView<const std::uint8_t> fluid, memory::ArrayView<double> out,
                         memory::Arena& scratch) const {
    auto policy = memory::arena_policy(scratch, "MacProjection.thrust");
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), out.size(),
                       detail::MacDivergence<D>{lattice_, fluid, velocity, 1.0 / cell_size_, out});
    return fem::norm(out, scratch);
  }

  MacLattice<D> lattice_;
  double cell_size_;
  double density_;
  PressurePreconditioner preconditioner_;
  fem::BsrMatrix<1> matrix_;
  std::optional<fem::Multigrid<1>> multigrid_;
  /// A applied by runs of alike rows, for CG with Jacobi (the multigrid holds its own).
  std::optional<fem::StencilOperator> jacobi_stencil_;
  memory::Temporary<double> pressure_;
};

}  // namespace afem::apps::mpm
