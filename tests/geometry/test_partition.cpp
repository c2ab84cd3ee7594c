// Backend-generic: compiled by g++ on the OpenMP backend and by nvcc on the CUDA backend.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/geometry/partition.hpp"
#include "arenafem/memory/copy.hpp"
#include "support/backend_test.hpp"

namespace afem::geometry {
namespace {

class PartitionTest : public test::BackendTest {
protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    mesh_ = std::make_unique<Quadmesh>(
        box_mesh(CellType::quadrilateral, {nx, ny, 1}, {0, 0, 0}, {1, 1, 1}), *pool_, *arena_);
  }
  void TearDown() override {
    mesh_.reset();
    BackendTest::TearDown();
  }

  /// Selects `cells` (host list) in `partition`.
  void select(CellBasedGeometryPartition<Quadmesh>& partition,
              const std::vector<std::int32_t>& cells) {
    auto list = memory::borrow_temporary<std::int32_t>(*arena_, cells.size(), "test.cells");
    memory::copy_to_device(list.view(), std::span<const std::int32_t>(cells), arena_->stream());
    partition.select_cells(list.view(), *arena_);
  }

  static std::vector<std::int32_t> host(memory::ArrayView<const std::int32_t> values,
                                        const memory::Stream& stream) {
    std::vector<std::int32_t> out(values.size());
    memory::copy_to_host(std::span<std::int32_t>(out), values, stream);
    return out;
  }

  static constexpr std::int32_t nx = 5;
  static constexpr std::int32_t ny = 4;
  std::unique_ptr<Quadmesh> mesh_;
};

TEST_F(PartitionTest, WholePartitionIsTheMesh) {
  const WholeGeometryPartition<Quadmesh> whole(*mesh_);
  EXPECT_EQ(whole.cell_count(), nx * ny);
  EXPECT_EQ(whole.side_count(), mesh_->side_count());
  EXPECT_EQ(whole.boundary_side_count(), 2 * (nx + ny));
}

TEST_F(PartitionTest, ARowOfCellsHasItsSidesAndItsOutline) {
  CellBasedGeometryPartition<Quadmesh> partition(*mesh_, *pool_);
  std::vector<std::int32_t> row(nx);
  std::iota(row.begin(), row.end(), 0);
  row.push_back(2);  // repeats are allowed
  select(partition, row);
  EXPECT_EQ(partition.cell_count(), nx);
  EXPECT_EQ(partition.side_count(), 2 * nx + (nx + 1));
  EXPECT_EQ(partition.boundary_side_count(), 2 * nx + 2);
  const auto cells = host(partition.view().cells, arena_->stream());
  EXPECT_EQ(cells, std::vector<std::int32_t>({0, 1, 2, 3, 4}));
}

TEST_F(PartitionTest, AllCellsGiveTheMeshBoundary) {
  CellBasedGeometryPartition<Quadmesh> partition(*mesh_, *pool_);
  std::vector<std::int32_t> all(static_cast<std::size_t>(nx * ny));
  std::iota(all.begin(), all.end(), 0);
  select(partition, all);
  EXPECT_EQ(partition.side_count(), mesh_->side_count());
  const auto boundary = host(partition.view().boundary_sides, arena_->stream());
  const auto mesh_boundary = host(mesh_->view().boundary_sides, arena_->stream());
  EXPECT_EQ(boundary, mesh_boundary);
}

TEST_F(PartitionTest, ReselectionKeepsOneLiveCopyAndBadIndicesChangeNothing) {
  CellBasedGeometryPartition<Quadmesh> partition(*mesh_, *pool_);
  select(partition, {0, 7, 13});
  const std::size_t live = pool_->stats().live_bytes;
  select(partition, {1, 8, 14});
  select(partition, {2, 9, 15});
  EXPECT_EQ(pool_->stats().live_bytes, live);
  EXPECT_EQ(pool_->ledger().find("Partition.sides")->live_count, 1U);
  try {
    select(partition, {3, 4, 999});
    FAIL() << "accepted cell 999";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("entry 2 is cell 999"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(host(partition.view().cells, arena_->stream()), std::vector<std::int32_t>({2, 9, 15}));
  auto wrong = memory::borrow_temporary<std::uint8_t>(*arena_, 3, "test.mask");
  EXPECT_THROW(partition.select_mask(wrong.view(), *arena_), Error);
}

// A partition of cells only selects the same cells and keeps no sides.
TEST_F(PartitionTest, ACellsOnlyPartitionKeepsNoSides) {
  CellBasedGeometryPartition<Quadmesh> with_sides(*mesh_, *pool_, {.max_cells = 8});
  CellBasedGeometryPartition<Quadmesh> cells_only(*mesh_, *pool_, {.max_cells = 8, .sides = false});
  for (const std::vector<std::int32_t>& cells :
       {std::vector<std::int32_t>{0, 7, 13}, std::vector<std::int32_t>{19, 3, 4, 5}}) {
    select(with_sides, cells);
    select(cells_only, cells);
    EXPECT_EQ(host(cells_only.view().cells, arena_->stream()),
              host(with_sides.view().cells, arena_->stream()));
    EXPECT_EQ(cells_only.cell_count(), with_sides.cell_count());
    EXPECT_GT(with_sides.side_count(), 0);
    EXPECT_EQ(cells_only.side_count(), 0);
    EXPECT_EQ(cells_only.boundary_side_count(), 0);
    EXPECT_TRUE(cells_only.view().sides.empty());
    // Only with_sides holds side buffers.
    EXPECT_EQ(pool_->ledger().find("Partition.sides")->live_count, 1U);
    EXPECT_EQ(pool_->ledger().find("Partition.boundary_sides")->live_count, 1U);
    EXPECT_EQ(pool_->ledger().find("Partition.cells")->live_count, 2U);
  }
  EXPECT_FALSE(cells_only.capacity().sides);
}

// With a capacity, selections of any size up to it reuse the same blocks; a larger one is refused
// and changes nothing.
TEST_F(PartitionTest, CapacityKeepsBuffersOfOneSize) {
  CellBasedGeometryPartition<Quadmesh> partition(*mesh_, *pool_, {.max_cells = 6});
  select(partition, {4});
  const std::size_t live = pool_->stats().live_bytes;
  const std::uint64_t upstream = pool_->stats().upstream_allocations;
  select(partition, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(partition.cell_count(), 6);
  EXPECT_EQ(partition.side_count(), 2 * nx + (nx + 1) + 3);
  EXPECT_EQ(host(partition.view().cells, arena_->stream()),
            std::vector<std::int32_t>({0, 1, 2, 3, 4, 5}));
  select(partition, {7, 12});
  EXPECT_EQ(partition.cell_count(), 2);
  EXPECT_EQ(partition.boundary_side_count(), 6);  // two cells sharing a side
  EXPECT_EQ(pool_->stats().live_bytes, live);
  select(partition, {8});
  EXPECT_EQ(pool_->stats().upstream_allocations, upstream + 3);  // the second set, once
  try {
    select(partition, {0, 1, 2, 3, 4, 5, 6});
    FAIL() << "accepted 7 cells in a capacity of 6";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("7 cells selected, above the capacity of 6"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(host(partition.view().cells, arena_->stream()), std::vector<std::int32_t>({8}));
  EXPECT_THROW(CellBasedGeometryPartition<Quadmesh>(*mesh_, *pool_, {.max_cells = -1}), Error);
  // A capacity above the mesh is the mesh.
  EXPECT_EQ(CellBasedGeometryPartition<Quadmesh>(*mesh_, *pool_, {.max_cells = 1000})
                .capacity()
                .max_cells,
            nx * ny);
}

}  // namespace
}  // namespace afem::geometry
