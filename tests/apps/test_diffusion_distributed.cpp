// The diffusion problem over MPI ranks gives the serial program's errors to 1e-12, on grids, box
// meshes and the held Gmsh mesh, and a fault on one rank stops every rank with its error.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "arenafem/apps/diffusion/distributed.hpp"
#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/gmsh.hpp"
#include "arenafem/memory/communicator.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "support/rank_faults.hpp"

namespace afem::apps::diffusion {
namespace {

using geometry::CellType;

class DistributedDiffusion : public ::testing::Test {
protected:
  /// Solves `problem` on `data` in this process and over the ranks; the reports must agree.
  template <CellType Type, int Degree>
  void expect_serial_figures(const geometry::MeshData& data, const Problem& problem) {
    const geometry::Mesh<Type> mesh(data, pool_, scratch_);
    const Report serial = solve<geometry::Mesh<Type>, Degree>(mesh, problem, pool_, scratch_);
    const Report distributed = solve_distributed<Type, Degree>(
        comm_, comm_.rank() == 0 ? data : geometry::MeshData{}, problem, pool_, scratch_);
    EXPECT_EQ(distributed.cells, serial.cells);
    EXPECT_EQ(distributed.dofs, serial.dofs);
    EXPECT_EQ(distributed.solve.iterations, serial.solve.iterations);
    if (problem.source) {
      EXPECT_NEAR(distributed.minimum, serial.minimum, 1e-12 * std::abs(serial.maximum));
      EXPECT_NEAR(distributed.maximum, serial.maximum, 1e-12 * std::abs(serial.maximum));
    } else {
      EXPECT_NEAR(distributed.l2_error, serial.l2_error, 1e-12 * serial.l2_error);
      EXPECT_NEAR(distributed.h1_error, serial.h1_error, 1e-12 * serial.h1_error);
    }
  }

  static geometry::MeshData box(CellType type, std::int32_t n) {
    return geometry::box_mesh(type, {n, n, n}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0});
  }

  memory::Communicator comm_;
  memory::Pool pool_{memory::device_resource(), {.name = "diffusion"}};
  memory::Arena scratch_{pool_, {"step", 1 << 20, 0}};
};

TEST_F(DistributedDiffusion, ManufacturedProblemGivesTheSerialErrors) {
  Problem problem;
  problem.viscosity = 1.5;
  expect_serial_figures<CellType::quadrilateral, 1>(box(CellType::quadrilateral, 12), problem);
  expect_serial_figures<CellType::triangle, 2>(box(CellType::triangle, 7), problem);
  expect_serial_figures<CellType::tetrahedron, 1>(box(CellType::tetrahedron, 4), problem);
  expect_serial_figures<CellType::hexahedron, 2>(box(CellType::hexahedron, 3), problem);
  expect_serial_figures<CellType::triangle, 2>(
      geometry::read_gmsh(std::filesystem::path(AFEM_APPS_TEST_DATA) / "rectangle_tri.msh"),
      problem);
}

TEST_F(DistributedDiffusion, GridGivesTheSerialGridErrors) {
  const std::int32_t n = 10;
  const geometry::Grid2D grid({0.0, 0.0}, {1.0 / n, 1.0 / n}, {n, n});
  const Report serial = solve<geometry::Grid2D, 2>(grid, Problem{}, pool_, scratch_);
  const Report distributed = solve_distributed<CellType::quadrilateral, 2>(
      comm_, comm_.rank() == 0 ? grid.to_mesh_data() : geometry::MeshData{}, Problem{}, pool_,
      scratch_);
  EXPECT_EQ(distributed.solve.iterations, serial.solve.iterations);
  EXPECT_NEAR(distributed.l2_error, serial.l2_error, 1e-12 * serial.l2_error);
  EXPECT_NEAR(distributed.h1_error, serial.h1_error, 1e-12 * serial.h1_error);
}

TEST_F(DistributedDiffusion, TaggedSidesGiveTheSerialFigures) {
  Problem flux;  // u exact on xmin and ymax, its flux on the other sides
  flux.dirichlet = geometry::SideTagSet{1, 4};
  expect_serial_figures<CellType::tetrahedron, 2>(box(CellType::tetrahedron, 3), flux);
  Problem mixed;  // f = 2, u = 0 on xmin, nu du/dn = 0.5 on xmax
  mixed.source = 2.0;
  mixed.dirichlet = geometry::SideTagSet{1};
  mixed.neumann = {{2, 0.5}};
  expect_serial_figures<CellType::quadrilateral, 2>(box(CellType::quadrilateral, 6), mixed);
}

TEST_F(DistributedDiffusion, AFailedAllocationOnOneRankStopsEveryRank) {
  const geometry::MeshData data = box(CellType::triangle, 6);
  const int faulty_rank = comm_.size() - 1;
  test::FaultyPool faulty;
  memory::Arena faulty_scratch(faulty.pool, {"step", 1 << 20, 0});
  memory::Pool& pool = comm_.rank() == faulty_rank ? faulty.pool : pool_;
  memory::Arena& scratch = comm_.rank() == faulty_rank ? faulty_scratch : scratch_;
  const int failures =
      test::fail_each_allocation_of_one_rank(comm_, faulty, faulty_rank, "fault injected", [&] {
        (void)solve_distributed<CellType::triangle, 1>(
            comm_, comm_.rank() == 0 ? data : geometry::MeshData{}, Problem{}, pool, scratch);
      });
  EXPECT_GT(failures, 5);
}

}  // namespace
}  // namespace afem::apps::diffusion
