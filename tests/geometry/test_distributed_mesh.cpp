// Distributed meshes: METIS parts, owned cells covering the mesh once, one ghost layer, global
// numbers and the whole mesh's boundary tags on every rank's part.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/distributed_mesh.hpp"
#include "arenafem/memory/communicator.hpp"

namespace afem::geometry {
namespace {

MeshData box(CellType type, std::int32_t n) {
  return box_mesh(type, {n, n, n}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0});
}

TEST(PartitionCells, PartsAreBalancedNonEmptyAndTheSameEveryRun) {
  const MeshData mesh = box(CellType::triangle, 12);
  for (const int parts : {1, 2, 3, 4, 7}) {
    const std::vector<std::int32_t> partition = partition_cells(mesh, parts);
    ASSERT_EQ(partition.size(), static_cast<std::size_t>(mesh.cell_total()));
    std::vector<int> sizes(static_cast<std::size_t>(parts), 0);
    for (const std::int32_t p : partition) {
      ASSERT_GE(p, 0);
      ASSERT_LT(p, parts);
      ++sizes[static_cast<std::size_t>(p)];
    }
    const double average = static_cast<double>(mesh.cell_total()) / parts;
    for (const int size : sizes) {
      EXPECT_GT(size, 0);
      EXPECT_LE(size, 1.1 * average + 1) << parts << " parts";
    }
    EXPECT_EQ(partition_cells(mesh, parts), partition);
  }
}

TEST(PartitionCells, RefusesMorePartsThanCells) {
  const MeshData mesh = box(CellType::quadrilateral, 2);
  try {
    (void)partition_cells(mesh, 5);
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("5 parts for a mesh of 4 cells"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)partition_cells(mesh, 0), Error);
}

class DistributeMesh : public ::testing::TestWithParam<CellType> {};

TEST_P(DistributeMesh, OwnedCellsCoverTheMeshOnceWithOneGhostLayer) {
  const memory::Communicator comm;
  const MeshData whole = box(GetParam(), dimension(GetParam()) == 2 ? 10 : 4);
  const LocalMeshData part = distribute_mesh(comm, comm.rank() == 0 ? whole : MeshData{});
  const auto nv = static_cast<std::size_t>(vertex_count(whole.cell_type));
  const auto dim = static_cast<std::size_t>(dimension(whole.cell_type));
  // No ASSERT before the collective checks below: a rank that returned early would leave the
  // others waiting.
  EXPECT_EQ(part.global_cell_count, whole.cell_total());
  EXPECT_EQ(part.mesh.cell_type, whole.cell_type);
  EXPECT_EQ(part.global_cells.size(), static_cast<std::size_t>(part.mesh.cell_total()));
  EXPECT_EQ(comm.sum(std::int64_t{part.owned_cells}), whole.cell_total());
  EXPECT_GT(part.owned_cells, 0);
  // Each cell is owned once: the owned global numbers add up to 0 + 1 + ... + (cells - 1).
  std::int64_t owned_sum = 0;
  for (std::int32_t c = 0; c < part.owned_cells; ++c) {
    owned_sum += part.global_cells[static_cast<std::size_t>(c)];
    EXPECT_EQ(part.cell_owners[static_cast<std::size_t>(c)], comm.rank());
  }
  EXPECT_EQ(comm.sum(owned_sum), std::int64_t{whole.cell_total()} * (whole.cell_total() - 1) / 2);
  // Local cells are the whole mesh's cells, vertex for vertex and position for position.
  std::set<std::int64_t> owned_vertices;
  for (std::size_t c = 0; c < part.global_cells.size(); ++c) {
    const auto g = static_cast<std::size_t>(part.global_cells[c]);
    for (std::size_t k = 0; k < nv; ++k) {
      const auto local = static_cast<std::size_t>(part.mesh.cells[c * nv + k]);
      const std::int64_t global = part.global_vertices[local];
      EXPECT_EQ(global, whole.cells[g * nv + k]);
      for (std::size_t d = 0; d < dim; ++d) {
        EXPECT_EQ(part.mesh.positions[local * dim + d],
                  whole.positions[static_cast<std::size_t>(global) * dim + d]);
      }
      if (c < static_cast<std::size_t>(part.owned_cells)) {
        owned_vertices.insert(global);
      }
    }
  }
  // The ghost layer: exactly the other cells that share a vertex with an owned cell.
  std::set<std::int64_t> expected_ghosts;
  for (std::int64_t g = 0; g < whole.cell_total(); ++g) {
    const auto first =
        whole.cells.begin() + static_cast<std::ptrdiff_t>(g) * static_cast<std::ptrdiff_t>(nv);
    const bool touches = std::any_of(first, first + static_cast<std::ptrdiff_t>(nv),
                                     [&](std::int32_t v) { return owned_vertices.count(v) > 0; });
    const bool owned =
        std::find(part.global_cells.begin(), part.global_cells.begin() + part.owned_cells, g) !=
        part.global_cells.begin() + part.owned_cells;
    if (touches && !owned) {
      expected_ghosts.insert(g);
    }
  }
  const std::set<std::int64_t> ghosts(part.global_cells.begin() + part.owned_cells,
                                      part.global_cells.end());
  EXPECT_EQ(ghosts, expected_ghosts);
  // Tagged sides: the whole mesh's boundary sides of owned cells; every box face is tagged.
  std::int64_t tagged = part.mesh.side_total();
  EXPECT_EQ(comm.sum(tagged), whole.side_total());
  for (const std::int32_t tag : part.mesh.side_tags) {
    EXPECT_GE(tag, 1);
    EXPECT_LE(tag, 2 * static_cast<std::int32_t>(dim));
  }
  EXPECT_EQ(part.mesh.side_tag_names, whole.side_tag_names);
}

INSTANTIATE_TEST_SUITE_P(CellTypes, DistributeMesh,
                         ::testing::Values(CellType::triangle, CellType::quadrilateral,
                                           CellType::tetrahedron, CellType::hexahedron));

TEST(DistributeMesh, UntaggedBoundarySidesGetTheReservedTag) {
  const memory::Communicator comm;
  MeshData whole = box(CellType::triangle, 6);
  whole.side_vertices.clear();
  whole.side_tags.clear();
  const LocalMeshData part = distribute_mesh(comm, comm.rank() == 0 ? whole : MeshData{});
  EXPECT_EQ(comm.sum(std::int64_t{part.mesh.side_total()}), 4 * 6);
  for (const std::int32_t tag : part.mesh.side_tags) {
    EXPECT_EQ(tag, untagged_boundary_tag);
  }
}

TEST(DistributeMesh, ABadMeshOnTheRootStopsEveryRankWithItsError) {
  const memory::Communicator comm;
  MeshData whole = box(CellType::quadrilateral, 4);
  whole.cells[5] = 1000;  // a vertex out of range
  try {
    (void)distribute_mesh(comm, comm.rank() == 0 ? whole : MeshData{});
    FAIL() << "rank " << comm.rank() << " did not throw";
  } catch (const memory::CollectiveError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind("rank 0: partition_cells", 0), 0U) << message;
    EXPECT_NE(message.find("1000"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace afem::geometry
