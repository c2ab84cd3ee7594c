// The diffusion problem converges at the optimal L2 rate on every geometry and degree.
#include <gtest/gtest.h>

#include <cmath>

#include "../fem/unit_box.hpp"
#include "apps/diffusion/diffusion.hpp"
#include "support/backend_test.hpp"

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

}  // namespace
}  // namespace afem::apps::diffusion
