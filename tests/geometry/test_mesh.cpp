// Backend-generic: compiled by g++ on the OpenMP backend and by nvcc on the CUDA backend.
#include <gtest/gtest.h>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/gmsh.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/thrust_allocator.hpp"
#include "geometry/checks.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"
#include "support/bounded_arena.hpp"
#include "support/fault_injection.hpp"

namespace afem::geometry {
namespace {

using checks::CellMeasure;
using checks::evaluate;
using checks::SideCheck;

using memory::ArrayView;

template <CellType Type>
struct Shape {
  static constexpr CellType type = Type;
};

template <class S>
class MeshTest : public test::BackendTest {
protected:
  static constexpr CellType type = S::type;
  static constexpr int dim = dimension(type);
  using MeshType = Mesh<type>;
  using View = typename MeshType::View;

  static constexpr std::array<std::int32_t, 3> resolution = {4, 3, 2};
  static constexpr std::array<double, 3> lower = {-1.0, 0.5, 2.0};
  static constexpr std::array<double, 3> upper = {1.0, 2.0, 3.5};

  MeshType make() const {
    return MeshType(box_mesh(type, resolution, lower, upper), *pool_, *arena_);
  }

  double box_measure() const {
    double measure = 1.0;
    for (int d = 0; d < dim; ++d) {
      measure *= upper[static_cast<std::size_t>(d)] - lower[static_cast<std::size_t>(d)];
    }
    return measure;
  }
};

using Shapes = ::testing::Types<Shape<CellType::triangle>, Shape<CellType::quadrilateral>,
                                Shape<CellType::tetrahedron>, Shape<CellType::hexahedron>>;
TYPED_TEST_SUITE(MeshTest, Shapes);

TYPED_TEST(MeshTest, CountsMatchClosedForms) {
  const auto mesh = this->make();
  const std::int64_t nx = 4;
  const std::int64_t ny = 3;
  const std::int64_t nz = 2;
  std::int64_t sides = 0;
  std::int64_t boundary = 0;
  std::int64_t vertices = 0;
  switch (TestFixture::type) {
    case CellType::quadrilateral:
      vertices = (nx + 1) * (ny + 1);
      sides = nx * (ny + 1) + ny * (nx + 1);
      boundary = 2 * (nx + ny);
      break;
    case CellType::triangle:  // Euler on a disk: V - E + F = 1
      vertices = (nx + 1) * (ny + 1);
      sides = vertices + 2 * nx * ny - 1;
      boundary = 2 * (nx + ny);
      break;
    case CellType::hexahedron:
      vertices = (nx + 1) * (ny + 1) * (nz + 1);
      sides = (nx + 1) * ny * nz + nx * (ny + 1) * nz + nx * ny * (nz + 1);
      boundary = 2 * (nx * ny + ny * nz + nx * nz);
      break;
    case CellType::tetrahedron:  // 4 faces per tet: interior ones counted twice
      vertices = (nx + 1) * (ny + 1) * (nz + 1);
      boundary = 4 * (nx * ny + ny * nz + nx * nz);
      sides = (std::int64_t{24} * nx * ny * nz + boundary) / 2;
      break;
  }
  EXPECT_EQ(mesh.vertex_count(), vertices);
  EXPECT_EQ(mesh.side_count(), sides);
  EXPECT_EQ(mesh.boundary_side_count(), boundary);
}

TYPED_TEST(MeshTest, CellMeasuresSumToTheBoxMeasure) {
  const auto mesh = this->make();
  const auto measures = evaluate(mesh, *this->arena_, mesh.cell_count(), 1, CellMeasure{});
  double total = 0.0;
  for (const double m : measures) {
    EXPECT_GT(m, 0.0);
    total += m;
  }
  EXPECT_NEAR(total, this->box_measure(), 1e-12 * this->box_measure());
}

TYPED_TEST(MeshTest, SidesHaveOneOrTwoCellsAndOutwardNormals) {
  const auto mesh = this->make();
  const auto values = evaluate(mesh, *this->arena_, mesh.side_count(), 3, SideCheck{});
  std::int32_t boundary = 0;
  for (std::int32_t s = 0; s < mesh.side_count(); ++s) {
    const auto at = static_cast<std::size_t>(s) * 3;
    boundary += values[at] < 0 ? 1 : 0;
    EXPECT_GT(values[at + 1], 0.0) << "side " << s << " normal points inward";
    EXPECT_LT(values[at + 2], 1e-12) << "side " << s << " maps to different points in its cells";
  }
  EXPECT_EQ(boundary, mesh.boundary_side_count());
}

TYPED_TEST(MeshTest, LookupFindsTheCellThatMapsBackToThePoint) {
  const auto mesh = this->make();
  constexpr std::size_t count = 2000;
  std::mt19937 random(11);
  std::vector<double> host(count * TestFixture::dim);
  for (std::size_t p = 0; p < count; ++p) {
    for (int d = 0; d < TestFixture::dim; ++d) {
      const auto axis = static_cast<std::size_t>(d);
      std::uniform_real_distribution<double> u(this->lower[axis] - 0.1, this->upper[axis] + 0.1);
      host[p * TestFixture::dim + static_cast<std::size_t>(d)] = u(random);
    }
  }
  auto points = memory::borrow_temporary<double>(*this->arena_, host.size(), "test.points");
  auto cells = memory::borrow_temporary<std::int32_t>(*this->arena_, count, "test.cells");
  auto coords = memory::borrow_temporary<double>(*this->arena_, host.size(), "test.coords");
  memory::copy_to_device(points.view(), std::span<const double>(host), this->arena_->stream());
  mesh.lookup(points.view(), LookupResult{cells.view(), coords.view()}, *this->arena_);
  std::vector<std::int32_t> found(count);
  std::vector<double> xi(host.size());
  memory::copy_to_host(std::span<std::int32_t>(found), ArrayView<const std::int32_t>(cells.view()),
                       this->arena_->stream());
  memory::copy_to_host(std::span<double>(xi), ArrayView<const double>(coords.view()),
                       this->arena_->stream());

  const MeshData data = mesh.to_mesh_data();
  auto back = std::vector<double>(host.size());
  MeshView<TestFixture::type> host_view;  // evaluate the map on the host copy
  host_view.positions = ArrayView<const double>(data.positions.data(), data.positions.size());
  host_view.cells = ArrayView<const std::int32_t>(data.cells.data(), data.cells.size());
  std::size_t inside = 0;
  for (std::size_t p = 0; p < count; ++p) {
    bool in_box = true;
    for (int d = 0; d < TestFixture::dim; ++d) {
      const auto axis = static_cast<std::size_t>(d);
      const double x = host[p * TestFixture::dim + axis];
      in_box = in_box && x > this->lower[axis] + 1e-9 && x < this->upper[axis] - 1e-9;
    }
    if (!in_box) {
      EXPECT_EQ(found[p], -1) << "point " << p << " outside the box found cell " << found[p];
      continue;
    }
    ++inside;
    ASSERT_GE(found[p], 0) << "point " << p << " inside the box found no cell";
    typename MeshView<TestFixture::type>::Coords reference;
    for (int d = 0; d < TestFixture::dim; ++d) {
      reference[d] = xi[p * TestFixture::dim + static_cast<std::size_t>(d)];
    }
    const auto mapped = host_view.cell_position(found[p], reference);
    for (int d = 0; d < TestFixture::dim; ++d) {
      EXPECT_NEAR(mapped[d], host[p * TestFixture::dim + static_cast<std::size_t>(d)], 1e-9);
    }
  }
  EXPECT_GT(inside, count / 2);
}

TYPED_TEST(MeshTest, GmshRoundTripGivesTheSameTopology) {
  const auto original = this->make();
  std::stringstream file;
  write_gmsh(original.to_mesh_data(), file);
  const MeshData read = read_gmsh(file, "round-trip.msh");
  const typename TestFixture::MeshType mesh(read, *this->pool_, *this->arena_);
  EXPECT_EQ(mesh.cell_count(), original.cell_count());
  EXPECT_EQ(mesh.side_count(), original.side_count());
  EXPECT_EQ(mesh.boundary_side_count(), original.boundary_side_count());
  EXPECT_EQ(mesh.to_mesh_data().cells, original.to_mesh_data().cells);
}

TYPED_TEST(MeshTest, TopologyRebuildsKeepOneLiveCopyOfEachBuffer) {
  auto mesh = this->make();
  const std::size_t live_after_build = this->pool_->stats().live_bytes;
  mesh.rebuild_topology(*this->arena_);  // the first rebuild holds old and new buffers at once
  const memory::PoolStats first = this->pool_->stats();
  EXPECT_EQ(first.live_bytes, live_after_build);
  for (int i = 0; i < 5; ++i) {
    mesh.rebuild_topology(*this->arena_);
  }
  const memory::PoolStats after = this->pool_->stats();
  EXPECT_EQ(after.live_bytes, first.live_bytes);
  EXPECT_EQ(after.upstream_allocations, first.upstream_allocations)
      << "rebuilds after the first take nothing from upstream";
  const auto ledger = this->pool_->ledger();
  for (const char* label :
       {"Mesh.side_cells", "Mesh.side_local", "Mesh.boundary_sides", "Mesh.positions"}) {
    ASSERT_NE(ledger.find(label), nullptr) << label;
    EXPECT_EQ(ledger.find(label)->live_count, 1U) << label;
  }
  EXPECT_EQ(this->arena_->stats().live_handles, 0U) << "topology scratch all given back";
}

TYPED_TEST(MeshTest, InvalidCellsAreNamedAndNothingIsBuilt) {
  const MeshData good = box_mesh(TestFixture::type, this->resolution, this->lower, this->upper);
  const memory::PoolStats before = this->pool_->stats();

  MeshData out_of_range = good;
  out_of_range.cells[static_cast<std::size_t>(vertex_count(TestFixture::type)) * 2 + 1] = 100000;
  try {
    typename TestFixture::MeshType mesh(out_of_range, *this->pool_, *this->arena_);
    FAIL() << "accepted an out-of-range vertex";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("cell 2 vertex 1 is 100000"), std::string::npos)
        << error.what();
  }

  MeshData inverted = good;
  auto first = inverted.cells.begin() + vertex_count(TestFixture::type) * 3;
  if (dimension(TestFixture::type) == 2) {
    std::swap(first[0], first[1]);
  } else if (TestFixture::type == CellType::tetrahedron) {
    std::swap(first[1], first[2]);
  } else {  // a hexahedron upside down
    std::swap_ranges(first, first + 4, first + 4);
  }
  try {
    typename TestFixture::MeshType mesh(inverted, *this->pool_, *this->arena_);
    FAIL() << "accepted an inverted cell";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("cell 3 is inverted"), std::string::npos)
        << error.what();
  }

  MeshData degenerate = good;
  for (int v = 0; v < vertex_count(TestFixture::type); ++v) {  // collapse cell 0 onto one point
    const auto vertex = static_cast<std::size_t>(degenerate.cells[static_cast<std::size_t>(v)]);
    for (int d = 0; d < dimension(TestFixture::type); ++d) {
      degenerate.positions[vertex * static_cast<std::size_t>(dimension(TestFixture::type)) +
                           static_cast<std::size_t>(d)] = 0.25;
    }
  }
  EXPECT_THROW(typename TestFixture::MeshType(degenerate, *this->pool_, *this->arena_), Error);
  EXPECT_EQ(this->pool_->stats().live_bytes, before.live_bytes) << "nothing half-built";
}

TYPED_TEST(MeshTest, MovedVerticesAreValidatedAndFollowedByLookup) {
  auto mesh = this->make();
  MeshData data = mesh.to_mesh_data();
  std::vector<double> shifted = data.positions;
  for (std::size_t i = 0; i < shifted.size(); ++i) {
    shifted[i] += i % TestFixture::dim == 0 ? 10.0 : 0.0;  // move everything by +10 along x
  }
  mesh.set_positions(shifted, *this->arena_);
  std::vector<double> point(TestFixture::dim, 0.0);
  point[0] = 10.0 + 0.3;
  point[1] = 1.1;
  if (TestFixture::dim == 3) {
    point[2] = 2.7;
  }
  auto points = memory::borrow_temporary<double>(*this->arena_, point.size(), "test.point");
  auto cell = memory::borrow_temporary<std::int32_t>(*this->arena_, 1, "test.cell");
  auto coords = memory::borrow_temporary<double>(*this->arena_, point.size(), "test.coords");
  memory::copy_to_device(points.view(), std::span<const double>(point), this->arena_->stream());
  mesh.lookup(points.view(), LookupResult{cell.view(), coords.view()}, *this->arena_);
  std::int32_t found = -1;
  memory::copy_to_host(std::span<std::int32_t>(&found, 1),
                       ArrayView<const std::int32_t>(cell.view()), this->arena_->stream());
  EXPECT_GE(found, 0);

  std::vector<double> folded = shifted;
  folded[0] = 1e6;  // drags vertex 0 far away: its cells fold over
  EXPECT_THROW(mesh.set_positions(folded, *this->arena_), Error);
  EXPECT_EQ(mesh.to_mesh_data().positions, shifted) << "unchanged after the error";
  EXPECT_THROW(mesh.set_positions(std::span<const double>(shifted).first(3), *this->arena_), Error);
}

/// Host-side lookup helper for the non-typed tests below: returns (cell, mapped-back distance).
template <class MeshType>
std::vector<std::pair<std::int32_t, double>> locate_all(const MeshType& mesh,
                                                        const std::vector<double>& points,
                                                        memory::Arena& arena) {
  constexpr int dim = MeshType::dimension;
  const std::size_t count = points.size() / dim;
  auto device_points = memory::borrow_temporary<double>(arena, points.size(), "test.points");
  auto cells = memory::borrow_temporary<std::int32_t>(arena, count, "test.cells");
  auto coords = memory::borrow_temporary<double>(arena, points.size(), "test.coords");
  memory::copy_to_device(device_points.view(), std::span<const double>(points), arena.stream());
  mesh.lookup(device_points.view(), LookupResult{cells.view(), coords.view()}, arena);
  std::vector<std::int32_t> found(count);
  std::vector<double> xi(points.size());
  memory::copy_to_host(std::span<std::int32_t>(found), ArrayView<const std::int32_t>(cells.view()),
                       arena.stream());
  memory::copy_to_host(std::span<double>(xi), ArrayView<const double>(coords.view()),
                       arena.stream());
  const MeshData data = mesh.to_mesh_data();
  typename MeshType::View host;
  host.positions = ArrayView<const double>(data.positions.data(), data.positions.size());
  host.cells = ArrayView<const std::int32_t>(data.cells.data(), data.cells.size());
  std::vector<std::pair<std::int32_t, double>> out;
  for (std::size_t p = 0; p < count; ++p) {
    double distance = -1.0;
    if (found[p] >= 0) {
      typename MeshType::View::Coords reference;
      typename MeshType::View::Point x;
      for (int d = 0; d < dim; ++d) {
        reference[d] = xi[p * dim + static_cast<std::size_t>(d)];
        x[d] = points[p * dim + static_cast<std::size_t>(d)];
      }
      distance = (host.cell_position(found[p], reference) - x).norm();
    }
    out.emplace_back(found[p], distance);
  }
  return out;
}

class MeshEdgeCases : public test::BackendTest {
protected:
};

/// A scratch arena too small for a mesh's topology and lookup bins fails cleanly (not the end of
/// the program), until one fits and builds the sides an unbounded arena builds.
template <CellType Type>
void expect_clean_failures_until_it_fits(const MeshData& data, memory::Pool& pool,
                                         memory::Arena& unbounded) {
  const Mesh<Type> reference(data, pool, unbounded);
  const auto expected = test::copy_to_host(reference.view().side_cells);
  test::expect_clean_failures_until_it_fits(pool, [&](memory::Arena& bounded) {
    const Mesh<Type> mesh(data, pool, bounded);
    EXPECT_EQ(test::copy_to_host(mesh.view().side_cells), expected);
  });
}

TEST_F(MeshEdgeCases, TopologyFailsCleanlyUntilTheArenaFits) {
  expect_clean_failures_until_it_fits<CellType::hexahedron>(
      box_mesh(CellType::hexahedron, {8, 8, 8}, {0, 0, 0}, {1, 1, 1}), *pool_, *arena_);
  expect_clean_failures_until_it_fits<CellType::triangle>(
      box_mesh(CellType::triangle, {32, 32, 0}, {0, 0, 0}, {1, 1, 0}), *pool_, *arena_);
}

TEST_F(MeshEdgeCases, DistortedHexesLookupOnlyCellsThatMapBack) {
  MeshData data = box_mesh(CellType::hexahedron, {4, 4, 4}, {0, 0, 0}, {1, 1, 1});
  std::mt19937 random(3);
  std::uniform_real_distribution<double> jitter(-0.03, 0.03);
  for (std::size_t v = 0; v < data.positions.size() / 3; ++v) {
    for (std::size_t d = 0; d < 3; ++d) {
      double& x = data.positions[v * 3 + d];
      if (x > 1e-12 && x < 1.0 - 1e-12) {  // keep the boundary on the unit cube
        x += jitter(random);
      }
    }
  }
  const Hexmesh mesh(data, *pool_, *arena_);
  std::vector<double> points(std::size_t{3} * 3000);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (double& x : points) {
    x = u(random);
  }
  const auto results = locate_all(mesh, points, *arena_);
  for (std::size_t p = 0; p < results.size(); ++p) {
    ASSERT_GE(results[p].first, 0) << "point " << p << " in the unit cube found no cell";
    EXPECT_LT(results[p].second, 1e-9)
        << "point " << p << " got cell " << results[p].first << ", which does not contain it";
  }
}

TEST_F(MeshEdgeCases, PointsOnSharedEdgesAndCornersOfANonConvexMeshAreFound) {
  MeshData data;  // an L of three unit squares
  data.cell_type = CellType::quadrilateral;
  data.positions = {0, 0, 1, 0, 2, 0, 0, 1, 1, 1, 2, 1, 0, 2, 1, 2};
  data.cells = {0, 1, 4, 3, 1, 2, 5, 4, 3, 4, 7, 6};
  const Quadmesh mesh(data, *pool_, *arena_);
  std::vector<double> points = data.positions;  // every vertex
  for (const double x : {0.5, 1.0, 1.5, 2.0}) {
    points.insert(points.end(), {x, 1.0});
  }
  points.insert(points.end(), {1.0, 1.5, 1.0, 0.5, 0.5, 2.0});
  const auto results = locate_all(mesh, points, *arena_);
  for (std::size_t p = 0; p < results.size(); ++p) {
    EXPECT_GE(results[p].first, 0)
        << "point (" << points[2 * p] << ", " << points[2 * p + 1] << ")";
    EXPECT_LT(results[p].second, 1e-12);
  }
  const auto outside = locate_all(mesh, {1.5, 1.5, 2.5, 0.5}, *arena_);
  EXPECT_EQ(outside[0].first, -1) << "the notch of the L is outside";
  EXPECT_EQ(outside[1].first, -1);
}

TEST_F(MeshEdgeCases, RepeatedOrOverlappingCellsAreRefused) {
  MeshData data = box_mesh(CellType::tetrahedron, {1, 1, 1}, {0, 0, 0}, {1, 1, 1});
  data.cells.resize(8);
  std::copy(data.cells.begin(), data.cells.begin() + 4, data.cells.begin() + 4);  // one tet twice
  try {
    const Tetmesh mesh(data, *pool_, *arena_);
    FAIL() << "accepted a repeated cell";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("same vertex order"), std::string::npos)
        << error.what();
  }
  for (const auto& entry : pool_->ledger().entries) {
    if (entry.label.starts_with("Mesh.")) {
      EXPECT_EQ(entry.live_count, 0U) << entry.label << " is still held: a half-built mesh";
    }
  }
  EXPECT_EQ(arena_->stats().live_handles, 0U);
}

/// The topology of a mesh copied to the host: side cells, side numbers in their cells, boundary
/// sides.
template <CellType Type>
std::vector<std::int64_t> topology_of(const Mesh<Type>& mesh) {
  const auto view = mesh.view();
  std::vector<std::int64_t> all;
  for (const std::int32_t v : test::copy_to_host(view.side_cells)) {
    all.push_back(v);
  }
  all.push_back(-2);
  for (const std::int32_t v : test::copy_to_host(view.boundary_sides)) {
    all.push_back(v);
  }
  return all;
}

// Fault injection: rebuild_topology on a fresh pool fails at each of its upstream allocations in
// turn: an OutOfMemory naming the label, the topology and cells as they were, the arena empty,
// nothing left in the pool once the mesh is gone, and a retry that rebuilds the same topology.
TEST(MeshFaults, ATopologyRebuildSurvivesAFailureAtEachOfItsAllocations) {
  if (!test::device_available()) {
    GTEST_SKIP() << "no device for this build's backend";
  }
  const MeshData data = box_mesh(CellType::tetrahedron, {3, 3, 3}, {0, 0, 0}, {1, 1, 1});
  const int faults = test::fail_each_allocation([&](int k) {
    bool failed = false;
    test::FaultyPool faulty;
    {
      memory::Arena arena(faulty.pool, {.name = "scratch"});
      Mesh<CellType::tetrahedron> mesh(data, faulty.pool, arena);
      const std::vector<std::int64_t> before = topology_of(mesh);
      faulty.plan_fault(k);
      try {
        mesh.rebuild_topology(arena);
      } catch (const afem::OutOfMemory& error) {
        failed = true;
        test::expect_names_a_label(error);
        faulty.clear_fault();
        EXPECT_EQ(topology_of(mesh), before) << "fault " << k;
        EXPECT_EQ(mesh.to_mesh_data().cells, data.cells) << "fault " << k;
        EXPECT_EQ(arena.stats().live_handles, 0U) << "fault " << k;
      }
      faulty.clear_fault();
      mesh.rebuild_topology(arena);
      EXPECT_EQ(topology_of(mesh), before) << "fault " << k;
    }
    EXPECT_EQ(faulty.pool.stats().live_bytes, 0U) << "fault " << k;
    // A fault that fired must have failed the operation (none swallowed).
    EXPECT_EQ(failed, faulty.resource.failures() > 0) << "fault " << k;
    return failed;
  });
  EXPECT_GE(faults, 3);
  std::printf("[ faults   ] topology rebuild: %d injected upstream faults, each survived\n",
              faults);
}

}  // namespace
}  // namespace afem::geometry
