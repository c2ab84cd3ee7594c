// The diffusion problem converges at the optimal L2 rate on every geometry and degree.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "../fem/unit_box.hpp"
#include "apps/diffusion/diffusion.hpp"
#include "support/backend_test.hpp"
#include "support/fault_injection.hpp"

namespace afem::apps::diffusion {
namespace {

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
    const Report report = solve<G, degree>(*geometry, 1.5, *this->pool_, *this->arena_, 1e-10);
    EXPECT_LE(report.solve.residual, 1e-10);
    errors[level] = report.l2_error;
  }
  const double rate = std::log2(errors[0] / errors[1]);
  EXPECT_GE(rate, degree + 1 - 0.2) << "L2 errors " << errors[0] << " -> " << errors[1];
  EXPECT_LT(errors[1], degree == 1 ? 3e-2 : 3e-3);
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
    clean = solve<G, 2>(*mesh, 1.5, faulty.pool, arena, 1e-10);
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
        (void)solve<G, 2>(*mesh, 1.5, faulty.pool, arena, 1e-10);
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
      const Report retry = solve<G, 2>(*mesh, 1.5, faulty.pool, arena, 1e-10);
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
