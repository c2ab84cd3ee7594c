#pragma once

/// @file
/// Element-by-element reference assembly on the host into an Eigen SparseMatrix, independent of
/// integrate(): host copies of the mesh and of the space's cell nodes, the host reference rule,
/// and Eigen's setFromTriplets.

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include <vector>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/fem/lagrange_element.hpp"
#include "arenafem/geometry/grid.hpp"
#include "arenafem/geometry/mesh.hpp"
#include "arenafem/quadrature/reference_rule.hpp"
#include "support/backend.hpp"

namespace afem::test {

/// A view of the geometry whose data the host can read: grids are closed form; meshes are
/// rebuilt from their host MeshData (kept alive by the caller).
template <int D>
geometry::GridView<D> host_view(const geometry::Grid<D>& grid, const geometry::MeshData&) {
  return grid.view();
}
template <geometry::CellType Type>
geometry::MeshView<Type> host_view(const geometry::Mesh<Type>&, const geometry::MeshData& data) {
  geometry::MeshView<Type> view{};
  view.positions = memory::ArrayView<const double>(data.positions.data(), data.positions.size());
  view.cells = memory::ArrayView<const std::int32_t>(data.cells.data(), data.cells.size());
  return view;
}

/// The form nu grad u : grad v + lambda div u div v + u . v on C components, per basis pair.
struct ReferenceForm {
  double nu = 1.0;
  double lambda = 0.0;
};

template <class Space>
Eigen::SparseMatrix<double> reference_matrix(const Space& space, const ReferenceForm& form,
                                             int order) {
  using Element = typename Space::Element;
  constexpr int dim = Space::dimension;
  constexpr int nc = Space::components;
  constexpr int n = Element::node_count;
  const geometry::MeshData data = space.geometry().to_mesh_data();
  const auto view = host_view(space.geometry(), data);
  const std::vector<std::int32_t> cell_nodes = copy_to_host(space.view().cell_nodes);
  const quadrature::ReferenceRule rule =
      quadrature::reference_rule(quadrature::cell_shape(Element::cell_type), order);
  std::vector<Eigen::Triplet<double>> triplets;
  for (std::int32_t cell = 0; cell < space.geometry().cell_count(); ++cell) {
    for (std::int32_t p = 0; p < rule.size(); ++p) {
      typename Element::Coords xi;
      for (int d = 0; d < dim; ++d) {
        xi[d] = rule.points[static_cast<std::size_t>(p) * dim + static_cast<std::size_t>(d)];
      }
      const auto jacobian = view.cell_jacobian(cell, xi);
      const double weight =
          rule.weights[static_cast<std::size_t>(p)] * std::abs(jacobian.determinant());
      const Eigen::Matrix<double, dim, dim> inverse_t = jacobian.inverse().transpose();
      double values[n];
      double reference[n * dim];
      Element::values(xi, values);
      Element::gradients(xi, reference);
      Eigen::Matrix<double, dim, n> gradients;
      for (int k = 0; k < n; ++k) {
        gradients.col(k) =
            inverse_t * Eigen::Map<const Eigen::Matrix<double, dim, 1>>(&reference[k * dim]);
      }
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          const double grad_grad = gradients.col(i).dot(gradients.col(j));
          for (int ci = 0; ci < nc; ++ci) {
            for (int cj = 0; cj < nc; ++cj) {
              double value = 0.0;
              if (ci == cj) {
                value += form.nu * grad_grad + values[i] * values[j];
              }
              if constexpr (nc == dim) {
                value += form.lambda * gradients(ci, i) * gradients(cj, j);
              }
              const std::int32_t row =
                  cell_nodes[static_cast<std::size_t>(cell) * n + static_cast<std::size_t>(i)] *
                      nc +
                  ci;
              const std::int32_t col =
                  cell_nodes[static_cast<std::size_t>(cell) * n + static_cast<std::size_t>(j)] *
                      nc +
                  cj;
              triplets.emplace_back(row, col, weight * value);
            }
          }
        }
      }
    }
  }
  const auto size = static_cast<Eigen::Index>(space.dof_count());
  Eigen::SparseMatrix<double> matrix(size, size);
  matrix.setFromTriplets(triplets.begin(), triplets.end());
  return matrix;
}

/// A BsrMatrix copied to the host as an Eigen SparseMatrix.
template <int R, int C>
Eigen::SparseMatrix<double> to_eigen(const fem::BsrMatrix<R, C>& a) {
  const auto offsets = copy_to_host(a.view().offsets);
  const auto columns = copy_to_host(a.view().columns);
  const auto values = copy_to_host(memory::ArrayView<const double>(a.view().values));
  std::vector<Eigen::Triplet<double>> triplets;
  for (std::int32_t r = 0; r < a.block_rows(); ++r) {
    for (auto k = offsets[static_cast<std::size_t>(r)];
         k < offsets[static_cast<std::size_t>(r) + 1]; ++k) {
      for (int i = 0; i < R; ++i) {
        for (int j = 0; j < C; ++j) {
          triplets.emplace_back(
              r * R + i, columns[static_cast<std::size_t>(k)] * C + j,
              values[static_cast<std::size_t>(k) * R * C + static_cast<std::size_t>(i * C + j)]);
        }
      }
    }
  }
  Eigen::SparseMatrix<double> matrix(static_cast<Eigen::Index>(a.rows()),
                                     static_cast<Eigen::Index>(a.columns()));
  matrix.setFromTriplets(triplets.begin(), triplets.end());
  return matrix;
}

}  // namespace afem::test
