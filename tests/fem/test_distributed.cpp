// Distributed dofs, matrices and CG against the same problem assembled and solved on one process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/distributed_dofs.hpp"
#include "arenafem/fem/distributed_matrix.hpp"
#include "arenafem/fem/integrate.hpp"
#include "arenafem/fem/solvers.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/fem/space_restriction.hpp"
#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/distributed_mesh.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/memory/communicator.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/quadrature/domain.hpp"
#include "arenafem/quadrature/quadrature.hpp"

namespace afem::fem {
namespace {

/// nu grad u . grad v + u v: symmetric positive definite without boundary conditions.
struct ShiftedLaplacian {
  double viscosity = 1.0;
  static constexpr bool symmetric = true;
  template <class Sample, class Test, class Trial>
  AFEM_HOST_DEVICE double operator()(const Sample& /*s*/, const Test& v, const Trial& u) const {
    return viscosity * dot(u.grad(), v.grad()) + u.value() * v.value();
  }
};

/// (1 + x0) v
struct Load {
  template <class Sample, class Test>
  AFEM_HOST_DEVICE double operator()(const Sample& s, const Test& v) const {
    return (1.0 + s.x[0]) * v.value();
  }
};

template <geometry::CellType Type, int Degree>
struct Case {
  static constexpr geometry::CellType type = Type;
  static constexpr int degree = Degree;
};

/// One problem twice: on the whole mesh in this process, and over the ranks.
template <class C>
class DistributedTest : public ::testing::Test {
protected:
  using Mesh = geometry::Mesh<C::type>;
  using Space = LagrangeSpace<Mesh, C::degree>;
  static constexpr int n = geometry::dimension(C::type) == 2 ? 9 : 4;

  void SetUp() override {
    whole_data_ = geometry::box_mesh(C::type, {n, n, n}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0});
    whole_.emplace(whole_data_, pool_, scratch_);
    whole_space_.emplace(*whole_, pool_, scratch_);
    part_ =
        geometry::distribute_mesh(comm_, comm_.rank() == 0 ? whole_data_ : geometry::MeshData{});
    mesh_.emplace(part_.mesh, pool_, scratch_);
    space_.emplace(*mesh_, pool_, scratch_);
    dofs_.emplace(distribute_dofs(comm_, part_, *space_, whole_data_, pool_, scratch_));
    owned_cells_.emplace(*mesh_, pool_);
    geometry::select_owned_cells(*owned_cells_, part_.owned_cells, pool_, scratch_);
    owned_domain_.emplace(*owned_cells_);
    owned_quadrature_.emplace(*owned_domain_, 2 * C::degree, pool_);
    owned_restriction_.emplace(*space_, *owned_domain_, scratch_);
  }

  /// The serial matrix (and load) of the whole mesh, and the local ones over the owned cells.
  void assemble(double viscosity, BsrMatrix<1>& serial, BsrMatrix<1>& local) {
    const quadrature::Cells all(*whole_);
    const quadrature::RegularQuadrature all_quadrature(all, 2 * C::degree, pool_);
    const SpaceRestriction all_restriction(*whole_space_, all, scratch_);
    integrate(serial, all_quadrature, all_restriction, all_restriction, ShiftedLaplacian{viscosity},
              scratch_);
    integrate(local, *owned_quadrature_, *owned_restriction_, *owned_restriction_,
              ShiftedLaplacian{viscosity}, scratch_);
  }

  /// v restricted to the owned nodes (v in the whole space's numbering).
  std::vector<double> owned_part(const std::vector<double>& v) const {
    std::vector<double> part;
    for (const std::int64_t serial : dofs_->serial_nodes()) {
      part.push_back(v[static_cast<std::size_t>(serial)]);
    }
    return part;
  }

  memory::Communicator comm_;
  memory::Pool pool_{memory::device_resource(), {.name = "distributed"}};
  memory::Arena scratch_{pool_, {"step", 1 << 20, 0}};
  geometry::MeshData whole_data_;
  std::optional<Mesh> whole_;
  std::optional<Space> whole_space_;
  geometry::LocalMeshData part_;
  std::optional<Mesh> mesh_;
  std::optional<Space> space_;
  std::optional<DistributedDofs> dofs_;
  std::optional<geometry::CellBasedGeometryPartition<Mesh>> owned_cells_;
  std::optional<quadrature::Cells<Mesh>> owned_domain_;
  std::optional<quadrature::RegularQuadrature<quadrature::Cells<Mesh>>> owned_quadrature_;
  std::optional<SpaceRestriction<Space, quadrature::Cells<Mesh>>> owned_restriction_;
};

using Cases = ::testing::Types<
    Case<geometry::CellType::triangle, 2>, Case<geometry::CellType::quadrilateral, 1>,
    Case<geometry::CellType::tetrahedron, 1>, Case<geometry::CellType::hexahedron, 2>>;
TYPED_TEST_SUITE(DistributedTest, Cases);

TYPED_TEST(DistributedTest, NodesAreOwnedOnceAndGhostsGetTheOwnersValues) {
  const DistributedDofs& dofs = *this->dofs_;
  EXPECT_EQ(dofs.global_nodes(), this->whole_space_->node_count());
  EXPECT_EQ(this->comm_.sum(std::int64_t{dofs.owned_nodes()}), dofs.global_nodes());
  EXPECT_EQ(this->comm_.exclusive_sum(std::int64_t{dofs.owned_nodes()}), dofs.first_owned());
  // The serial numbers of the owned nodes, over all ranks, are each node of the whole space once.
  std::int64_t sum = 0;
  for (const std::int64_t serial : dofs.serial_nodes()) {
    sum += serial;
  }
  EXPECT_EQ(this->comm_.sum(sum), dofs.global_nodes() * (dofs.global_nodes() - 1) / 2);
  for (std::int32_t g = 0; g < dofs.ghost_nodes(); ++g) {
    EXPECT_NE(dofs.owner(dofs.global_node(dofs.owned_nodes() + g)), this->comm_.rank());
  }
  std::vector<double> owned(static_cast<std::size_t>(dofs.owned_count()));
  for (std::size_t i = 0; i < owned.size(); ++i) {
    owned[i] = 0.5 + static_cast<double>(dofs.global_node(static_cast<std::int32_t>(i)));
  }
  std::vector<double> ghosts(static_cast<std::size_t>(dofs.ghost_count()), -1.0);
  dofs.update_ghosts(memory::ArrayView<const double>(owned.data(), owned.size()),
                     memory::ArrayView<double>(ghosts.data(), ghosts.size()));
  for (std::int32_t g = 0; g < dofs.ghost_nodes(); ++g) {
    EXPECT_EQ(ghosts[static_cast<std::size_t>(g)],
              0.5 + static_cast<double>(dofs.global_node(dofs.owned_nodes() + g)));
  }
  if (this->comm_.size() == 1) {
    EXPECT_EQ(dofs.ghost_nodes(), 0);
  }
}

TYPED_TEST(DistributedTest, AssembledLoadMatchesTheSerialOne) {
  const quadrature::Cells all(*this->whole_);
  const quadrature::RegularQuadrature all_quadrature(all, 4, this->pool_);
  const SpaceRestriction all_restriction(*this->whole_space_, all, this->scratch_);
  std::vector<double> serial(static_cast<std::size_t>(this->whole_space_->dof_count()));
  integrate(memory::ArrayView<double>(serial.data(), serial.size()), all_quadrature,
            all_restriction, Load{}, this->scratch_);
  const quadrature::RegularQuadrature quadrature(*this->owned_domain_, 4, this->pool_);
  std::vector<double> local(static_cast<std::size_t>(this->space_->dof_count()));
  integrate(memory::ArrayView<double>(local.data(), local.size()), quadrature,
            *this->owned_restriction_, Load{}, this->scratch_);
  std::vector<double> summed(static_cast<std::size_t>(this->dofs_->owned_count()));
  this->dofs_->accumulate(memory::ArrayView<const double>(local.data(), local.size()),
                          memory::ArrayView<double>(summed.data(), summed.size()));
  const std::vector<double> expected = this->owned_part(serial);
  for (std::size_t i = 0; i < summed.size(); ++i) {
    EXPECT_NEAR(summed[i], expected[i], 1e-14) << "owned node " << i;
  }
}

TYPED_TEST(DistributedTest, ProductMatchesTheSerialMatrixAndReassemblyTakesNoMemory) {
  BsrMatrix<1> serial(this->pool_);
  BsrMatrix<1> local(this->pool_);
  this->assemble(1.0, serial, local);
  DistributedMatrix<1> matrix(*this->dofs_, local, this->scratch_);
  EXPECT_EQ(matrix.global_block_count(), serial.block_count());
  const auto nodes = static_cast<std::size_t>(serial.rows());
  std::vector<double> x_serial(nodes);
  for (std::size_t i = 0; i < nodes; ++i) {
    x_serial[i] = std::sin(0.37 * static_cast<double>(i) + 1.0);
  }
  std::vector<double> y_serial(nodes);
  spmv(serial, memory::ArrayView<const double>(x_serial.data(), nodes),
       memory::ArrayView<double>(y_serial.data(), nodes), this->scratch_);
  std::vector<double> x = this->owned_part(x_serial);
  std::vector<double> y(x.size());
  const auto check = [&](double scale) {
    matrix.apply(memory::ArrayView<const double>(x.data(), x.size()),
                 memory::ArrayView<double>(y.data(), y.size()), this->scratch_);
    const std::vector<double> expected = this->owned_part(y_serial);
    for (std::size_t i = 0; i < y.size(); ++i) {
      EXPECT_NEAR(y[i], scale * expected[i], 1e-12 * (1.0 + std::abs(expected[i])));
    }
  };
  check(1.0);
  // Doubling the viscosity: a repeated assembly into the same pattern, no new memory.
  BsrMatrix<1> doubled(this->pool_);
  this->assemble(2.0, doubled, local);
  const auto before = this->pool_.stats();
  matrix.assemble(local, this->scratch_);
  spmv(doubled, memory::ArrayView<const double>(x_serial.data(), nodes),
       memory::ArrayView<double>(y_serial.data(), nodes), this->scratch_);
  check(1.0);
  const auto after = this->pool_.stats();
  EXPECT_EQ(after.upstream_allocations, before.upstream_allocations);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
}

TYPED_TEST(DistributedTest, ConjugateGradientsSolveLikeTheSerialSolve) {
  BsrMatrix<1> serial(this->pool_);
  BsrMatrix<1> local(this->pool_);
  this->assemble(1.0, serial, local);
  DistributedMatrix<1> matrix(*this->dofs_, local, this->scratch_);
  const auto nodes = static_cast<std::size_t>(serial.rows());
  std::vector<double> b_serial(nodes);
  for (std::size_t i = 0; i < nodes; ++i) {
    b_serial[i] = std::cos(0.11 * static_cast<double>(i));
  }
  std::vector<double> x_serial(nodes, 0.0);
  const SolveOptions options{.tolerance = 1e-12, .preconditioner = Preconditioner::jacobi};
  const SolveResult serial_result =
      cg(serial, memory::ArrayView<const double>(b_serial.data(), nodes),
         memory::ArrayView<double>(x_serial.data(), nodes), this->scratch_, options);
  const std::vector<double> b = this->owned_part(b_serial);
  std::vector<double> x(b.size(), 0.0);
  const auto before = this->pool_.stats();
  const SolveResult result =
      cg(matrix, memory::ArrayView<const double>(b.data(), b.size()),
         memory::ArrayView<double>(x.data(), x.size()), this->scratch_, options);
  EXPECT_EQ(this->pool_.stats().upstream_allocations, before.upstream_allocations);
  EXPECT_LE(std::abs(result.iterations - serial_result.iterations), 1);
  EXPECT_LE(result.residual, 1e-12);
  const std::vector<double> expected = this->owned_part(x_serial);
  double scale = 0.0;
  for (const double v : x_serial) {
    scale = std::max(scale, std::abs(v));
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(x[i], expected[i], 1e-10 * scale);
  }
  // Every rank reports the same iterations and residual.
  EXPECT_EQ(this->comm_.max(std::int64_t{result.iterations}), result.iterations);
  EXPECT_EQ(-this->comm_.max(-std::int64_t{result.iterations}), result.iterations);
  EXPECT_EQ(this->comm_.max(result.residual), result.residual);
  EXPECT_EQ(-this->comm_.max(-result.residual), result.residual);
}

TEST(DistributedMatrix, RefusesALocalMatrixWithANewPattern) {
  const memory::Communicator comm;
  memory::Pool pool(memory::device_resource(), {.name = "distributed"});
  memory::Arena scratch(pool, {"step", 1 << 20, 0});
  const geometry::MeshData whole =
      geometry::box_mesh(geometry::CellType::quadrilateral, {6, 6, 1}, {0, 0, 0}, {1, 1, 1});
  const geometry::LocalMeshData part =
      geometry::distribute_mesh(comm, comm.rank() == 0 ? whole : geometry::MeshData{});
  const geometry::Quadmesh mesh(part.mesh, pool, scratch);
  const LagrangeSpace<geometry::Quadmesh, 1> space(mesh, pool, scratch);
  const DistributedDofs dofs = distribute_dofs(comm, part, space, whole, pool, scratch);
  geometry::CellBasedGeometryPartition<geometry::Quadmesh> owned_cells(mesh, pool);
  geometry::select_owned_cells(owned_cells, part.owned_cells, pool, scratch);
  const quadrature::Cells owned(owned_cells);
  const quadrature::RegularQuadrature quadrature(owned, 2, pool);
  const SpaceRestriction restriction(space, owned, scratch);
  BsrMatrix<1> local(pool);
  integrate(local, quadrature, restriction, restriction, ShiftedLaplacian{}, scratch);
  DistributedMatrix<1> matrix(dofs, local, scratch);
  const auto product = [&] {
    std::vector<double> x(static_cast<std::size_t>(dofs.owned_count()), 1.5);
    std::vector<double> y(x.size());
    matrix.apply(memory::ArrayView<const double>(x.data(), x.size()),
                 memory::ArrayView<double>(y.data(), y.size()), scratch);
    return y;
  };
  const std::vector<double> before = product();
  BsrMatrix<1> other(pool);
  integrate(other, quadrature, restriction, restriction, ShiftedLaplacian{2.0}, scratch);
  EXPECT_THROW(matrix.assemble(other, scratch), memory::CollectiveError);
  EXPECT_EQ(product(), before);  // refused without a change
  std::vector<double> wrong(3);
  EXPECT_THROW(dofs.update_ghosts(memory::ArrayView<const double>(wrong.data(), wrong.size()),
                                  memory::ArrayView<double>(wrong.data(), wrong.size())),
               Error);
}

}  // namespace
}  // namespace afem::fem
