// Backend-generic: compiled by g++ on the OpenMP backend and by nvcc on the CUDA backend.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <vector>

#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/partition.hpp"
#include "arenafem/memory/copy.hpp"
#include "geometry/checks.hpp"
#include "support/backend_test.hpp"

namespace afem::geometry {
namespace {

template <class G>
class GridTest : public test::BackendTest {
protected:
  static constexpr int dim = G::dimension;

  G make() const {
    std::array<double, dim> origin{};
    std::array<double, dim> size{};
    std::array<std::int32_t, dim> resolution{};
    for (int d = 0; d < dim; ++d) {
      const auto axis = static_cast<std::size_t>(d);
      origin[axis] = -1.0 + 0.5 * d;
      size[axis] = 0.25 * (d + 1);
      resolution[axis] = 4 - d;
    }
    return G(origin, size, resolution);
  }
};

using Grids = ::testing::Types<Grid2D, Grid3D>;
TYPED_TEST_SUITE(GridTest, Grids);

TYPED_TEST(GridTest, CountsAndMeasuresMatchClosedForms) {
  const auto grid = this->make();
  const std::int64_t nx = 4;
  const std::int64_t ny = 3;
  const std::int64_t nz = TestFixture::dim == 3 ? 2 : 1;
  if (TestFixture::dim == 2) {
    EXPECT_EQ(grid.side_count(), nx * (ny + 1) + ny * (nx + 1));
    EXPECT_EQ(grid.boundary_side_count(), 2 * (nx + ny));
    EXPECT_EQ(grid.vertex_count(), (nx + 1) * (ny + 1));
  } else {
    EXPECT_EQ(grid.side_count(), (nx + 1) * ny * nz + nx * (ny + 1) * nz + nx * ny * (nz + 1));
    EXPECT_EQ(grid.boundary_side_count(), 2 * (nx * ny + ny * nz + nx * nz));
  }
  EXPECT_EQ(grid.cell_count(), nx * ny * nz);
  const auto measures =
      checks::evaluate(grid, *this->arena_, grid.cell_count(), 1, checks::CellMeasure{});
  double total = 0.0;
  for (const double m : measures) {
    total += m;
  }
  const double expected =
      TestFixture::dim == 2 ? (4 * 0.25) * (3 * 0.5) : (4 * 0.25) * (3 * 0.5) * (2 * 0.75);
  EXPECT_NEAR(total, expected, 1e-12);
}

TYPED_TEST(GridTest, CellGridIndexIsTheInverseOfCellIndexFirstAxisFastest) {
  const auto view = this->make().view();
  std::int32_t expected[TestFixture::dim] = {};
  for (std::int32_t cell = 0; cell < view.cell_count(); ++cell) {
    std::int32_t index[TestFixture::dim];
    view.cell_grid_index(cell, index);
    for (int d = 0; d < TestFixture::dim; ++d) {
      EXPECT_EQ(index[d], expected[d]) << "cell " << cell << ", axis " << d;
    }
    EXPECT_EQ(view.cell_index(index), cell);
    for (int d = 0; d < TestFixture::dim && ++expected[d] == view.resolution[d]; ++d) {
      expected[d] = 0;
    }
  }
}

TYPED_TEST(GridTest, SidesHaveOutwardNormalsAndBoundaryListMatches) {
  const auto grid = this->make();
  const auto values =
      checks::evaluate(grid, *this->arena_, grid.side_count(), 3, checks::SideCheck{});
  std::set<std::int32_t> boundary;
  for (std::int32_t s = 0; s < grid.side_count(); ++s) {
    const auto at = static_cast<std::size_t>(s) * 3;
    if (values[at] < 0) {
      boundary.insert(s);
    }
    EXPECT_GT(values[at + 1], 0.0) << "side " << s;
    EXPECT_LT(values[at + 2], 1e-12) << "side " << s;
  }
  std::set<std::int32_t> listed;
  for (std::int32_t i = 0; i < grid.boundary_side_count(); ++i) {
    listed.insert(grid.view().boundary_side(i));
  }
  EXPECT_EQ(listed, boundary);
}

TYPED_TEST(GridTest, LookupMapsBackToThePoint) {
  constexpr int dims = TypeParam::dimension;
  const auto grid = this->make();
  std::mt19937 random(5);
  constexpr std::size_t count = 1000;
  std::vector<double> host(count * dims);
  for (std::size_t i = 0; i < host.size(); ++i) {
    std::uniform_real_distribution<double> u(-1.5, 2.0);
    host[i] = u(random);
  }
  auto points = memory::borrow_temporary<double>(*this->arena_, host.size(), "test.points");
  auto cells = memory::borrow_temporary<std::int32_t>(*this->arena_, count, "test.cells");
  auto coords = memory::borrow_temporary<double>(*this->arena_, host.size(), "test.coords");
  memory::copy_to_device(points.view(), std::span<const double>(host), this->arena_->stream());
  grid.lookup(points.view(), LookupResult{cells.view(), coords.view()}, *this->arena_);
  std::vector<std::int32_t> found(count);
  std::vector<double> xi(host.size());
  memory::copy_to_host(std::span<std::int32_t>(found),
                       memory::ArrayView<const std::int32_t>(cells.view()), this->arena_->stream());
  memory::copy_to_host(std::span<double>(xi), memory::ArrayView<const double>(coords.view()),
                       this->arena_->stream());
  const auto& view = grid.view();
  for (std::size_t p = 0; p < count; ++p) {
    bool inside = true;
    for (int d = 0; d < dims; ++d) {
      const double t = (host[p * dims + d] - view.origin[d]) / view.cell_size[d];
      inside = inside && t >= 0.0 && t <= view.resolution[d];
    }
    if (!inside) {
      EXPECT_EQ(found[p], -1);
      continue;
    }
    ASSERT_GE(found[p], 0);
    typename TypeParam::View::Coords reference;
    for (int d = 0; d < dims; ++d) {
      reference[d] = xi[p * dims + d];
    }
    const auto x = view.cell_position(found[p], reference);
    for (int d = 0; d < dims; ++d) {
      EXPECT_NEAR(x[d], host[p * dims + d], 1e-12);
    }
  }
}

TYPED_TEST(GridTest, InvalidParametersNameTheAxis) {
  constexpr int dims = TypeParam::dimension;
  std::array<double, dims> origin{};
  std::array<double, dims> size{};
  std::array<std::int32_t, dims> resolution{};
  size.fill(1.0);
  resolution.fill(2);
  resolution[1] = 0;
  try {
    TypeParam grid(origin, size, resolution);
    FAIL() << "accepted a zero resolution";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("resolution 0 along axis 1"), std::string::npos)
        << error.what();
  }
  resolution.fill(2);
  size[0] = -1.0;
  EXPECT_THROW(TypeParam(origin, size, resolution), Error);
  size.fill(1.0);
  resolution.fill(TypeParam::dimension == 2 ? 40000 : 1000);  // sides beyond 32-bit indices
  try {
    TypeParam grid(origin, size, resolution);
    FAIL() << "accepted " << grid.cell_count() << " cells whose sides overflow";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("sides exceed 32-bit indices"), std::string::npos)
        << error.what();
  }
}

TYPED_TEST(GridTest, PartitionOfAGrid) {
  const auto grid = this->make();
  CellBasedGeometryPartition<TypeParam> partition(grid, *this->pool_);
  const std::vector<std::int32_t> one = {0};
  auto list = memory::borrow_temporary<std::int32_t>(*this->arena_, 1, "test.list");
  memory::copy_to_device(list.view(), std::span<const std::int32_t>(one), this->arena_->stream());
  partition.select_cells(list.view(), *this->arena_);
  EXPECT_EQ(partition.cell_count(), 1);
  EXPECT_EQ(partition.side_count(), 2 * TypeParam::dimension);
  EXPECT_EQ(partition.boundary_side_count(), 2 * TypeParam::dimension);
}

}  // namespace
}  // namespace afem::geometry
