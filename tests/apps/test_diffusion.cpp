// The diffusion problem converges at the optimal L2 rate on every geometry and degree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>

#include "../fem/unit_box.hpp"
#include "arenafem/apps/diffusion/diffusion.hpp"
#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/gmsh.hpp"
#include "arenafem/memory/error.hpp"
#include "support/backend_test.hpp"
#include "support/fault_injection.hpp"

namespace afem::apps::diffusion {
namespace {

/// The manufactured problem with nu = 1.5 and Dirichlet data on the whole boundary.
Problem viscous() {
  Problem problem;
  problem.viscosity = 1.5;
  return problem;
}

class DiffusionGmsh : public test::BackendTest {};

template <class G, int Degree, int Coarse>
struct Case {
  using Geometry = G;
  static constexpr int degree = Degree;
  static constexpr int coarse = Coarse;
};

template <class C>
class DiffusionTest : public test::BackendTest {};
using Cases = ::testing::Types<
    Case<geometry::Grid2D, 1, 8>, Case<geometry::Grid2D, 2, 8>, Case<geometry::Trimesh, 1, 8>,
    Case<geometry::Trimesh, 2, 8>, Case<geometry::Quadmesh, 1, 8>, Case<geometry::Quadmesh, 2, 8>,
    Case<geometry::Grid3D, 1, 4>, Case<geometry::Grid3D, 2, 4>, Case<geometry::Tetmesh, 1, 4>,
    Case<geometry::Tetmesh, 2, 4>, Case<geometry::Hexmesh, 1, 4>, Case<geometry::Hexmesh, 2, 4>>;
TYPED_TEST_SUITE(DiffusionTest, Cases);

TYPED_TEST(DiffusionTest, L2ErrorFallsAtTheOptimalRate) {
  using G = typename TypeParam::Geometry;
  constexpr int degree = TypeParam::degree;
  double errors[2];
  for (int level = 0; level < 2; ++level) {
    auto geometry = test::UnitBox<G>::make(TypeParam::coarse << level, *this->pool_, *this->arena_);
    const Report report = solve<G, degree>(*geometry, viscous(), *this->pool_, *this->arena_);
    EXPECT_LE(report.solve.residual, 1e-10);
    errors[level] = report.l2_error;
  }
  const double rate = std::log2(errors[0] / errors[1]);
  EXPECT_GE(rate, degree + 1 - 0.2) << "L2 errors " << errors[0] << " -> " << errors[1];
  EXPECT_LT(errors[1], degree == 1 ? 3e-2 : 3e-3);
}

// Dirichlet data on two faces (xmin, ymin by tag), the exact flux integrated over the other
// boundary sides: still the optimal rate, and not the all-Dirichlet solution.
TYPED_TEST(DiffusionTest, MixedConditionsByTagConvergeAtTheOptimalRate) {
  using G = typename TypeParam::Geometry;
  constexpr int degree = TypeParam::degree;
  Problem problem = viscous();
  problem.dirichlet = {geometry::box_side_tag(0, false), geometry::box_side_tag(1, false)};
  double errors[2];
  for (int level = 0; level < 2; ++level) {
    auto geometry = test::UnitBox<G>::make(TypeParam::coarse << level, *this->pool_, *this->arena_);
    const Report mixed = solve<G, degree>(*geometry, problem, *this->pool_, *this->arena_);
    const Report dirichlet = solve<G, degree>(*geometry, viscous(), *this->pool_, *this->arena_);
    EXPECT_LE(mixed.solve.residual, 1e-10);
    EXPECT_NE(mixed.l2_error, dirichlet.l2_error);
    EXPECT_GT(mixed.solve.iterations, 0);
    errors[level] = mixed.l2_error;
  }
  const double rate = std::log2(errors[0] / errors[1]);
  // Coarse Neumann problems are further from the asymptotic rate (P1 tets: 1.76 from 4 to 8).
  EXPECT_GE(rate, degree + 1 - 0.3) << "L2 errors " << errors[0] << " -> " << errors[1];
  EXPECT_LT(errors[1], degree == 1 ? 6e-2 : 6e-3);
}

/// -nu u'' = f on [0, length] x [0, 1] with u(0) = 0, nu u'(length) = g and no flux through
/// y = 0 and y = 1: u = (f / nu) (length x - x^2 / 2) + (g / nu) x.
double closed_form(double x, double length, double f, double g, double nu) {
  return f / nu * (length * x - 0.5 * x * x) + g / nu * x;
}

/// The held unstructured Gmsh mesh with its sides on x = 0 tagged "left" (7) and on x = 1.5
/// tagged "right" (8), written to MSH and read back.
geometry::MeshData tagged_rectangle() {
  geometry::MeshData data =
      geometry::read_gmsh(std::filesystem::path(AFEM_APPS_TEST_DATA) / "rectangle_tri.msh");
  const auto x = [&](std::int32_t v) { return data.positions[2 * static_cast<std::size_t>(v)]; };
  for (std::size_t c = 0; c < data.cells.size() / 3; ++c) {
    for (int k = 0; k < 3; ++k) {
      const std::int32_t a = data.cells[3 * c + static_cast<std::size_t>(k)];
      const std::int32_t b = data.cells[3 * c + static_cast<std::size_t>((k + 1) % 3)];
      for (const auto& [at, tag] : {std::pair{0.0, 7}, std::pair{1.5, 8}}) {
        if (std::abs(x(a) - at) < 1e-12 && std::abs(x(b) - at) < 1e-12) {
          data.side_vertices.insert(data.side_vertices.end(), {a, b});
          data.side_tags.push_back(tag);
        }
      }
    }
  }
  data.side_tag_names = {{7, "left"}, {8, "right"}};
  std::stringstream text;
  geometry::write_gmsh(data, text);
  return geometry::read_gmsh(text, "tagged_rectangle.msh");
}

TEST_F(DiffusionGmsh, MixedDirichletNeumannProblemMatchesItsClosedForm) {
  const geometry::MeshData data = tagged_rectangle();
  ASSERT_EQ(data.side_tag_names.size(), 2U);
  EXPECT_GE(data.side_total(), 4);
  const geometry::Trimesh mesh(data, *pool_, *arena_);
  const double f = 2.0;
  const double g = -0.75;
  const double nu = 1.5;
  Problem problem;
  problem.viscosity = nu;
  problem.source = f;
  problem.dirichlet = {7};
  problem.neumann = {{8, g}};
  const Report report = solve<geometry::Trimesh, 2>(
      mesh, problem, *pool_, *arena_, {.tolerance = 1e-12, .vtu = {}, .vertex_values = true});
  EXPECT_TRUE(std::isnan(report.l2_error));
  ASSERT_EQ(report.vertex_values.size(), static_cast<std::size_t>(mesh.vertex_count()));
  double largest = 0.0;
  for (std::size_t v = 0; v < report.vertex_values.size(); ++v) {
    const double expected = closed_form(data.positions[2 * v], 1.5, f, g, nu);
    EXPECT_NEAR(report.vertex_values[v], expected, 1e-9) << "vertex " << v;
    largest = std::max(largest, std::abs(expected));
  }
  EXPECT_GT(largest, 0.1);
  // u peaks inside, where u' = 0: x = length + g / f.
  EXPECT_LE(report.maximum, closed_form(1.5 + g / f, 1.5, f, g, nu) + 1e-9);
  EXPECT_GE(report.maximum, largest - 1e-9);

  // Linear elements: the same problem, not exact but close.
  const Report linear = solve<geometry::Trimesh, 1>(
      mesh, problem, *pool_, *arena_, {.tolerance = 1e-12, .vtu = {}, .vertex_values = true});
  double error = 0.0;
  for (std::size_t v = 0; v < linear.vertex_values.size(); ++v) {
    error = std::max(error, std::abs(linear.vertex_values[v] -
                                     closed_form(data.positions[2 * v], 1.5, f, g, nu)));
  }
  EXPECT_GT(error, 1e-6);
  EXPECT_LT(error, 0.05);
}

TEST_F(DiffusionGmsh, RefusesInconsistentBoundaryData) {
  const geometry::Trimesh mesh(tagged_rectangle(), *pool_, *arena_);
  const auto message = [&](const Problem& problem) -> std::string {
    try {
      (void)solve<geometry::Trimesh, 1>(mesh, problem, *pool_, *arena_);
    } catch (const Error& error) {
      return error.what();
    }
    return "no error";
  };
  Problem problem;
  problem.source = 1.0;
  problem.dirichlet = {9};
  EXPECT_NE(message(problem).find("no boundary side has tag 9; the boundary's tags are 7, 8"),
            std::string::npos)
      << message(problem);
  problem.dirichlet = {7};
  problem.neumann = {{7, 1.0}};
  EXPECT_NE(message(problem).find("side tag 7 is both Dirichlet and Neumann"), std::string::npos);
  problem.neumann = {{8, 1.0}, {8, 2.0}};
  EXPECT_NE(message(problem).find("side tag 8 has Neumann data twice"), std::string::npos);
  problem.neumann = {{8, 1.0}};
  problem.source.reset();
  EXPECT_NE(message(problem).find("Neumann data needs a source"), std::string::npos);
  problem.source = 1.0;
  problem.dirichlet = {};
  EXPECT_NE(message(problem).find("Neumann data needs the Dirichlet sides named"),
            std::string::npos);
  EXPECT_EQ(arena_->stats().live_handles, 0U);
}

// Fault injection: the solve (space, restriction, assembly, CG) on a fresh pool fails at each of
// its upstream allocations in turn: an OutOfMemory naming the label, the mesh unchanged, the
// arena empty, nothing left in the pool once the objects are gone, and a retry that gives the
// result of a solve that never failed.
TEST(DiffusionFaults, TheSolveSurvivesAFailureAtEachOfItsAllocations) {
  if (!test::device_available()) {
    GTEST_SKIP() << "no device for this build's backend";
  }
  using G = geometry::Trimesh;
  Report clean;
  {
    test::FaultyPool faulty;
    memory::Arena arena(faulty.pool, {.name = "step"});
    auto mesh = test::UnitBox<G>::make(4, faulty.pool, arena);
    clean = solve<G, 2>(*mesh, viscous(), faulty.pool, arena);
  }
  const int faults = test::fail_each_allocation([&](int k) {
    bool failed = false;
    test::FaultyPool faulty;
    {
      memory::Arena arena(faulty.pool, {.name = "step"});
      auto mesh = test::UnitBox<G>::make(4, faulty.pool, arena);
      const geometry::MeshData before = mesh->to_mesh_data();
      faulty.plan_fault(k);
      try {
        (void)solve<G, 2>(*mesh, viscous(), faulty.pool, arena);
      } catch (const afem::OutOfMemory& error) {
        failed = true;
        test::expect_names_a_label(error);
        faulty.clear_fault();
        const geometry::MeshData after = mesh->to_mesh_data();
        EXPECT_EQ(after.positions, before.positions) << "fault " << k;
        EXPECT_EQ(after.cells, before.cells) << "fault " << k;
        EXPECT_EQ(arena.stats().live_handles, 0U) << "fault " << k;
      }
      faulty.clear_fault();
      const Report retry = solve<G, 2>(*mesh, viscous(), faulty.pool, arena);
      EXPECT_EQ(retry.l2_error, clean.l2_error) << "fault " << k;
      EXPECT_EQ(retry.solve.iterations, clean.solve.iterations) << "fault " << k;
    }
    EXPECT_EQ(faulty.pool.stats().live_bytes, 0U) << "fault " << k;
    // A fault that fired must have failed the operation (none swallowed).
    EXPECT_EQ(failed, faulty.resource.failures() > 0) << "fault " << k;
    return failed;
  });
  EXPECT_GE(faults, 5);
  std::printf("[ faults   ] diffusion solve: %d injected upstream faults, each survived\n", faults);
}

}  // namespace
}  // namespace afem::apps::diffusion
