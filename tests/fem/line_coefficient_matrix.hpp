#pragma once

// A grid matrix whose rows repeat their left neighbour within each line along x but differ from
// line to line (no 3^D stencil), for the stencil operator's and the Galerkin rows' tests.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "random_bsr.hpp"

namespace afem::test {

/// A (2D + 1)-point matrix on a grid of `vertices` per axis whose coefficient changes from line
/// to line along x (no 3^D stencil: rows repeat their left neighbour only within a line), and one
/// row `varied` (an interior vertex) with its own diagonal.
inline HostBsr line_coefficient_matrix(const std::vector<std::int32_t>& vertices,
                                       std::int32_t varied) {
  HostBsr m;
  std::int32_t count = 1;
  for (const std::int32_t v : vertices) {
    count *= v;
  }
  m.rows = m.columns = count;
  m.offsets.push_back(0);
  const std::int32_t n = vertices[0];
  for (std::int32_t r = 0; r < count; ++r) {
    const std::int32_t line_index = r / n;
    const auto line = static_cast<double>(line_index);
    const double c = 1.0 + 0.37 * line + 0.001 * std::sin(line);
    std::vector<std::int32_t> index(vertices.size());
    for (std::size_t d = 0, rest = static_cast<std::size_t>(r); d < vertices.size(); ++d) {
      index[d] = static_cast<std::int32_t>(rest % static_cast<std::size_t>(vertices[d]));
      rest /= static_cast<std::size_t>(vertices[d]);
    }
    std::vector<std::pair<std::int32_t, double>> row{
        {r, 2.0 * static_cast<double>(vertices.size()) * c + 0.01}};
    if (r == varied) {
      row[0].second += 0.5;
    }
    for (std::size_t d = 0, stride = 1; d < vertices.size(); stride *= vertices[d], ++d) {
      if (index[d] > 0) {
        row.emplace_back(r - static_cast<std::int32_t>(stride), -c);
      }
      if (index[d] + 1 < vertices[d]) {
        row.emplace_back(r + static_cast<std::int32_t>(stride), -c);
      }
    }
    std::sort(row.begin(), row.end());
    for (const auto& [column, value] : row) {
      m.block_columns.push_back(column);
      m.values.push_back(value);
    }
    m.offsets.push_back(static_cast<std::int32_t>(m.block_columns.size()));
  }
  return m;
}

}  // namespace afem::test
