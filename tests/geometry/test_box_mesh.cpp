#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/memory/error.hpp"

namespace afem::geometry {
namespace {

using Point = std::array<double, 3>;

Point vertex(const MeshData& mesh, std::int32_t v) {
  const auto dim = static_cast<std::size_t>(dimension(mesh.cell_type));
  Point p = {0.0, 0.0, 0.0};
  for (std::size_t axis = 0; axis < dim; ++axis) {
    p[axis] = mesh.positions[static_cast<std::size_t>(v) * dim + axis];
  }
  return p;
}

std::vector<Point> cell_vertices(const MeshData& mesh, std::int32_t cell) {
  const auto corners = static_cast<std::size_t>(vertex_count(mesh.cell_type));
  std::vector<Point> points;
  for (std::size_t i = 0; i < corners; ++i) {
    points.push_back(vertex(mesh, mesh.cells[static_cast<std::size_t>(cell) * corners + i]));
  }
  return points;
}

Point minus(const Point& a, const Point& b) {
  return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}

/// Signed volume of the tetrahedron (a, b, c, d): det[b-a, c-a, d-a] / 6.
double tet_volume(const Point& a, const Point& b, const Point& c, const Point& d) {
  const Point u = minus(b, a);
  const Point v = minus(c, a);
  const Point w = minus(d, a);
  return (u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0]) +
          u[2] * (v[0] * w[1] - v[1] * w[0])) /
         6.0;
}

/// Signed area or volume of a cell, computed from its vertices alone.
double signed_measure(const MeshData& mesh, std::int32_t cell) {
  const std::vector<Point> p = cell_vertices(mesh, cell);
  switch (mesh.cell_type) {
    case CellType::triangle:
      return 0.5 * ((p[1][0] - p[0][0]) * (p[2][1] - p[0][1]) -
                    (p[2][0] - p[0][0]) * (p[1][1] - p[0][1]));
    case CellType::quadrilateral: {
      double twice = 0.0;  // shoelace
      for (std::size_t i = 0; i < 4; ++i) {
        const Point& a = p[i];
        const Point& b = p[(i + 1) % 4];
        twice += a[0] * b[1] - b[0] * a[1];
      }
      return 0.5 * twice;
    }
    case CellType::tetrahedron:
      return tet_volume(p[0], p[1], p[2], p[3]);
    case CellType::hexahedron: {
      // Six tetrahedra around the diagonal 0-6 (exact for hexahedra with planar faces).
      constexpr std::array<std::size_t, 6> ring = {1, 2, 3, 7, 4, 5};
      double volume = 0.0;
      for (std::size_t t = 0; t < 6; ++t) {
        volume += tet_volume(p[0], p[ring[t]], p[ring[(t + 1) % 6]], p[6]);
      }
      return volume;
    }
  }
  return 0.0;
}

/// Local faces (edges in 2D) of each cell type, as local vertex lists.
std::vector<std::vector<std::size_t>> local_faces(CellType type) {
  switch (type) {
    case CellType::triangle:
      return {{0, 1}, {1, 2}, {2, 0}};
    case CellType::quadrilateral:
      return {{0, 1}, {1, 2}, {2, 3}, {3, 0}};
    case CellType::tetrahedron:
      return {{0, 1, 2}, {0, 1, 3}, {0, 2, 3}, {1, 2, 3}};
    case CellType::hexahedron:
      return {{0, 1, 2, 3}, {4, 5, 6, 7}, {0, 1, 5, 4}, {1, 2, 6, 5}, {2, 3, 7, 6}, {3, 0, 4, 7}};
  }
  return {};
}

/// How many cells share each face, keyed by the face's sorted vertex indices.
std::map<std::vector<std::int32_t>, int> face_counts(const MeshData& mesh) {
  const auto corners = static_cast<std::size_t>(vertex_count(mesh.cell_type));
  std::map<std::vector<std::int32_t>, int> counts;
  for (std::size_t c = 0; c < static_cast<std::size_t>(mesh.cell_total()); ++c) {
    for (const std::vector<std::size_t>& face : local_faces(mesh.cell_type)) {
      std::vector<std::int32_t> key;
      key.reserve(face.size());
      for (const std::size_t i : face) {
        key.push_back(mesh.cells[c * corners + i]);
      }
      std::sort(key.begin(), key.end());
      ++counts[key];
    }
  }
  return counts;
}

struct BoxCase {
  CellType type;
  std::array<std::int32_t, 3> resolution;
  Point lower;
  Point upper;
};

std::vector<BoxCase> box_cases() {
  return {
      {CellType::triangle, {3, 2, 0}, {-1.0, 0.5, 0.0}, {2.0, 1.5, 0.0}},
      {CellType::quadrilateral, {3, 2, 7}, {-1.0, 0.5, 9.0}, {2.0, 1.5, -9.0}},
      {CellType::tetrahedron, {3, 2, 2}, {-1.0, 0.5, 2.0}, {2.0, 1.5, 2.5}},
      {CellType::hexahedron, {3, 2, 2}, {-1.0, 0.5, 2.0}, {2.0, 1.5, 2.5}},
  };
}

std::string case_name(const BoxCase& box) {
  return std::string(name(box.type));
}

TEST(BoxMesh, CountsAndVertexNumbering) {
  for (const BoxCase& box : box_cases()) {
    SCOPED_TRACE(case_name(box));
    const MeshData mesh = box_mesh(box.type, box.resolution, box.lower, box.upper);
    const int dim = dimension(box.type);
    const std::int32_t nx = box.resolution[0];
    const std::int32_t ny = box.resolution[1];
    const std::int32_t nz = dim == 3 ? box.resolution[2] : 0;
    const std::int32_t per_grid_cell = box.type == CellType::triangle      ? 2
                                       : box.type == CellType::tetrahedron ? 6
                                                                           : 1;
    EXPECT_EQ(mesh.cell_type, box.type);
    EXPECT_EQ(mesh.vertex_total(), (nx + 1) * (ny + 1) * (nz + 1));
    EXPECT_EQ(mesh.cell_total(), nx * ny * (dim == 3 ? nz : 1) * per_grid_cell);
    EXPECT_EQ(mesh.positions.size(), static_cast<std::size_t>(mesh.vertex_total() * dim));
    EXPECT_EQ(mesh.cells.size(),
              static_cast<std::size_t>(mesh.cell_total() * vertex_count(box.type)));
    EXPECT_TRUE(mesh.cell_tags.empty());
    // x fastest, then y, then z; the grid ends exactly at lower and upper.
    for (std::int32_t k = 0; k <= nz; ++k) {
      for (std::int32_t j = 0; j <= ny; ++j) {
        for (std::int32_t i = 0; i <= nx; ++i) {
          const Point p = vertex(mesh, i + (nx + 1) * (j + (ny + 1) * k));
          const std::array<std::int32_t, 3> ijk = {i, j, k};
          const std::array<std::int32_t, 3> n = {nx, ny, nz};
          for (std::size_t axis = 0; axis < static_cast<std::size_t>(dim); ++axis) {
            const double t = static_cast<double>(ijk[axis]) / static_cast<double>(n[axis]);
            EXPECT_NEAR(p[axis], box.lower[axis] + t * (box.upper[axis] - box.lower[axis]), 1e-14);
          }
        }
      }
    }
    const Point last = vertex(mesh, mesh.vertex_total() - 1);
    for (std::size_t axis = 0; axis < static_cast<std::size_t>(dim); ++axis) {
      EXPECT_EQ(vertex(mesh, 0)[axis], box.lower[axis]);
      EXPECT_EQ(last[axis], box.upper[axis]);
    }
  }
}

TEST(BoxMesh, FirstCellsFollowTheDocumentedOrder) {
  const MeshData tri = box_mesh(CellType::triangle, {2, 1, 0}, {0, 0, 0}, {2, 1, 0});
  EXPECT_EQ(std::vector<std::int32_t>(tri.cells.begin(), tri.cells.begin() + 6),
            (std::vector<std::int32_t>{0, 1, 4, 0, 4, 3}));
  const MeshData quad = box_mesh(CellType::quadrilateral, {2, 1, 0}, {0, 0, 0}, {2, 1, 0});
  EXPECT_EQ(quad.cells, (std::vector<std::int32_t>{0, 1, 4, 3, 1, 2, 5, 4}));
  const MeshData hex = box_mesh(CellType::hexahedron, {1, 1, 1}, {0, 0, 0}, {1, 1, 1});
  EXPECT_EQ(hex.cells, (std::vector<std::int32_t>{0, 1, 3, 2, 4, 5, 7, 6}));
  const MeshData tet = box_mesh(CellType::tetrahedron, {1, 1, 1}, {0, 0, 0}, {1, 1, 1});
  EXPECT_EQ(tet.cells, (std::vector<std::int32_t>{0, 1, 3, 7, 0, 3, 2, 7, 0, 2, 6, 7,
                                                  0, 6, 4, 7, 0, 4, 5, 7, 0, 5, 1, 7}));
}

TEST(BoxMesh, CellsArePositiveAndFillTheBox) {
  for (const BoxCase& box : box_cases()) {
    SCOPED_TRACE(case_name(box));
    const MeshData mesh = box_mesh(box.type, box.resolution, box.lower, box.upper);
    const int dim = dimension(box.type);
    double box_measure = 1.0;
    for (std::size_t axis = 0; axis < static_cast<std::size_t>(dim); ++axis) {
      box_measure *= box.upper[axis] - box.lower[axis];
    }
    const double per_cell = box_measure / mesh.cell_total();
    double total = 0.0;
    for (std::int32_t c = 0; c < mesh.cell_total(); ++c) {
      const double measure = signed_measure(mesh, c);
      EXPECT_GT(measure, 0.5 * per_cell) << "cell " << c;
      total += measure;
    }
    EXPECT_NEAR(total, box_measure, 1e-12 * box_measure);
  }
}

TEST(BoxMesh, InteriorFacesAreSharedByTwoCells) {
  for (const BoxCase& box : box_cases()) {
    SCOPED_TRACE(case_name(box));
    const MeshData mesh = box_mesh(box.type, box.resolution, box.lower, box.upper);
    const auto dim = static_cast<std::size_t>(dimension(box.type));
    const std::int64_t nx = box.resolution[0];
    const std::int64_t ny = box.resolution[1];
    const std::int64_t nz = box.resolution[2];
    std::int64_t expected_boundary = 0;
    switch (box.type) {
      case CellType::triangle:
      case CellType::quadrilateral:
        expected_boundary = 2 * (nx + ny);
        break;
      case CellType::hexahedron:
        expected_boundary = 2 * (nx * ny + ny * nz + nx * nz);
        break;
      case CellType::tetrahedron:
        expected_boundary = 4 * (nx * ny + ny * nz + nx * nz);
        break;
    }
    std::int64_t boundary = 0;
    for (const auto& [face, count] : face_counts(mesh)) {
      ASSERT_GE(count, 1);
      ASSERT_LE(count, 2) << "a face shared by more than two cells";
      if (count == 2) {
        continue;
      }
      ++boundary;
      // A face of one cell only must lie on a side of the box.
      bool on_side = false;
      for (std::size_t axis = 0; axis < dim && !on_side; ++axis) {
        for (const double side : {box.lower[axis], box.upper[axis]}) {
          on_side = on_side || std::all_of(face.begin(), face.end(), [&](std::int32_t v) {
                      return vertex(mesh, v)[axis] == side;
                    });
        }
      }
      EXPECT_TRUE(on_side) << "a face inside the box belongs to one cell only";
    }
    EXPECT_EQ(boundary, expected_boundary);
  }
}

TEST(BoxMesh, SideTagsAndTheirNames) {
  EXPECT_EQ(box_side_tag(0, false), 1);
  EXPECT_EQ(box_side_tag(0, true), 2);
  EXPECT_EQ(box_side_tag(1, false), 3);
  EXPECT_EQ(box_side_tag(2, true), 6);
  const std::vector<std::pair<std::int32_t, std::string>> plane = {
      {1, "xmin"}, {2, "xmax"}, {3, "ymin"}, {4, "ymax"}};
  EXPECT_EQ(box_side_tag_names(2), plane);
  std::vector<std::pair<std::int32_t, std::string>> space = plane;
  space.emplace_back(5, "zmin");
  space.emplace_back(6, "zmax");
  EXPECT_EQ(box_side_tag_names(3), space);
  EXPECT_THROW((void)box_side_tag_names(4), Error);
}

/// The axis and the face (false: low, true: high) of the box that box_side_tag `tag` names.
std::pair<std::size_t, bool> face_of(std::int32_t tag) {
  return {static_cast<std::size_t>((tag - 1) / 2), (tag - 1) % 2 == 1};
}

/// The vertices of tagged side `side`, as listed.
std::vector<std::int32_t> side_of(const MeshData& mesh, std::int32_t side) {
  const auto corners = static_cast<std::size_t>(side_vertex_count(mesh.cell_type));
  const auto first = mesh.side_vertices.begin() +
                     static_cast<std::ptrdiff_t>(static_cast<std::size_t>(side) * corners);
  return {first, first + static_cast<std::ptrdiff_t>(corners)};
}

/// Grid cells along each axis of a box case (1 along z in 2D).
std::array<std::int32_t, 3> grid_cells(const BoxCase& box) {
  return {box.resolution[0], box.resolution[1], dimension(box.type) == 3 ? box.resolution[2] : 1};
}

/// Tagged sides per grid face of the box.
std::int32_t sides_per_grid_face(CellType type) {
  return type == CellType::tetrahedron ? 2 : 1;
}

TEST(BoxMesh, TagsEveryBoundarySideOnceWithTheTagOfItsFace) {
  for (const BoxCase& box : box_cases()) {
    SCOPED_TRACE(case_name(box));
    const MeshData mesh = box_mesh(box.type, box.resolution, box.lower, box.upper);
    const int dim = dimension(box.type);
    const std::array<std::int32_t, 3> n = grid_cells(box);
    EXPECT_EQ(mesh.side_tag_names, box_side_tag_names(dim));
    ASSERT_EQ(mesh.side_tags.size(), static_cast<std::size_t>(mesh.side_total()));
    std::map<std::int32_t, std::int32_t> per_tag;
    for (const std::int32_t tag : mesh.side_tags) {
      ++per_tag[tag];
    }
    EXPECT_EQ(per_tag.size(), static_cast<std::size_t>(2 * dim));
    for (int axis = 0; axis < dim; ++axis) {
      const std::int32_t grid_faces = n[0] * n[1] * n[2] / n[static_cast<std::size_t>(axis)];
      for (const bool high : {false, true}) {
        EXPECT_EQ(per_tag[box_side_tag(axis, high)], grid_faces * sides_per_grid_face(box.type))
            << "axis " << axis << (high ? " high" : " low");
      }
    }
    const std::map<std::vector<std::int32_t>, int> faces = face_counts(mesh);
    std::set<std::vector<std::int32_t>> seen;
    for (std::int32_t side = 0; side < mesh.side_total(); ++side) {
      const std::int32_t tag = mesh.side_tags[static_cast<std::size_t>(side)];
      const auto [axis, high] = face_of(tag);
      std::vector<std::int32_t> key = side_of(mesh, side);
      for (const std::int32_t v : key) {
        EXPECT_EQ(vertex(mesh, v)[axis], high ? box.upper[axis] : box.lower[axis])
            << "side " << side << " (tag " << tag << ") vertex " << v;
      }
      std::sort(key.begin(), key.end());
      const auto found = faces.find(key);
      ASSERT_NE(found, faces.end()) << "side " << side << " is no side of a cell";
      EXPECT_EQ(found->second, 1) << "side " << side << " is shared by two cells";
      EXPECT_TRUE(seen.insert(key).second) << "side " << side << " is listed twice";
    }
    const auto boundary_faces = std::count_if(faces.begin(), faces.end(),
                                              [](const auto& face) { return face.second == 1; });
    EXPECT_EQ(boundary_faces, mesh.side_total());
  }
}

TEST(BoxMesh, ListsTaggedSidesFaceByFaceInGridOrder) {
  for (const BoxCase& box : box_cases()) {
    SCOPED_TRACE(case_name(box));
    const MeshData mesh = box_mesh(box.type, box.resolution, box.lower, box.upper);
    const auto dim = static_cast<std::size_t>(dimension(box.type));
    const std::array<std::int32_t, 3> n = grid_cells(box);
    EXPECT_TRUE(std::is_sorted(mesh.side_tags.begin(), mesh.side_tags.end()));
    std::int32_t first_of_face = 0;
    for (std::int32_t side = 0; side < mesh.side_total(); ++side) {
      const std::int32_t tag = mesh.side_tags[static_cast<std::size_t>(side)];
      if (side > 0 && tag != mesh.side_tags[static_cast<std::size_t>(side) - 1]) {
        first_of_face = side;
      }
      // The grid face holding the side's centroid, numbered along the remaining axes in
      // increasing order, the lowest fastest.
      const std::size_t axis = face_of(tag).first;
      const std::vector<std::int32_t> corners = side_of(mesh, side);
      std::int32_t grid_face = 0;
      std::int32_t stride = 1;
      for (std::size_t d = 0; d < dim; ++d) {
        if (d == axis) {
          continue;
        }
        double centroid = 0.0;
        for (const std::int32_t v : corners) {
          centroid += vertex(mesh, v)[d] / static_cast<double>(corners.size());
        }
        const double h = (box.upper[d] - box.lower[d]) / n[d];
        grid_face += static_cast<std::int32_t>(std::floor((centroid - box.lower[d]) / h)) * stride;
        stride *= n[d];
      }
      EXPECT_EQ(grid_face, (side - first_of_face) / sides_per_grid_face(box.type))
          << "side " << side << " (tag " << tag << ")";
    }
  }
}

TEST(BoxMesh, TaggedSidesAreListedWithTheirNormalOutOfTheBox) {
  for (const BoxCase& box : box_cases()) {
    SCOPED_TRACE(case_name(box));
    const MeshData mesh = box_mesh(box.type, box.resolution, box.lower, box.upper);
    for (std::int32_t side = 0; side < mesh.side_total(); ++side) {
      const auto [axis, high] = face_of(mesh.side_tags[static_cast<std::size_t>(side)]);
      std::vector<Point> p;
      for (const std::int32_t v : side_of(mesh, side)) {
        p.push_back(vertex(mesh, v));
      }
      Point normal = {0.0, 0.0, 0.0};
      if (p.size() == 2) {
        normal = {p[1][1] - p[0][1], p[0][0] - p[1][0], 0.0};  // right-hand normal
      } else {
        // (b - a) x (c - a) for a triangle, the product of the diagonals for a quadrilateral.
        const Point u = minus(p[p.size() == 3 ? 1 : 2], p[0]);
        const Point w = minus(p[p.size() == 3 ? 2 : 3], p[p.size() == 3 ? 0 : 1]);
        normal = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]};
      }
      EXPECT_GT(high ? normal[axis] : -normal[axis], 0.0) << "side " << side;
    }
  }
}

TEST(BoxMesh, FirstTaggedSidesFollowTheDocumentedOrder) {
  // Vertices 0 1 2 / 3 4 5: x = 0, x = 2, then y = 0 and y = 1, each left to right; triangles
  // and quadrilaterals have the same boundary edges.
  const std::vector<std::int32_t> plane = {3, 0, 2, 5, 0, 1, 1, 2, 4, 3, 5, 4};
  for (const CellType type : {CellType::triangle, CellType::quadrilateral}) {
    const MeshData mesh = box_mesh(type, {2, 1, 0}, {0, 0, 0}, {2, 1, 0});
    EXPECT_EQ(mesh.side_vertices, plane) << name(type);
    EXPECT_EQ(mesh.side_tags, (std::vector<std::int32_t>{1, 2, 3, 3, 4, 4})) << name(type);
  }
  // One grid cube: the face x = 0 (vertices 0, 2, 4, 6) split along its diagonal 0-6.
  const MeshData tet = box_mesh(CellType::tetrahedron, {1, 1, 1}, {0, 0, 0}, {1, 1, 1});
  ASSERT_EQ(tet.side_total(), 12);
  EXPECT_EQ(std::vector<std::int32_t>(tet.side_vertices.begin(), tet.side_vertices.begin() + 6),
            (std::vector<std::int32_t>{0, 6, 2, 0, 4, 6}));
  const MeshData hex = box_mesh(CellType::hexahedron, {1, 1, 1}, {0, 0, 0}, {1, 1, 1});
  EXPECT_EQ(std::vector<std::int32_t>(hex.side_vertices.begin(), hex.side_vertices.begin() + 4),
            (std::vector<std::int32_t>{0, 4, 6, 2}));
  EXPECT_EQ(hex.side_tags, (std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}));
}

std::string error_of(CellType type, std::array<std::int32_t, 3> resolution, Point lower,
                     Point upper) {
  try {
    (void)box_mesh(type, resolution, lower, upper);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(BoxMesh, RejectsBadResolutionAndBounds) {
  std::string message = error_of(CellType::quadrilateral, {2, 0, 1}, {0, 0, 0}, {1, 1, 1});
  EXPECT_NE(message.find("resolution along y"), std::string::npos) << message;
  EXPECT_NE(message.find("got 0"), std::string::npos) << message;
  message = error_of(CellType::hexahedron, {2, 2, -3}, {0, 0, 0}, {1, 1, 1});
  EXPECT_NE(message.find("resolution along z"), std::string::npos) << message;
  EXPECT_NE(message.find("got -3"), std::string::npos) << message;
  message = error_of(CellType::tetrahedron, {1, 1, 1}, {0, 0, 2}, {1, 1, 2});
  EXPECT_NE(message.find("upper bound along z (2)"), std::string::npos) << message;
  message = error_of(CellType::triangle, {1, 1, 1}, {3, 0, 0}, {1, 1, 0});
  EXPECT_NE(message.find("upper bound along x (1)"), std::string::npos) << message;
  EXPECT_NE(message.find("lower bound (3)"), std::string::npos) << message;
  message = error_of(CellType::triangle, {1, 1, 1},
                     {0, std::numeric_limits<double>::quiet_NaN(), 0}, {1, 1, 0});
  EXPECT_NE(message.find("along y"), std::string::npos) << message;
  message = error_of(CellType::hexahedron, {2000, 2000, 2000}, {0, 0, 0}, {1, 1, 1});
  EXPECT_NE(message.find("std::int32_t"), std::string::npos) << message;
  // 2D types ignore the third entries.
  EXPECT_EQ(box_mesh(CellType::triangle, {1, 1, 0}, {0, 0, 5}, {1, 1, -5}).cell_total(), 2);
}

}  // namespace
}  // namespace afem::geometry
