// Side tags: box faces on grids and box meshes, Gmsh side groups matched to a mesh's sides, and
// TaggedBoundary. Backend-generic: compiled by g++ on the OpenMP backend and by nvcc on CUDA.
#include <gtest/gtest.h>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/geometry/tagged_boundary.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/thrust_allocator.hpp"
#include "fem/unit_box.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"

namespace afem::geometry {
namespace {

/// For every side: its tag, and the tag its place says it should have (box_side_tag of the face
/// its outward normal points through for a boundary side, 0 inside).
template <class G>
std::vector<std::int32_t> tags_and_expected(const G& geometry, memory::Arena& arena) {
  const auto view = geometry.view();
  const std::int32_t sides = geometry.side_count();
  auto out = memory::borrow_temporary<std::int32_t>(arena, 2 * static_cast<std::size_t>(sides),
                                                    "test.tags");
  const auto o = out.view();
  thrust::for_each_n(memory::arena_policy(arena, "test.thrust"),
                     thrust::counting_iterator<std::int32_t>(0), sides,
                     [=] AFEM_HOST_DEVICE(std::int32_t s) {
                       std::int32_t expected = 0;
                       if (view.side_outer_cell(s) < 0) {
                         const auto n = view.side_normal(s);
                         int axis = 0;
                         for (int d = 1; d < G::dimension; ++d) {
                           axis = std::abs(n[d]) > std::abs(n[axis]) ? d : axis;
                         }
                         expected = box_side_tag(axis, n[axis] > 0.0);
                       }
                       o[2 * static_cast<std::size_t>(s)] = view.side_tag(s);
                       o[2 * static_cast<std::size_t>(s) + 1] = expected;
                     });
  return test::copy_to_host(memory::ArrayView<const std::int32_t>(o));
}

template <class G>
class SideTagTest : public test::BackendTest {};
using Geometries = ::testing::Types<Grid2D, Grid3D, Trimesh, Quadmesh, Tetmesh, Hexmesh>;
TYPED_TEST_SUITE(SideTagTest, Geometries);

TYPED_TEST(SideTagTest, BoundarySidesCarryTheTagOfTheirBoxFace) {
  constexpr int dim = TypeParam::dimension;
  constexpr int n = 3;
  auto geometry = test::UnitBox<TypeParam>::make(n, *this->pool_, *this->arena_);
  const std::vector<std::int32_t> tags = tags_and_expected(*geometry, *this->arena_);
  std::map<std::int32_t, int> count;
  for (std::size_t s = 0; 2 * s < tags.size(); ++s) {
    ASSERT_EQ(tags[2 * s], tags[2 * s + 1]) << "side " << s;
    ++count[tags[2 * s]];
  }
  // Sides per face: one per grid face, two triangles per grid square of a tetrahedral box.
  const int per_face =
      (dim == 2 ? n : n * n) * (TypeParam::View::cell_type == CellType::tetrahedron ? 2 : 1);
  for (int axis = 0; axis < dim; ++axis) {
    EXPECT_EQ(count[box_side_tag(axis, false)], per_face) << "axis " << axis;
    EXPECT_EQ(count[box_side_tag(axis, true)], per_face) << "axis " << axis;
  }
  EXPECT_EQ(static_cast<int>(count.size()), 2 * dim + 1);  // and 0 inside

  const TaggedBoundary<TypeParam> faces(*geometry, {box_side_tag(0, false), box_side_tag(1, true)},
                                        *this->pool_, *this->arena_);
  EXPECT_EQ(faces.side_count(), 2 * per_face);
  const memory::LedgerSnapshot ledger = this->pool_->ledger();
  const auto* owned = ledger.find("TaggedBoundary.sides");
  ASSERT_NE(owned, nullptr);
  EXPECT_EQ(owned->live_count, 1U);
  const std::vector<std::int32_t> selected = test::copy_to_host(faces.sides());
  for (std::size_t i = 0; i < selected.size(); ++i) {
    const std::int32_t tag = tags[2 * static_cast<std::size_t>(selected[i])];
    EXPECT_TRUE(tag == box_side_tag(0, false) || tag == box_side_tag(1, true)) << "side " << i;
    if (i > 0) {
      EXPECT_NE(selected[i], selected[i - 1]);
    }
  }
}

TYPED_TEST(SideTagTest, ATagNoBoundarySideHasIsRefusedByName) {
  auto geometry = test::UnitBox<TypeParam>::make(2, *this->pool_, *this->arena_);
  try {
    const TaggedBoundary<TypeParam> faces(*geometry, {1, 9}, *this->pool_, *this->arena_);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string expected =
        TypeParam::dimension == 2
            ? "TaggedBoundary: no boundary side has tag 9; the boundary's tags are 1, 2, 3, 4"
            : "TaggedBoundary: no boundary side has tag 9; the boundary's tags are 1, 2, 3, 4, 5, "
              "6";
    EXPECT_EQ(std::string(error.what()), expected);
  }
  EXPECT_EQ(this->arena_->stats().live_handles, 0U);
  const memory::LedgerSnapshot ledger = this->pool_->ledger();
  const auto* owned = ledger.find("TaggedBoundary.sides");
  EXPECT_TRUE(owned == nullptr || owned->live_count == 0U);
}

class MeshSideTags : public test::BackendTest {
protected:
  /// Two triangles of the unit square: (0, 1, 2) and (0, 2, 3); the diagonal 0-2 is interior.
  static MeshData square() {
    MeshData data;
    data.cell_type = CellType::triangle;
    data.positions = {0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0};
    data.cells = {0, 1, 2, 0, 2, 3};
    return data;
  }
  /// The tag of the side with vertices {a, b}.
  static std::int32_t tag_of(const Trimesh& mesh, std::int32_t a, std::int32_t b) {
    const MeshData data = mesh.to_mesh_data();
    const std::vector<std::int32_t> tags = test::copy_to_host(mesh.side_tags());
    const MeshView<CellType::triangle> view = mesh.view();
    const std::vector<std::int32_t> side_cells = test::copy_to_host(view.side_cells);
    const std::vector<std::uint8_t> side_local = test::copy_to_host(view.side_local);
    for (std::size_t s = 0; s < tags.size(); ++s) {
      const auto cell = static_cast<std::size_t>(side_cells[2 * s]);
      const int local = side_local[2 * s];
      const std::int32_t u =
          data.cells[3 * cell + static_cast<std::size_t>(
                                    ReferenceCell<CellType::triangle>::side_vertex(local, 0))];
      const std::int32_t v =
          data.cells[3 * cell + static_cast<std::size_t>(
                                    ReferenceCell<CellType::triangle>::side_vertex(local, 1))];
      if ((u == a && v == b) || (u == b && v == a)) {
        return tags[s];
      }
    }
    return -1;
  }
};

TEST_F(MeshSideTags, TaggedSidesAreFoundInAnyVertexOrderInteriorOnesIncluded) {
  MeshData data = square();
  data.side_vertices = {1, 0, 3, 2, 2, 0};  // bottom reversed, top, the interior diagonal
  data.side_tags = {4, 5, 6};
  const Trimesh mesh(data, *pool_, *arena_);
  EXPECT_EQ(tag_of(mesh, 0, 1), 4);
  EXPECT_EQ(tag_of(mesh, 2, 3), 5);
  EXPECT_EQ(tag_of(mesh, 0, 2), 6);
  EXPECT_EQ(tag_of(mesh, 1, 2), 0);
  EXPECT_EQ(tag_of(mesh, 3, 0), 0);
  const MeshData back = mesh.to_mesh_data();
  EXPECT_EQ(back.side_vertices, data.side_vertices);
  EXPECT_EQ(back.side_tags, data.side_tags);

  const std::vector<std::int32_t> before = test::copy_to_host(mesh.side_tags());
  Trimesh rebuilt(data, *pool_, *arena_);
  rebuilt.rebuild_topology(*arena_);
  EXPECT_EQ(test::copy_to_host(rebuilt.side_tags()), before);
  // The interior diagonal is not a boundary side: selecting its tag finds no boundary side.
  EXPECT_THROW(TaggedBoundary<Trimesh>(mesh, {6}, *pool_, *arena_), Error);
  EXPECT_EQ(TaggedBoundary<Trimesh>(mesh, {4, 5}, *pool_, *arena_).side_count(), 2);
}

TEST_F(MeshSideTags, RefusesSidesThatAreNotSidesOfCellsOrAreRepeated) {
  const auto message = [&](const MeshData& data) -> std::string {
    try {
      const Trimesh mesh(data, *pool_, *arena_);
    } catch (const Error& error) {
      return error.what();
    }
    return "no error";
  };
  MeshData data = square();
  data.side_vertices = {0, 1, 1, 3};  // 1-3 is the other diagonal: no cell has it
  data.side_tags = {1, 2};
  EXPECT_EQ(message(data), "Mesh: tagged side 1 (vertices 1, 3) is not a side of any cell");
  data.side_vertices = {0, 1, 3, 0, 1, 0};
  data.side_tags = {1, 2, 3};
  EXPECT_EQ(message(data),
            "Mesh: tagged sides 0 and 2 have the same vertices; expected each "
            "side tagged once");
  data.side_vertices = {0, 1};
  data.side_tags = {0};
  EXPECT_NE(message(data).find("tagged side 0 has tag 0, expected a positive tag"),
            std::string::npos)
      << message(data);
  data.side_tags = {1, 2};
  EXPECT_NE(message(data).find("side_tags hold 2 tags, expected one per tagged side (1)"),
            std::string::npos)
      << message(data);
  data.side_vertices = {0, 7};
  data.side_tags = {1};
  EXPECT_NE(message(data).find("tagged side 0 refers to vertex 7"), std::string::npos)
      << message(data);
  EXPECT_EQ(arena_->stats().live_handles, 0U);
  for (const auto& entry : pool_->ledger().entries) {
    EXPECT_EQ(entry.live_count, entry.label.starts_with("Mesh.") ? 0U : entry.live_count)
        << entry.label;
  }
}

}  // namespace
}  // namespace afem::geometry
