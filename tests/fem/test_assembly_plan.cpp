// build_plan: the pattern and triplet plan of a bilinear form equal those of a stable sort of
// all element triplets by (row, column), for equal and for different test and trial elements,
// on a subdomain whose rows are partly empty, and on any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "arenafem/fem/detail/assembly_plan.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/geometry/partition.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "support/backend.hpp"
#include "support/backend_test.hpp"
#include "support/thread_count.hpp"
#include "unit_box.hpp"

namespace afem::fem {
namespace {

class AssemblyPlanTest : public test::BackendTest {};

/// A plan's arrays, on the host.
struct HostPlan {
  std::vector<std::int32_t> offsets;
  std::vector<std::int32_t> columns;
  std::vector<std::int32_t> order;
  std::vector<std::int32_t> starts;
  bool operator==(const HostPlan&) const = default;
};

/// The plan as a stable sort of the triplets t = (e * nt + i) * nu + j by (row, column) gives it.
HostPlan sorted_plan(const std::vector<std::int32_t>& test_nodes, int nt, std::int32_t rows,
                     const std::vector<std::int32_t>& trial_nodes, int nu) {
  const std::size_t elements = test_nodes.size() / static_cast<std::size_t>(nt);
  const std::size_t total = elements * static_cast<std::size_t>(nt * nu);
  auto row = [&](std::size_t t) { return test_nodes[t / static_cast<std::size_t>(nu)]; };
  auto column = [&](std::size_t t) {
    const std::size_t e = t / static_cast<std::size_t>(nt * nu);
    return trial_nodes[e * static_cast<std::size_t>(nu) + t % static_cast<std::size_t>(nu)];
  };
  std::vector<std::int32_t> order(total);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    const auto ua = static_cast<std::size_t>(a);
    const auto ub = static_cast<std::size_t>(b);
    return std::pair{row(ua), column(ua)} < std::pair{row(ub), column(ub)};
  });
  HostPlan plan;
  plan.offsets.assign(static_cast<std::size_t>(rows) + 1, 0);
  for (std::size_t k = 0; k < total; ++k) {
    const auto t = static_cast<std::size_t>(order[k]);
    const bool head = k == 0 || row(t) != row(static_cast<std::size_t>(order[k - 1])) ||
                      column(t) != column(static_cast<std::size_t>(order[k - 1]));
    if (head) {
      plan.columns.push_back(column(t));
      plan.starts.push_back(static_cast<std::int32_t>(k));
      ++plan.offsets[static_cast<std::size_t>(row(t)) + 1];
    }
  }
  std::partial_sum(plan.offsets.begin(), plan.offsets.end(), plan.offsets.begin());
  plan.starts.push_back(static_cast<std::int32_t>(total));
  plan.order = std::move(order);
  return plan;
}

template <class TestRestriction, class TrialRestriction>
HostPlan built_plan(const TestRestriction& test, const TrialRestriction& trial, memory::Pool& pool,
                    memory::Arena& arena) {
  using TestElement = typename TestRestriction::Element;
  using TrialElement = typename TrialRestriction::Element;
  const AssemblyKey key{test.version(), trial.version(),
                        static_cast<std::int64_t>(test.element_count()) * TestElement::node_count *
                            TrialElement::node_count};
  auto plan = detail::build_plan<1, 1, TestElement, TrialElement>(pool, test.view(), trial.view(),
                                                                  key, arena);
  EXPECT_EQ(plan.rows, test.node_count());
  EXPECT_EQ(plan.columns, trial.node_count());
  EXPECT_EQ(plan.values.size(), plan.block_columns.size());
  using View = memory::ArrayView<const std::int32_t>;
  return {test::copy_to_host(View(plan.offsets.view())),
          test::copy_to_host(View(plan.block_columns.view())),
          test::copy_to_host(View(plan.order.view())),
          test::copy_to_host(View(plan.starts.view()))};
}

template <class TestRestriction, class TrialRestriction>
HostPlan expected_plan(const TestRestriction& test, const TrialRestriction& trial) {
  using View = memory::ArrayView<const std::int32_t>;
  return sorted_plan(test::copy_to_host(View(test.view().element_nodes)),
                     TestRestriction::Element::node_count, test.node_count(),
                     test::copy_to_host(View(trial.view().element_nodes)),
                     TrialRestriction::Element::node_count);
}

TEST_F(AssemblyPlanTest, EqualsASortOfTheTripletsForQuadraticHexahedra) {
  auto geometry = test::UnitBox<geometry::Hexmesh>::make(3, *pool_, *arena_);
  const LagrangeSpace<geometry::Hexmesh, 2> space(*geometry, *pool_, *arena_);
  const quadrature::Cells cells(*geometry);
  const SpaceRestriction restriction(space, cells, *arena_);
  const HostPlan plan = built_plan(restriction, restriction, *pool_, *arena_);
  EXPECT_EQ(plan, expected_plan(restriction, restriction));
  EXPECT_EQ(plan.starts.back(), 27 * 27 * 27);  // every triplet of the 27 cells, once
}

TEST_F(AssemblyPlanTest, EqualsASortOfTheTripletsForDifferentTestAndTrialElements) {
  auto geometry = test::UnitBox<geometry::Trimesh>::make(4, *pool_, *arena_);
  const LagrangeSpace<geometry::Trimesh, 1> linear(*geometry, *pool_, *arena_);
  const LagrangeSpace<geometry::Trimesh, 2> quadratic(*geometry, *pool_, *arena_);
  const quadrature::Cells cells(*geometry);
  const SpaceRestriction test(linear, cells, *arena_);
  const SpaceRestriction trial(quadratic, cells, *arena_);
  EXPECT_EQ(built_plan(test, trial, *pool_, *arena_), expected_plan(test, trial));
  EXPECT_EQ(built_plan(trial, test, *pool_, *arena_), expected_plan(trial, test));
}

/// The plan of Q1 on the cells `selected` of an n x n grid, in the whole space's numbering,
/// checked against the sort of its triplets.
HostPlan plan_on_selected_cells(std::int32_t n, const std::vector<std::int32_t>& selected,
                                memory::Pool& pool, memory::Arena& arena) {
  auto geometry = test::UnitBox<geometry::Grid2D>::make(n, pool, arena);
  const LagrangeSpace<geometry::Grid2D, 1> space(*geometry, pool, arena);
  geometry::CellBasedGeometryPartition partition(*geometry, pool);
  auto selection = memory::borrow_temporary<std::int32_t>(pool, selected.size(), "test.cells");
  test::copy_to_device(selection.view(), selected);
  partition.select_cells(selection.view(), arena);
  const quadrature::Cells cells(partition);
  const SpaceRestriction restriction(space, cells, arena);
  HostPlan plan = built_plan(restriction, restriction, pool, arena);
  EXPECT_EQ(plan, expected_plan(restriction, restriction));
  return plan;
}

TEST_F(AssemblyPlanTest, GivesRowsNoElementTouchesNoBlocks) {
  const std::int32_t n = 6;
  // Every third row of cells (numbered x fastest), in the space's numbering: rows of nodes
  // between them touch no selected cell.
  std::vector<std::int32_t> selected;
  for (std::int32_t c = 0; c < n * n; ++c) {
    if ((c / n) % 3 == 0) {
      selected.push_back(c);
    }
  }
  const HostPlan plan = plan_on_selected_cells(n, selected, *pool_, *arena_);
  // Node rows 2, 5 and 6 touch no selected cell; rows 0 and 1 touch cell row 0 alone.
  const auto row_blocks = [&](std::int32_t node) {
    return plan.offsets[static_cast<std::size_t>(node) + 1] -
           plan.offsets[static_cast<std::size_t>(node)];
  };
  EXPECT_EQ(row_blocks(2 * (n + 1) + 3), 0);
  EXPECT_EQ(row_blocks(0), 4);
  EXPECT_EQ(row_blocks(n + 1 + 3), 6);
}

TEST_F(AssemblyPlanTest, EqualsASortOfTheTripletsForAFewCellsOfALargeSpace) {
  // Fewer triplets than nodes: the plan comes from a sort of the triplets, not from mark tables
  // over all the nodes.
  const std::int32_t n = 40;
  const HostPlan plan = plan_on_selected_cells(n, {5, 6, 5 + n, 900}, *pool_, *arena_);
  // Cells 5, 6 and 45 cover 8 nodes coupled in 40 pairs (the node all three share couples with
  // all 8); cell 900 stands alone (16).
  EXPECT_EQ(plan.columns.size(), std::size_t{40 + 16});
}

TEST_F(AssemblyPlanTest, IsTheSameOnAnyThreadCount) {
  // 161^2 rows: enough for the CPU build to split them between threads.
  const std::int32_t n = 160;
  auto geometry = test::UnitBox<geometry::Grid2D>::make(n, *pool_, *arena_);
  const LagrangeSpace<geometry::Grid2D, 1> space(*geometry, *pool_, *arena_);
  const quadrature::Cells cells(*geometry);
  const SpaceRestriction restriction(space, cells, *arena_);
  const HostPlan expected = expected_plan(restriction, restriction);
  // Q1 on an n x n grid: a node couples with the nodes of its 3 x 3 stencil that exist.
  EXPECT_EQ(expected.columns.size(), static_cast<std::size_t>((3 * n + 1) * (3 * n + 1)));
  for (int threads = 1; threads <= 4; ++threads) {
    const test::ThreadCount scope(threads);
    EXPECT_EQ(built_plan(restriction, restriction, *pool_, *arena_), expected)
        << threads << " threads";
  }
}

}  // namespace
}  // namespace afem::fem
