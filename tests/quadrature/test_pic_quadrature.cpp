// PicQuadrature: particles binned by cell with offsets, fractions and coordinates that match a
// host reference; particles outside are counted and excluded; rebins replace the buffers without
// growth; bad sizes are refused and leave the binning as it was; located particles select a
// partition before they are binned.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../fem/reference_assembly.hpp"
#include "../fem/unit_box.hpp"
#include "arenafem/geometry/partition.hpp"
#include "arenafem/quadrature/pic_quadrature.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"

namespace afem::quadrature {
namespace {

template <class G>
class PicQuadratureTest : public test::BackendTest {};
using Geometries = ::testing::Types<geometry::Grid2D, geometry::Grid3D, geometry::Trimesh,
                                    geometry::Tetmesh, geometry::Hexmesh>;
TYPED_TEST_SUITE(PicQuadratureTest, Geometries);

/// Random particles in [-0.1, 1.1]^D (some outside the unit box) with measures in [0.5, 1.5].
template <int D>
void random_particles(std::int32_t n, std::uint32_t seed, std::vector<double>& positions,
                      std::vector<double>& measures) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> coordinate(-0.1, 1.1);
  std::uniform_real_distribution<double> measure(0.5, 1.5);
  positions.resize(static_cast<std::size_t>(n) * D);
  measures.resize(static_cast<std::size_t>(n));
  for (auto& x : positions) {
    x = coordinate(random);
  }
  for (auto& m : measures) {
    m = measure(random) * 1e-4;
  }
}

TYPED_TEST(PicQuadratureTest, BinsEveryParticleInsideIntoItsCell) {
  constexpr int dim = TypeParam::dimension;
  auto geometry = test::UnitBox<TypeParam>::make(5, *this->pool_, *this->arena_);
  PicQuadrature pic(*geometry, *this->pool_);
  const std::int32_t n = 2000;
  std::vector<double> positions;
  std::vector<double> measures;
  random_particles<dim>(n, 5, positions, measures);
  auto x = memory::borrow_temporary<double>(*this->pool_, positions.size(), "test.positions");
  auto m = memory::borrow_temporary<double>(*this->pool_, measures.size(), "test.measures");
  test::copy_to_device(x.view(), positions);
  test::copy_to_device(m.view(), measures);
  pic.rebin(x.view(), m.view(), *this->arena_);

  std::int32_t expected_outside = 0;
  for (std::int32_t i = 0; i < n; ++i) {
    bool inside = true;
    for (int d = 0; d < dim; ++d) {
      const double v = positions[static_cast<std::size_t>(i) * dim + static_cast<std::size_t>(d)];
      inside = inside && v >= 0.0 && v <= 1.0;
    }
    expected_outside += inside ? 0 : 1;
  }
  EXPECT_EQ(pic.outside_count(), expected_outside);
  EXPECT_GT(expected_outside, 0);

  const PicQuadratureView view = pic.view();
  const auto offsets = test::copy_to_host(view.cell_particle_offsets);
  const auto indices = test::copy_to_host(view.cell_particle_indices);
  const auto fraction = test::copy_to_host(view.particle_fraction);
  const auto cells = test::copy_to_host(view.particle_cells);
  ASSERT_EQ(offsets.size(), static_cast<std::size_t>(geometry->cell_count()) + 1);
  EXPECT_EQ(offsets.front(), 0);
  EXPECT_EQ(offsets.back(), n - expected_outside);
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  const geometry::MeshData data = geometry->to_mesh_data();
  const auto host = test::host_view(*geometry, data);
  for (std::int32_t c = 0; c < geometry->cell_count(); ++c) {
    ASSERT_LE(offsets[static_cast<std::size_t>(c)], offsets[static_cast<std::size_t>(c) + 1]);
    for (auto k = offsets[static_cast<std::size_t>(c)];
         k < offsets[static_cast<std::size_t>(c) + 1]; ++k) {
      const std::int32_t particle = indices[static_cast<std::size_t>(k)];
      ++seen[static_cast<std::size_t>(particle)];
      EXPECT_EQ(cells[static_cast<std::size_t>(particle)], c);
      EXPECT_NEAR(fraction[static_cast<std::size_t>(particle)] * host.cell_measure(c),
                  measures[static_cast<std::size_t>(particle)], 1e-15);
      if (k > offsets[static_cast<std::size_t>(c)]) {
        EXPECT_LT(indices[static_cast<std::size_t>(k) - 1], particle);  // stable: index order
      }
    }
  }
  std::int32_t binned = 0;
  for (std::int32_t i = 0; i < n; ++i) {
    binned += seen[static_cast<std::size_t>(i)];
    EXPECT_LE(seen[static_cast<std::size_t>(i)], 1);
    if (seen[static_cast<std::size_t>(i)] == 0) {
      EXPECT_EQ(cells[static_cast<std::size_t>(i)], -1);
      EXPECT_EQ(fraction[static_cast<std::size_t>(i)], 0.0);
    }
  }
  EXPECT_EQ(binned, n - expected_outside);
}

class PicRebinTest : public test::BackendTest {};

TEST_F(PicRebinTest, RebinsReplaceTheBuffersWithoutGrowth) {
  auto geometry = test::UnitBox<geometry::Grid2D>::make(16, *pool_, *arena_);
  PicQuadrature pic(*geometry, *pool_, {.max_particles = 4000});
  std::vector<double> positions;
  std::vector<double> measures;
  auto x = memory::borrow_temporary<double>(*pool_, 8000, "test.positions");
  auto m = memory::borrow_temporary<double>(*pool_, 4000, "test.measures");
  std::uint64_t upstream = 0;
  for (int step = 0; step < 20; ++step) {
    const std::int32_t n = 3000 + 50 * step;  // a varying count within the capacity
    random_particles<2>(n, static_cast<std::uint32_t>(step), positions, measures);
    test::copy_to_device(x.view().subview(0, positions.size()), positions);
    test::copy_to_device(m.view().subview(0, measures.size()), measures);
    arena_->reset();
    pic.rebin(x.view().subview(0, positions.size()), m.view().subview(0, measures.size()), *arena_);
    EXPECT_EQ(pic.particle_count(), n);
    // One live copy per buffer, sized by the capacity whatever this step's count.
    const memory::LedgerSnapshot ledger = pool_->ledger();
    const memory::LedgerEntry* entry = ledger.find("PicQuadrature.cell_particle_indices");
    ASSERT_NE(entry, nullptr);
    EXPECT_GE(entry->live_bytes, 4000 * sizeof(std::int32_t));
    EXPECT_LT(entry->live_bytes, 8000 * sizeof(std::int32_t));
    if (step == 1) {
      upstream = pool_->stats().upstream_allocations;
    } else if (step > 1) {
      EXPECT_EQ(pool_->stats().upstream_allocations, upstream) << "step " << step;
    }
  }
}

TEST_F(PicRebinTest, RefusesBadSizesAndKeepsThePreviousBinning) {
  auto geometry = test::UnitBox<geometry::Grid2D>::make(4, *pool_, *arena_);
  PicQuadrature pic(*geometry, *pool_, {.max_particles = 10});
  auto x = memory::borrow_temporary<double>(*pool_, 24, "test.positions");
  auto m = memory::borrow_temporary<double>(*pool_, 12, "test.measures");
  test::copy_to_device(x.view(), std::vector<double>(24, 0.5));
  test::copy_to_device(m.view(), std::vector<double>(12, 1.0));
  pic.rebin(x.view().subview(0, 8), m.view().subview(0, 4), *arena_);
  EXPECT_EQ(pic.particle_count(), 4);
  EXPECT_THROW(pic.rebin(x.view().subview(0, 7), m.view().subview(0, 4), *arena_), Error);
  EXPECT_THROW(pic.rebin(x.view(), m.view(), *arena_), Error);  // 12 > capacity 10
  EXPECT_EQ(pic.particle_count(), 4);
  EXPECT_EQ(test::copy_to_host(pic.view().cell_particle_offsets).back(), 4);
}

// Over a partition of the grid (with a capacity), particles are binned by the partition's
// elements; particles in other cells count as outside; the offsets keep one size.
TEST_F(PicRebinTest, BinsIntoThePartitionsCells) {
  auto geometry = test::UnitBox<geometry::Grid2D>::make(4, *pool_, *arena_);
  geometry::CellBasedGeometryPartition partition(*geometry, *pool_, {.max_cells = 8});
  const Cells cells(partition);
  PicQuadrature pic(cells, *pool_);
  std::vector<double> positions;  // particle c at the centre of cell c
  for (int row = 0; row < 4; ++row) {
    for (int column = 0; column < 4; ++column) {
      positions.push_back((column + 0.5) / 4.0);
      positions.push_back((row + 0.5) / 4.0);
    }
  }
  auto x = memory::borrow_temporary<double>(*pool_, positions.size(), "test.positions");
  auto m = memory::borrow_temporary<double>(*pool_, 16, "test.measures");
  test::copy_to_device(x.view(), positions);
  test::copy_to_device(m.view(), std::vector<double>(16, 1.0 / 16.0));
  const auto select = [&](const std::vector<std::int32_t>& list) {
    auto selected = memory::borrow_temporary<std::int32_t>(*arena_, list.size(), "test.cells");
    test::copy_to_device(selected.view(), list);
    partition.select_cells(selected.view(), *arena_);
  };
  select({10, 5, 6});
  pic.rebin(x.view(), m.view(), *arena_);
  EXPECT_EQ(pic.outside_count(), 13);
  EXPECT_EQ(test::copy_to_host(pic.view().cell_particle_offsets),
            std::vector<std::int32_t>({0, 1, 2, 3}));
  EXPECT_EQ(test::copy_to_host(pic.view().cell_particle_indices).front(), 5);
  EXPECT_EQ(test::copy_to_host(pic.view().particle_cells)[0], -1);
  EXPECT_EQ(test::copy_to_host(pic.view().particle_cells)[6], 6);
  const memory::LedgerSnapshot before = pool_->ledger();
  const std::size_t offsets_bytes = before.find("PicQuadrature.cell_particle_offsets")->live_bytes;
  select({15});
  pic.rebin(x.view(), m.view(), *arena_);
  EXPECT_EQ(pic.outside_count(), 15);
  EXPECT_EQ(test::copy_to_host(pic.view().cell_particle_offsets),
            std::vector<std::int32_t>({0, 1}));
  EXPECT_EQ(test::copy_to_host(pic.view().cell_particle_indices).front(), 15);
  const memory::LedgerSnapshot after = pool_->ledger();
  EXPECT_EQ(after.find("PicQuadrature.cell_particle_offsets")->live_bytes, offsets_bytes);
}

// locate() changes nothing and shows each particle's cell; the caller selects the partition's
// cells from them (the cells that hold particles) and bin() then bins into those, as rebin()
// would after the same selection.
TEST_F(PicRebinTest, LocatedParticlesSelectThePartitionBeforeTheyAreBinned) {
  auto geometry = test::UnitBox<geometry::Grid2D>::make(4, *pool_, *arena_);
  geometry::CellBasedGeometryPartition partition(*geometry, *pool_, {.max_cells = 16});
  const Cells cells(partition);
  PicQuadrature pic(cells, *pool_);
  // Particles at the centres of cells 9, 2, 9 and 14, and one outside the grid.
  const std::vector<double> positions = {0.375, 0.625, 0.625, 0.125, 0.375,
                                         0.625, 0.625, 0.875, 1.5,   0.5};
  auto x = memory::borrow_temporary<double>(*pool_, positions.size(), "test.positions");
  auto m = memory::borrow_temporary<double>(*pool_, 5, "test.measures");
  test::copy_to_device(x.view(), positions);
  test::copy_to_device(m.view(), std::vector<double>(5, 0.01));
  auto located = pic.locate(x.view(), m.view(), *arena_);
  EXPECT_EQ(pic.particle_count(), 0);
  EXPECT_EQ(located.count(), 5);
  const std::vector<std::int32_t> particle_cells = test::copy_to_host(located.cells());
  EXPECT_EQ(particle_cells, std::vector<std::int32_t>({9, 2, 9, 14, -1}));

  std::vector<std::uint8_t> mask(16, 0);
  for (const std::int32_t cell : particle_cells) {
    if (cell >= 0) {
      mask[static_cast<std::size_t>(cell)] = 1;
    }
  }
  auto device_mask = memory::borrow_temporary<std::uint8_t>(*arena_, 16, "test.mask");
  test::copy_to_device(device_mask.view(), mask);
  partition.select_mask(device_mask.view(), *arena_);
  ASSERT_EQ(partition.cell_count(), 3);
  pic.bin(std::move(located), *arena_);
  EXPECT_EQ(pic.particle_count(), 5);
  EXPECT_EQ(pic.outside_count(), 1);
  // Elements are the selected cells in cell order: 2, 9, 14.
  EXPECT_EQ(test::copy_to_host(pic.view().cell_particle_offsets),
            std::vector<std::int32_t>({0, 1, 3, 4}));
  EXPECT_EQ(test::copy_to_host(pic.view().cell_particle_indices),
            std::vector<std::int32_t>({1, 0, 2, 3, 4}));
  const std::vector<double> coords = test::copy_to_host(pic.view().particle_coords);
  EXPECT_DOUBLE_EQ(coords[0], 0.5);
  EXPECT_DOUBLE_EQ(coords[1], 0.5);

  EXPECT_THROW((void)pic.locate(x.view().subview(0, 9), m.view(), *arena_), Error);

  // Particles binned (or moved) already, or located on another geometry, are refused, and the
  // binning stays as it was.
  auto again = pic.locate(x.view().subview(0, 4), m.view().subview(0, 2), *arena_);
  auto taken = std::move(again);
  // NOLINTNEXTLINE(bugprone-use-after-move): binning a moved-from one is what is tested
  EXPECT_THROW(pic.bin(std::move(again), *arena_), Error);
  auto other_geometry = test::UnitBox<geometry::Grid2D>::make(4, *pool_, *arena_);
  PicQuadrature other(*other_geometry, *pool_);
  EXPECT_THROW(pic.bin(other.locate(x.view(), m.view(), *arena_), *arena_), Error);
  EXPECT_EQ(pic.particle_count(), 5);
  EXPECT_EQ(pic.outside_count(), 1);
  pic.bin(std::move(taken), *arena_);
  EXPECT_EQ(pic.particle_count(), 2);
}

// A partition that selects cells only serves cell domains (PIC binning); side domains over it are
// refused, since it has no sides to give them.
TEST_F(PicRebinTest, SideDomainsRefuseAPartitionOfCellsOnly) {
  auto geometry = test::UnitBox<geometry::Grid2D>::make(4, *pool_, *arena_);
  const geometry::CellBasedGeometryPartition partition(*geometry, *pool_,
                                                       {.max_cells = 8, .sides = false});
  EXPECT_NO_THROW(Cells{partition});
  try {
    const Sides sides(partition);
    FAIL() << "a side domain accepted a partition without sides";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("selects cells only"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(BoundarySides{partition}, Error);
}

}  // namespace
}  // namespace afem::quadrature
