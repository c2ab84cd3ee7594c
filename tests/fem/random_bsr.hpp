#pragma once

/// @file
/// Random block-sparse matrices as host CSR-of-blocks arrays, for the BsrMatrix, operator and
/// solver tests.

#include <Eigen/Dense>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "arenafem/fem/bsr_matrix.hpp"
#include "arenafem/memory/pool.hpp"

namespace afem::test {

/// Host CSR-of-blocks arrays of a block matrix.
struct HostBsr {
  std::int32_t rows = 0;
  std::int32_t columns = 0;
  std::vector<std::int32_t> offsets;
  std::vector<std::int32_t> block_columns;
  std::vector<double> values;

  /// The matrix in `pool`.
  template <int R, int C = R>
  [[nodiscard]] fem::BsrMatrix<R, C> upload(memory::Pool& pool) const {
    return fem::BsrMatrix<R, C>::from_host(pool, rows, columns, offsets, block_columns, values);
  }
};

/// A random square block matrix with a full diagonal: symmetric positive definite (diagonally
/// dominant) when `symmetric`, otherwise nonsymmetric with a dominant diagonal.
template <int B>
HostBsr random_bsr(std::int32_t rows, bool symmetric, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::uniform_int_distribution<std::int32_t> column(0, rows - 1);
  std::vector<std::set<std::int32_t>> pattern(static_cast<std::size_t>(rows));
  for (std::int32_t r = 0; r < rows; ++r) {
    pattern[static_cast<std::size_t>(r)].insert(r);
    for (int k = 0; k < 3; ++k) {
      const std::int32_t c = column(random);
      pattern[static_cast<std::size_t>(r)].insert(c);
      pattern[static_cast<std::size_t>(c)].insert(r);
    }
  }
  Eigen::MatrixXd dense = Eigen::MatrixXd::Zero(Eigen::Index{rows} * B, Eigen::Index{rows} * B);
  for (std::int32_t r = 0; r < rows; ++r) {
    for (const std::int32_t c : pattern[static_cast<std::size_t>(r)]) {
      for (int i = 0; i < B; ++i) {
        for (int j = 0; j < B; ++j) {
          dense(r * B + i, c * B + j) = value(random);
        }
      }
    }
  }
  if (symmetric) {
    dense = (0.5 * (dense + dense.transpose())).eval();
  }
  for (Eigen::Index i = 0; i < dense.rows(); ++i) {
    dense(i, i) = dense.row(i).cwiseAbs().sum() + 1.0;
  }
  HostBsr host;
  host.rows = rows;
  host.columns = rows;
  host.offsets.push_back(0);
  for (std::int32_t r = 0; r < rows; ++r) {
    for (const std::int32_t c : pattern[static_cast<std::size_t>(r)]) {
      host.block_columns.push_back(c);
      for (int i = 0; i < B; ++i) {
        for (int j = 0; j < B; ++j) {
          host.values.push_back(dense(r * B + i, c * B + j));
        }
      }
    }
    host.offsets.push_back(static_cast<std::int32_t>(host.block_columns.size()));
  }
  return host;
}

/// A random rows x columns matrix of R x C blocks, up to 4 blocks per row (some rows empty).
template <int R, int C>
HostBsr random_rectangular_bsr(std::int32_t rows, std::int32_t columns, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::uniform_int_distribution<std::int32_t> column(0, columns - 1);
  std::uniform_int_distribution<int> count(0, 4);
  HostBsr host;
  host.rows = rows;
  host.columns = columns;
  host.offsets.push_back(0);
  for (std::int32_t r = 0; r < rows; ++r) {
    std::set<std::int32_t> pattern;
    for (int k = count(random); k > 0; --k) {
      pattern.insert(column(random));
    }
    for (const std::int32_t c : pattern) {
      host.block_columns.push_back(c);
      for (int i = 0; i < R * C; ++i) {
        host.values.push_back(value(random));
      }
    }
    host.offsets.push_back(static_cast<std::int32_t>(host.block_columns.size()));
  }
  return host;
}

}  // namespace afem::test
