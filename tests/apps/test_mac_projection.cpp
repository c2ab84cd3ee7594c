// The staggered (MAC) pressure projection: the divergence it leaves is at the solver's tolerance
// with either preconditioner, a fluid at rest in gravity is in exact discrete balance, the walls
// (slip or sticky) hold their faces and the faces beyond the fluid take their neighbours' velocity,
// the multigrid's iteration count stays bounded as the grid is refined, and bad input is refused
// without changing the velocity.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "arenafem/apps/mpm/mac_projection.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"

namespace afem::apps::mpm {
namespace {

using MacProjectionTest = test::BackendTest;

/// A box of n cells per axis with closed walls two cells thick, fluid in the cells below
/// `fill` of the height (inside the walls).
template <int D>
struct Tank {
  MacLattice<D> lattice;
  std::vector<std::uint8_t> fluid;

  Tank(std::int32_t n, double fill, bool sticky_floor = false) {
    for (int d = 0; d < D; ++d) {
      lattice.cells[d] = n;
      lattice.closed[2 * d] = true;
      lattice.closed[2 * d + 1] = true;
    }
    lattice.sticky[2 * (D - 1)] = sticky_floor;
    lattice.wall_layers = 2;
    fluid.assign(static_cast<std::size_t>(lattice.cell_count()), 0);
    for (std::int64_t c = 0; c < lattice.cell_count(); ++c) {
      std::int32_t k[D];
      lattice.cell_coords(c, k);
      bool inside = true;
      for (int d = 0; d < D; ++d) {
        inside = inside && k[d] >= 2 && k[d] < n - 2;
      }
      fluid[static_cast<std::size_t>(c)] = inside && k[D - 1] < 2 + fill * (n - 4) ? 1 : 0;
    }
  }
};

/// Face values from a fixed hash in [-1, 1].
std::vector<double> hashed(std::int64_t count, std::uint64_t seed) {
  std::vector<double> v(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ULL ^ seed;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 29;
    v[i] = static_cast<double>(h >> 11) / static_cast<double>(1ULL << 52) - 1.0;
  }
  return v;
}

/// Hashed values on every face of each component of `lattice` (component d from seed + d).
template <int D>
std::array<std::vector<double>, D> hashed_faces(const MacLattice<D>& lattice, std::uint64_t seed) {
  std::array<std::vector<double>, D> faces;
  for (int d = 0; d < D; ++d) {
    faces[static_cast<std::size_t>(d)] =
        hashed(lattice.face_count(d), seed + static_cast<std::uint64_t>(d));
  }
  return faces;
}

/// Device copies of the face velocities.
template <int D>
struct Faces {
  std::array<memory::Temporary<double>, D> storage;
  Faces(memory::Pool& pool, const MacLattice<D>& lattice,
        const std::array<std::vector<double>, D>& values) {
    for (int d = 0; d < D; ++d) {
      memory::replace_owned(
          storage[d], memory::borrow_temporary<double>(
                          pool, static_cast<std::size_t>(lattice.face_count(d)), "test.faces"));
      test::copy_to_device(storage[d].view(), values[d]);
    }
  }
  MacVelocity<D> view() {
    MacVelocity<D> v;
    for (int d = 0; d < D; ++d) {
      v.component[d] = storage[d].view();
    }
    return v;
  }
  std::vector<double> host(int d) {
    return test::copy_to_host(memory::ArrayView<const double>(storage[d].view()));
  }
};

/// The net outflow over h of each fluid cell, from host face values.
template <int D>
double divergence_norm(const Tank<D>& tank, const std::array<std::vector<double>, D>& u, double h) {
  double sum = 0.0;
  for (std::int64_t c = 0; c < tank.lattice.cell_count(); ++c) {
    if (tank.fluid[static_cast<std::size_t>(c)] == 0) {
      continue;
    }
    std::int32_t k[D];
    tank.lattice.cell_coords(c, k);
    double div = 0.0;
    for (int d = 0; d < D; ++d) {
      div += u[d][static_cast<std::size_t>(tank.lattice.cell_face(d, k, 1))] -
             u[d][static_cast<std::size_t>(tank.lattice.cell_face(d, k, 0))];
    }
    sum += (div / h) * (div / h);
  }
  return std::sqrt(sum);
}

template <int D>
void check_projection(memory::Pool& pool, memory::Arena& arena, PressurePreconditioner kind,
                      bool sticky_floor = false) {
  const Tank<D> tank(D == 2 ? 40 : 16, 0.6, sticky_floor);
  const double h = 0.025;
  const double dt = 1e-3;
  std::array<std::vector<double>, D> start = hashed_faces<D>(tank.lattice, 17);
  Faces<D> faces(pool, tank.lattice, start);
  auto fluid = memory::borrow_temporary<std::uint8_t>(pool, tank.fluid.size(), "test.fluid");
  test::copy_to_device(fluid.view(), tank.fluid);
  MacProjection<D> projection(tank.lattice, h, 1000.0, kind, pool);
  const MacProjectionResult result = projection.project(faces.view(), fluid.view(), dt, arena);
  std::array<std::vector<double>, D> end;
  for (int d = 0; d < D; ++d) {
    end[d] = faces.host(d);
  }
  const double before = divergence_norm<D>(tank, start, h);
  const double after = divergence_norm<D>(tank, end, h);
  EXPECT_GT(before, 1.0);
  EXPECT_LE(after / before, 1e-8) << "iterations " << result.solve.iterations;
  EXPECT_NEAR(result.divergence, after / before, 0.1 * after / before);  // sums of +-1 values
  // Held faces are at rest. The others beside no fluid cell: layer 1 (next to a held face or one
  // beside fluid) takes the mean of those neighbours, layer 2 the mean of its layer-1 neighbours
  // (0 without any).
  int extended = 0;
  for (int d = 0; d < D; ++d) {
    const auto face_total = static_cast<std::size_t>(tank.lattice.face_count(d));
    std::vector<int> layer(face_total, 2);
    const auto for_neighbours = [&](const std::int32_t(&i)[D], std::int64_t f, auto&& visit) {
      std::int64_t stride = 1;
      for (int a = 0; a < D; ++a) {
        for (const int step : {-1, 1}) {
          std::int32_t n[D];
          std::copy(i, i + D, n);
          n[a] += step;
          if (n[a] >= 0 && n[a] < tank.lattice.face_layers(d, a)) {
            visit(static_cast<std::size_t>(f + step * stride));
          }
        }
        stride *= tank.lattice.face_layers(d, a);
      }
    };
    for (std::size_t f = 0; f < face_total; ++f) {
      std::int32_t i[D];
      tank.lattice.face_coords(d, static_cast<std::int64_t>(f), i);
      bool beside_fluid = false;
      for (int side = 0; side < 2; ++side) {
        std::int32_t k[D];
        tank.lattice.face_cell(d, i, side, k);
        const std::int64_t c = tank.lattice.cell_at(k);
        beside_fluid = beside_fluid || (c >= 0 && tank.fluid[static_cast<std::size_t>(c)] != 0);
      }
      if (tank.lattice.held(d, i)) {
        EXPECT_EQ(end[d][f], 0.0) << "component " << d << " face " << f;
      }
      layer[f] = tank.lattice.held(d, i) || beside_fluid ? 0 : 2;
    }
    for (std::size_t f = 0; f < face_total; ++f) {
      std::int32_t i[D];
      tank.lattice.face_coords(d, static_cast<std::int64_t>(f), i);
      if (layer[f] == 2) {
        bool next = false;
        for_neighbours(i, static_cast<std::int64_t>(f),
                       [&](std::size_t g) { next = next || layer[g] == 0; });
        layer[f] = next ? 1 : 2;
      }
    }
    for (std::size_t f = 0; f < face_total; ++f) {
      if (layer[f] == 0) {
        continue;
      }
      std::int32_t i[D];
      tank.lattice.face_coords(d, static_cast<std::int64_t>(f), i);
      double sum = 0.0;
      int count = 0;
      for_neighbours(i, static_cast<std::int64_t>(f), [&](std::size_t g) {
        if (layer[g] == layer[f] - 1) {
          sum += end[d][g];
          ++count;
        }
      });
      extended += count > 0 && layer[f] == 2 ? 1 : 0;
      EXPECT_NEAR(end[d][f], count > 0 ? sum / count : 0.0, 1e-15)
          << "component " << d << " face " << f << " layer " << layer[f];
    }
  }
  EXPECT_GT(extended, 0);
  // The dry cells hold p = 0.
  const auto pressure = test::copy_to_host(memory::ArrayView<const double>(projection.pressure()));
  for (std::size_t c = 0; c < pressure.size(); ++c) {
    if (tank.fluid[c] == 0) {
      EXPECT_EQ(pressure[c], 0.0) << "cell " << c;
    }
  }
}

TEST_F(MacProjectionTest, LeavesTheDivergenceAtTheSolversTolerance2D) {
  check_projection<2>(*pool_, *arena_, PressurePreconditioner::jacobi);
  check_projection<2>(*pool_, *arena_, PressurePreconditioner::multigrid);
  check_projection<2>(*pool_, *arena_, PressurePreconditioner::multigrid, true);
}

TEST_F(MacProjectionTest, LeavesTheDivergenceAtTheSolversTolerance3D) {
  check_projection<3>(*pool_, *arena_, PressurePreconditioner::jacobi);
  check_projection<3>(*pool_, *arena_, PressurePreconditioner::multigrid, true);
}

/// A fluid at rest in gravity: u* = -g dt on the vertical faces. The projection brings every face
/// back to rest and the pressure is hydrostatic: rho g times the depth below the surface.
TEST_F(MacProjectionTest, HoldsAFluidAtRestInGravity) {
  constexpr int dim = 2;
  const Tank<dim> tank(32, 0.5);
  const double h = 1.0 / 32.0;
  const double dt = 1e-3;
  const double g = 9.81;
  const double rho = 1000.0;
  std::array<std::vector<double>, dim> start;
  start[0].assign(static_cast<std::size_t>(tank.lattice.face_count(0)), 0.0);
  start[1].assign(static_cast<std::size_t>(tank.lattice.face_count(1)), -g * dt);
  Faces<dim> faces(*pool_, tank.lattice, start);
  auto fluid = memory::borrow_temporary<std::uint8_t>(*pool_, tank.fluid.size(), "test.fluid");
  test::copy_to_device(fluid.view(), tank.fluid);
  MacProjection<dim> projection(tank.lattice, h, rho, PressurePreconditioner::multigrid, *pool_);
  projection.project(faces.view(), fluid.view(), dt, *arena_);
  for (int d = 0; d < dim; ++d) {
    const std::vector<double> u = faces.host(d);
    for (std::int64_t f = 0; f < tank.lattice.face_count(d); ++f) {
      std::int32_t i[dim];
      tank.lattice.face_coords(d, f, i);
      std::int32_t k[dim];
      tank.lattice.face_cell(d, i, 0, k);
      const std::int64_t below = tank.lattice.cell_at(k);
      tank.lattice.face_cell(d, i, 1, k);
      const std::int64_t above = tank.lattice.cell_at(k);
      const bool wet = (below >= 0 && tank.fluid[static_cast<std::size_t>(below)] != 0) &&
                       (above >= 0 && tank.fluid[static_cast<std::size_t>(above)] != 0);
      if (wet) {
        EXPECT_NEAR(u[static_cast<std::size_t>(f)], 0.0, 1e-6 * g * dt)
            << "component " << d << " face " << f;
      }
    }
  }
  // Each row of fluid cells: p = rho g h (rows above it + 1/2) with p = 0 half a cell above the top
  // row (the dry cell's centre).
  const auto pressure = test::copy_to_host(memory::ArrayView<const double>(projection.pressure()));
  const std::int32_t top = 2 + 14 - 1;  // the highest row of fluid: 2 + 0.5 (32 - 4) - 1
  for (std::int64_t c = 0; c < tank.lattice.cell_count(); ++c) {
    if (tank.fluid[static_cast<std::size_t>(c)] == 0) {
      continue;
    }
    std::int32_t k[dim];
    tank.lattice.cell_coords(c, k);
    const double depth = (top - k[1] + 1) * h;
    EXPECT_NEAR(pressure[static_cast<std::size_t>(c)], rho * g * depth, 1e-6 * rho * g)
        << "cell " << k[0] << ", " << k[1];
  }
}

/// CG iterations with the multigrid on 64^2 and 256^2 cells: within 1.5x of each other, where
/// Jacobi's grow with the resolution.
TEST_F(MacProjectionTest, MultigridIterationsStayBoundedAsTheGridIsRefined) {
  constexpr int dim = 2;
  std::array<int, 2> multigrid{};
  std::array<int, 2> jacobi{};
  for (std::size_t r = 0; r < 2; ++r) {
    const std::int32_t n = r == 0 ? 64 : 256;
    const Tank<dim> tank(n, 0.5);
    std::array<std::vector<double>, dim> start = hashed_faces<dim>(tank.lattice, 5);
    auto fluid = memory::borrow_temporary<std::uint8_t>(*pool_, tank.fluid.size(), "test.fluid");
    test::copy_to_device(fluid.view(), tank.fluid);
    for (const PressurePreconditioner kind :
         {PressurePreconditioner::jacobi, PressurePreconditioner::multigrid}) {
      Faces<dim> faces(*pool_, tank.lattice, start);
      MacProjection<dim> projection(tank.lattice, 1.0 / n, 1000.0, kind, *pool_);
      const int iterations =
          projection.project(faces.view(), fluid.view(), 1e-3, *arena_).solve.iterations;
      (kind == PressurePreconditioner::jacobi ? jacobi : multigrid)[r] = iterations;
    }
  }
  std::printf("[          ] CG iterations at 64^2, 256^2: multigrid %d, %d; Jacobi %d, %d\n",
              multigrid[0], multigrid[1], jacobi[0], jacobi[1]);
  EXPECT_LE(multigrid[1], 1.5 * multigrid[0]) << multigrid[0] << " then " << multigrid[1];
  EXPECT_GT(jacobi[1], 2 * jacobi[0]) << jacobi[0] << " then " << jacobi[1];
  EXPECT_LT(4 * multigrid[1], jacobi[1]);
}

// A NaN in u* on a face of a fluid cell breaks CG down: the projection throws SolverError and
// leaves every face as it was, the held ones too (they start with values here).
TEST_F(MacProjectionTest, AFailedSolveLeavesTheVelocity) {
  constexpr int dim = 2;
  const Tank<dim> tank(16, 0.5);
  std::array<std::vector<double>, dim> start = hashed_faces<dim>(tank.lattice, 5);
  std::size_t poisoned = 0;
  int held = 0;
  for (std::int64_t c = 0; c < tank.lattice.cell_count() && poisoned == 0; ++c) {
    std::int32_t k[dim];
    tank.lattice.cell_coords(c, k);
    std::int32_t i[dim];
    tank.lattice.cell_face_coords(0, k, 1, i);
    if (tank.fluid[static_cast<std::size_t>(c)] != 0 && !tank.lattice.held(0, i)) {
      poisoned = static_cast<std::size_t>(tank.lattice.cell_face(0, k, 1));
    }
  }
  ASSERT_GT(poisoned, 0U);
  start[0][poisoned] = std::numeric_limits<double>::quiet_NaN();
  for (int d = 0; d < dim; ++d) {
    for (std::int64_t f = 0; f < tank.lattice.face_count(d); ++f) {
      std::int32_t i[dim];
      tank.lattice.face_coords(d, f, i);
      held += tank.lattice.held(d, i) && start[d][static_cast<std::size_t>(f)] != 0.0 ? 1 : 0;
    }
  }
  ASSERT_GT(held, 0);
  auto fluid = memory::borrow_temporary<std::uint8_t>(*pool_, tank.fluid.size(), "test.fluid");
  test::copy_to_device(fluid.view(), tank.fluid);
  for (const PressurePreconditioner kind :
       {PressurePreconditioner::jacobi, PressurePreconditioner::multigrid}) {
    SCOPED_TRACE(kind == PressurePreconditioner::jacobi ? "jacobi" : "multigrid");
    Faces<dim> faces(*pool_, tank.lattice, start);
    MacProjection<dim> projection(tank.lattice, 0.1, 1000.0, kind, *pool_);
    EXPECT_THROW(projection.project(faces.view(), fluid.view(), 1e-3, *arena_), fem::SolverError);
    arena_->reset();
    for (int d = 0; d < dim; ++d) {
      const std::vector<double> end = faces.host(d);
      ASSERT_EQ(end.size(), start[d].size());
      EXPECT_EQ(std::memcmp(end.data(), start[d].data(), end.size() * sizeof(double)), 0)
          << "component " << d;
    }
  }
}

TEST_F(MacProjectionTest, RefusesMismatchedSizesAndLeavesTheVelocity) {
  constexpr int dim = 2;
  const Tank<dim> tank(16, 0.5);
  std::array<std::vector<double>, dim> start = hashed_faces<dim>(tank.lattice, 3);
  Faces<dim> faces(*pool_, tank.lattice, start);
  auto fluid = memory::borrow_temporary<std::uint8_t>(*pool_, tank.fluid.size(), "test.fluid");
  test::copy_to_device(fluid.view(), tank.fluid);
  MacProjection<dim> projection(tank.lattice, 0.1, 1000.0, PressurePreconditioner::multigrid,
                                *pool_);
  const auto expect_refusal = [&](auto&& call, const std::string& words) {
    try {
      call();
      ADD_FAILURE() << "no error for " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    for (int d = 0; d < dim; ++d) {
      EXPECT_EQ(faces.host(d), start[d]);
    }
  };
  expect_refusal(
      [&] {
        projection.project(faces.view(), fluid.view().subview(0, tank.fluid.size() - 1), 1e-3,
                           *arena_);
      },
      "255 fluid flags for 256 cells");
  expect_refusal(
      [&] {
        MacVelocity<dim> short_faces = faces.view();
        short_faces.component[1] = short_faces.component[1].subview(0, 10);
        projection.project(short_faces, fluid.view(), 1e-3, *arena_);
      },
      "10 values of velocity component 1");
  expect_refusal([&] { projection.project(faces.view(), fluid.view(), -1.0, *arena_); },
                 "time step");
  MacLattice<dim> flat = tank.lattice;
  flat.cells[0] = 1;
  EXPECT_THROW(MacProjection<dim>(flat, 0.1, 1000.0, PressurePreconditioner::jacobi, *pool_),
               Error);
  EXPECT_THROW(
      MacProjection<dim>(tank.lattice, -0.1, 1000.0, PressurePreconditioner::jacobi, *pool_),
      Error);
}

}  // namespace
}  // namespace afem::apps::mpm
