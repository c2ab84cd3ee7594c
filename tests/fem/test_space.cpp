// Lagrange spaces: node counts, shared nodes, exact reproduction of polynomials of the space's
// degree, boundary dofs, and the space's partition and restriction to a selection of cells.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "arenafem/fem/boundary.hpp"
#include "arenafem/fem/field.hpp"
#include "arenafem/fem/interpolate.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_partition.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/geometry/partition.hpp"
#include "arenafem/geometry/side_tag_set.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/quadrature.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"
#include "support/bounded_arena.hpp"
#include "unit_box.hpp"

namespace afem::fem {
namespace {

/// A polynomial of total degree `degree` (P and Q spaces of that degree reproduce it).
template <int D>
struct Polynomial {
  int degree;
  AFEM_HOST_DEVICE double operator()(const Eigen::Matrix<double, D, 1>& x) const {
    double value = 0.5;
    for (int d = 0; d < D; ++d) {
      value += (d + 1) * 0.25 * x[d];
      if (degree == 2) {
        value += (d + 2) * 0.125 * x[d] * x[d];
        if (d > 0) {
          value -= 0.375 * x[d] * x[d - 1];
        }
      }
    }
    return value;
  }
};

template <int D>
struct AtPosition {
  Polynomial<D> p;
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s) const { return p(s.x); }
};

template <int D>
struct FieldError {
  Polynomial<D> p;
  template <class Field>
  AFEM_HOST_DEVICE double operator()(const Sample<D>& s, const Field& f) const {
    return f.value(s) - p(s.x);
  }
};

template <int D>
struct Position {
  AFEM_HOST_DEVICE Eigen::Matrix<double, D, 1> operator()(const Sample<D>& s) const { return s.x; }
};

template <class G, int Degree>
struct Case {
  using Geometry = G;
  static constexpr int degree = Degree;
};

template <class C>
class SpaceTest : public test::BackendTest {};

class SpaceBoundedArena : public test::BackendTest {};

using Cases = ::testing::Types<
    Case<geometry::Grid2D, 1>, Case<geometry::Grid2D, 2>, Case<geometry::Grid3D, 1>,
    Case<geometry::Grid3D, 2>, Case<geometry::Trimesh, 1>, Case<geometry::Trimesh, 2>,
    Case<geometry::Quadmesh, 1>, Case<geometry::Quadmesh, 2>, Case<geometry::Tetmesh, 1>,
    Case<geometry::Tetmesh, 2>, Case<geometry::Hexmesh, 1>, Case<geometry::Hexmesh, 2>>;
TYPED_TEST_SUITE(SpaceTest, Cases);

/// Closed-form node count on the unit box with n cells per axis.
template <class G, int Degree>
std::int64_t expected_nodes(std::int64_t n) {
  constexpr int dim = G::dimension;
  constexpr auto type = G::View::cell_type;
  if constexpr (type == geometry::CellType::quadrilateral ||
                type == geometry::CellType::hexahedron) {
    return static_cast<std::int64_t>(std::pow(Degree * n + 1, dim));
  } else if (Degree == 1) {
    return static_cast<std::int64_t>(std::pow(n + 1, dim));
  } else if constexpr (dim == 2) {
    // vertices + axis edges + one diagonal per square
    return (n + 1) * (n + 1) + 2 * n * (n + 1) + n * n;
  } else {
    // vertices + axis edges + one diagonal per face square + one body diagonal per cube
    return (n + 1) * (n + 1) * (n + 1) + 3 * n * (n + 1) * (n + 1) + 3 * n * n * (n + 1) +
           n * n * n;
  }
}

TYPED_TEST(SpaceTest, NumbersNodesOncePerEntity) {
  using G = typename TypeParam::Geometry;
  for (const std::int32_t n : {1, 3}) {
    auto geometry = test::UnitBox<G>::make(n, *this->pool_, *this->arena_);
    const LagrangeSpace<G, TypeParam::degree> space(*geometry, *this->pool_, *this->arena_);
    EXPECT_EQ(space.node_count(), (expected_nodes<G, TypeParam::degree>(n)));
    // Every node is used, and each cell's nodes are distinct.
    using Element = typename decltype(space)::Element;
    const auto cell_nodes = test::copy_to_host(space.view().cell_nodes);
    std::vector<int> used(static_cast<std::size_t>(space.node_count()), 0);
    for (std::size_t c = 0; c < cell_nodes.size() / Element::node_count; ++c) {
      for (int a = 0; a < Element::node_count; ++a) {
        const std::int32_t node = cell_nodes[c * Element::node_count + a];
        ASSERT_GE(node, 0);
        ASSERT_LT(node, space.node_count());
        used[static_cast<std::size_t>(node)] = 1;
        for (int b = 0; b < a; ++b) {
          EXPECT_NE(node, cell_nodes[c * Element::node_count + b]);
        }
      }
    }
    for (const int u : used) {
      EXPECT_EQ(u, 1);
    }
  }
}

TYPED_TEST(SpaceTest, ReproducesPolynomialsOfItsDegree) {
  using G = typename TypeParam::Geometry;
  constexpr int dim = G::dimension;
  auto geometry = test::UnitBox<G>::make(3, *this->pool_, *this->arena_);
  const LagrangeSpace<G, TypeParam::degree> space(*geometry, *this->pool_, *this->arena_);
  DiscreteField field(space);
  const Polynomial<dim> p{TypeParam::degree};
  interpolate(field, AtPosition<dim>{p}, *this->arena_);
  const quadrature::Cells cells(*geometry);
  const quadrature::RegularQuadrature q(cells, 4, *this->pool_);
  const auto elements = static_cast<std::size_t>(cells.element_count());
  const auto points = static_cast<std::size_t>(q.points_per_element());
  memory::Temporary<double> errors =
      memory::borrow_temporary<double>(*this->pool_, elements * points, "test.errors");
  interpolate(errors.view(), q, FieldError<dim>{p}, *this->arena_, field);
  for (const double e : test::copy_to_host(memory::ArrayView<const double>(errors.view()))) {
    ASSERT_NEAR(e, 0.0, 1e-12);
  }
  // One degree higher is not reproduced (the test can fail).
  if constexpr (TypeParam::degree == 1) {
    interpolate(errors.view(), q, FieldError<dim>{Polynomial<dim>{2}}, *this->arena_, field);
    double largest = 0.0;
    for (const double e : test::copy_to_host(memory::ArrayView<const double>(errors.view()))) {
      largest = std::max(largest, std::abs(e));
    }
    EXPECT_GT(largest, 1e-3);
  }
}

TYPED_TEST(SpaceTest, MarksTheNodesOnTheBoundary) {
  using G = typename TypeParam::Geometry;
  constexpr int dim = G::dimension;
  const std::int64_t n = 3;
  auto geometry = test::UnitBox<G>::make(3, *this->pool_, *this->arena_);
  const LagrangeSpace<G, TypeParam::degree, dim> space(*geometry, *this->pool_, *this->arena_);
  auto mask = memory::borrow_temporary<std::uint8_t>(
      *this->pool_, static_cast<std::size_t>(space.dof_count()), "test.mask");
  boundary_dofs(space, mask.view(), *this->arena_);
  const auto marked = test::copy_to_host(memory::ArrayView<const std::uint8_t>(mask.view()));
  std::int64_t count = 0;
  for (const auto m : marked) {
    count += m;
  }
  // A node is on the boundary when one of its coordinates is 0 or 1.
  const std::int64_t all = expected_nodes<G, TypeParam::degree>(n);
  std::int64_t on_boundary = 0;
  DiscreteField<LagrangeSpace<G, TypeParam::degree, dim>> positions(space);
  interpolate(positions, Position<dim>{}, *this->arena_);
  const auto x = test::copy_to_host(memory::ArrayView<const double>(positions.dofs()));
  for (std::int64_t node = 0; node < all; ++node) {
    bool boundary = false;
    for (int d = 0; d < dim; ++d) {
      const double v = x[static_cast<std::size_t>(node * dim + d)];
      boundary = boundary || std::abs(v) < 1e-12 || std::abs(v - 1.0) < 1e-12;
    }
    on_boundary += boundary ? 1 : 0;
    for (int d = 0; d < dim; ++d) {
      EXPECT_EQ(marked[static_cast<std::size_t>(node * dim + d)], boundary ? 1 : 0)
          << "node " << node;
    }
  }
  EXPECT_EQ(count, on_boundary * dim);
  EXPECT_GT(on_boundary, 0);
}

TYPED_TEST(SpaceTest, MarksTheNodesOnTaggedFacesOnly) {
  using G = typename TypeParam::Geometry;
  constexpr int dim = G::dimension;
  auto geometry = test::UnitBox<G>::make(3, *this->pool_, *this->arena_);
  const LagrangeSpace<G, TypeParam::degree, dim> space(*geometry, *this->pool_, *this->arena_);
  auto mask = memory::borrow_temporary<std::uint8_t>(
      *this->pool_, static_cast<std::size_t>(space.dof_count()), "test.mask");
  // x = 0 and y = 1.
  boundary_dofs(
      space, mask.view(),
      geometry::SideTagSet{geometry::box_side_tag(0, false), geometry::box_side_tag(1, true)},
      *this->arena_);
  const auto marked = test::copy_to_host(memory::ArrayView<const std::uint8_t>(mask.view()));
  DiscreteField<LagrangeSpace<G, TypeParam::degree, dim>> positions(space);
  interpolate(positions, Position<dim>{}, *this->arena_);
  const auto x = test::copy_to_host(memory::ArrayView<const double>(positions.dofs()));
  std::int64_t on_faces = 0;
  for (std::size_t node = 0; node * dim < x.size(); ++node) {
    const bool tagged =
        std::abs(x[node * dim]) < 1e-12 || std::abs(x[node * dim + 1] - 1.0) < 1e-12;
    on_faces += tagged ? 1 : 0;
    for (int d = 0; d < dim; ++d) {
      EXPECT_EQ(marked[node * dim + static_cast<std::size_t>(d)], tagged ? 1 : 0)
          << "node " << node;
    }
  }
  EXPECT_GT(on_faces, 0);

  // A tag no side has: refused by name, the mask left as it was.
  try {
    boundary_dofs(space, mask.view(), geometry::SideTagSet{1, 12}, *this->arena_);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("boundary_dofs: no boundary side has tag 12"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(test::copy_to_host(memory::ArrayView<const std::uint8_t>(mask.view())), marked);
  // No tags: refused (the overload without tags is the whole boundary), not an empty mask.
  EXPECT_THROW(boundary_dofs(space, mask.view(), geometry::SideTagSet{}, *this->arena_), Error);
  EXPECT_EQ(test::copy_to_host(memory::ArrayView<const std::uint8_t>(mask.view())), marked);
}

// A SpacePartition numbers the nodes that touch the selected cells compactly, in increasing
// global order; a SpaceRestriction to those cells lists each element's nodes in the whole space's
// numbering or in the partition's. Both follow a new selection after rebuild().
TYPED_TEST(SpaceTest, PartitionAndRestrictionFollowTheSelectedCells) {
  using G = typename TypeParam::Geometry;
  using Space = LagrangeSpace<G, TypeParam::degree>;
  auto geometry = test::UnitBox<G>::make(3, *this->pool_, *this->arena_);
  const Space space(*geometry, *this->pool_, *this->arena_);
  constexpr int npc = Space::Element::node_count;
  const std::int32_t cell_total = geometry->cell_count();
  const auto cell_nodes = test::copy_to_host(space.view().cell_nodes);
  geometry::CellBasedGeometryPartition partition(*geometry, *this->pool_,
                                                 {.max_cells = cell_total});
  const quadrature::Cells cells(partition);
  auto selection = memory::borrow_temporary<std::int32_t>(
      *this->pool_, static_cast<std::size_t>(cell_total), "test.selection");
  const std::vector<std::int32_t> first = {cell_total - 1, 0, 4, 4, cell_total / 2};
  test::copy_to_device(selection.view(), first);
  partition.select_cells(selection.view().subview(0, first.size()), *this->arena_);
  SpacePartition<Space> space_partition(space, partition, *this->arena_);
  SpaceRestriction whole(space, cells, *this->arena_);
  SpaceRestriction compact(space, cells, space_partition, *this->arena_);

  const auto check = [&](const std::vector<std::int32_t>& selected) {
    std::vector<std::int32_t> sorted = selected;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    const auto partition_cells = test::copy_to_host(partition.view().cells);
    ASSERT_EQ(partition_cells, sorted);
    std::vector<std::int32_t> nodes;
    for (const std::int32_t cell : sorted) {
      for (int k = 0; k < npc; ++k) {
        nodes.push_back(cell_nodes[static_cast<std::size_t>(cell) * npc + k]);
      }
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    const SpacePartitionView view = space_partition.view();
    EXPECT_EQ(test::copy_to_host(view.nodes), nodes);
    EXPECT_EQ(space_partition.node_count(), static_cast<std::int32_t>(nodes.size()));
    const auto index = test::copy_to_host(view.node_index);
    ASSERT_EQ(index.size(), static_cast<std::size_t>(space.node_count()));
    for (std::int32_t node = 0; node < space.node_count(); ++node) {
      const auto at = std::lower_bound(nodes.begin(), nodes.end(), node);
      const std::int32_t expected =
          at != nodes.end() && *at == node ? static_cast<std::int32_t>(at - nodes.begin()) : -1;
      EXPECT_EQ(index[static_cast<std::size_t>(node)], expected) << "node " << node;
    }
    const auto whole_nodes = test::copy_to_host(whole.view().element_nodes);
    const auto compact_nodes = test::copy_to_host(compact.view().element_nodes);
    ASSERT_EQ(whole.element_count(), static_cast<std::int32_t>(sorted.size()));
    ASSERT_EQ(whole_nodes.size(), sorted.size() * npc);
    ASSERT_EQ(compact_nodes.size(), sorted.size() * npc);
    EXPECT_EQ(whole.node_count(), space.node_count());
    EXPECT_EQ(compact.node_count(), space_partition.node_count());
    for (std::size_t e = 0; e < sorted.size(); ++e) {
      for (std::size_t k = 0; k < npc; ++k) {
        const std::int32_t node = cell_nodes[static_cast<std::size_t>(sorted[e]) * npc + k];
        EXPECT_EQ(whole_nodes[e * npc + k], node) << "element " << e;
        EXPECT_EQ(compact_nodes[e * npc + k], index[static_cast<std::size_t>(node)])
            << "element " << e;
      }
    }
    // Each restriction's node-to-pair map lists, for every node, exactly the pairs that hold it,
    // in element order.
    for (const auto* restriction : {&whole, &compact}) {
      const RestrictionView restricted = restriction->view();
      const auto element_nodes = test::copy_to_host(restricted.element_nodes);
      const auto pairs = test::copy_to_host(restricted.node_pairs);
      const auto offsets = test::copy_to_host(restricted.node_pair_offsets);
      ASSERT_EQ(offsets.size(), static_cast<std::size_t>(restriction->node_count()) + 1);
      ASSERT_EQ(pairs.size(), element_nodes.size());
      EXPECT_EQ(offsets.front(), 0);
      EXPECT_EQ(offsets.back(), static_cast<std::int32_t>(pairs.size()));
      for (std::int32_t node = 0; node < restriction->node_count(); ++node) {
        std::vector<std::int32_t> expected;
        for (std::size_t pair = 0; pair < element_nodes.size(); ++pair) {
          if (element_nodes[pair] == node) {
            expected.push_back(static_cast<std::int32_t>(pair));
          }
        }
        const auto n = static_cast<std::size_t>(node);
        EXPECT_EQ(
            std::vector<std::int32_t>(pairs.begin() + offsets[n], pairs.begin() + offsets[n + 1]),
            expected)
            << "node " << node;
      }
    }
  };
  check(first);

  const std::uint64_t version = compact.version();
  std::vector<std::int32_t> second;
  for (std::int32_t cell = 1; cell < cell_total; cell += 3) {
    second.push_back(cell);
  }
  test::copy_to_device(selection.view(), second);
  partition.select_cells(selection.view().subview(0, second.size()), *this->arena_);
  space_partition.rebuild(*this->arena_);
  whole.rebuild(*this->arena_);
  compact.rebuild(*this->arena_);
  EXPECT_NE(compact.version(), version);
  check(second);
}

/// A step arena too small for the numbering of a space of the given degree fails cleanly, until
/// one fits and numbers the nodes as an unbounded arena does.
template <int Degree, class G>
void expect_clean_failures_until_it_fits(const G& geometry, memory::Pool& pool,
                                         memory::Arena& unbounded) {
  using Space = LagrangeSpace<G, Degree>;
  const Space reference(geometry, pool, unbounded);
  const std::vector<std::int32_t> expected_cell_nodes =
      test::copy_to_host(reference.view().cell_nodes);
  const std::vector<std::int32_t> expected_node_cell_local =
      test::copy_to_host(reference.node_cell_local());
  test::expect_clean_failures_until_it_fits(pool, [&](memory::Arena& bounded) {
    const Space space(geometry, pool, bounded);
    EXPECT_EQ(space.node_count(), reference.node_count());
    EXPECT_EQ(test::copy_to_host(space.view().cell_nodes), expected_cell_nodes);
    EXPECT_EQ(test::copy_to_host(space.node_cell_local()), expected_node_cell_local);
  });
}

TEST_F(SpaceBoundedArena, NumberingFailsCleanlyUntilTheArenaFits) {
  const auto grid = test::UnitBox<geometry::Grid2D>::make(64, *pool_, *arena_);
  expect_clean_failures_until_it_fits<1>(*grid, *pool_, *arena_);
  const auto hexes = test::UnitBox<geometry::Hexmesh>::make(8, *pool_, *arena_);
  expect_clean_failures_until_it_fits<1>(*hexes, *pool_, *arena_);
  // Degree 2 numbers edges and faces by sorting their vertex tuples.
  expect_clean_failures_until_it_fits<2>(*hexes, *pool_, *arena_);
  const auto triangles = test::UnitBox<geometry::Trimesh>::make(16, *pool_, *arena_);
  expect_clean_failures_until_it_fits<2>(*triangles, *pool_, *arena_);
}

}  // namespace
}  // namespace afem::fem
