#pragma once

/// @file
/// sort_rows: the indices of rows of integers in lexicographic order, equal rows by index. Mesh
/// sides and the edges and faces of a space are numbered by sorting their vertex tuples with it.
/// All scratch comes from an arena and is borrowed before any loop starts, so a sort that does not
/// fit throws afem::OutOfMemory; on the CPU it makes no call to the system allocator.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/counting_sort.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/radix_sort.hpp"
#include "arenafem/memory/temporary.hpp"

#if AFEM_HAS_CUDA
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>

#include "arenafem/memory/thrust_allocator.hpp"
#else
#include "arenafem/memory/parallel_for.hpp"
#endif

namespace afem::memory {

namespace detail {

/// Column `column` of `table` (rows of `width` integers) in the row order `order`.
struct GatherColumn {
  ArrayView<const std::int32_t> table;
  ArrayView<const std::int32_t> order;
  ArrayView<std::int32_t> out;
  int width = 1;
  int column = 0;

  AFEM_HOST_DEVICE void operator()(std::size_t i) const {
    out[i] = table[static_cast<std::size_t>(order[i]) * static_cast<std::size_t>(width) +
                   static_cast<std::size_t>(column)];
  }
};

/// Rows per loop index of the CPU sort's first-column pass and group sorts.
inline constexpr std::size_t sort_rows_grain = std::size_t{1} << 12;

/// Orders the row indices order[begin, end), whose rows agree in column 0, by the other columns
/// and then by index: insertion into a sorted prefix for the few rows a group usually holds,
/// std::sort (which allocates nothing) for more.
inline void sort_row_group(const std::int32_t* table, int width, std::int32_t* begin,
                           std::int32_t* end) {
  const auto w = static_cast<std::size_t>(width);
  auto less = [&](std::int32_t a, std::int32_t b) {
    const std::int32_t* x = table + static_cast<std::size_t>(a) * w;
    const std::int32_t* y = table + static_cast<std::size_t>(b) * w;
    for (std::size_t c = 1; c < w; ++c) {
      if (x[c] != y[c]) {
        return x[c] < y[c];
      }
    }
    return a < b;
  };
  if (end - begin > 32) {
    std::sort(begin, end, less);
    return;
  }
  for (std::int32_t* i = begin + 1; i < end; ++i) {
    const std::int32_t row = *i;
    std::int32_t* j = i;
    for (; j > begin && less(row, *(j - 1)); --j) {
      *j = *(j - 1);
    }
    *j = row;
  }
}

}  // namespace detail

/// Writes to `order` the indices of the rows of `table` (order.size() rows of `width` integers,
/// row after row) so that the rows come in lexicographic order, equal rows by increasing index.
/// Scratch comes from `scratch` and is given back on return. Throws afem::Error when the sizes
/// disagree or the rows overflow 32-bit indices, and afem::OutOfMemory when the scratch does not
/// fit. CPU: when column 0 spans at most about twice as many values as there are rows (vertex
/// tuples do), a counting sort by column 0 and a sort of each group of rows that share it, on the
/// parallel_for team; otherwise, as on CUDA, one stable radix sort per column, the last first.
inline void sort_rows(ArrayView<const std::int32_t> table, int width, ArrayView<std::int32_t> order,
                      Arena& scratch) {
  const std::size_t rows = order.size();
  AFEM_EXPECTS(width > 0 && table.size() == rows * static_cast<std::size_t>(width),
               "sort_rows: " + std::to_string(table.size()) + " integers for " +
                   std::to_string(rows) + " rows of " + std::to_string(width));
  AFEM_EXPECTS(rows < static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()),
               "sort_rows: " + std::to_string(rows) + " rows overflow 32-bit indices");
  if (rows == 0) {
    return;
  }
  auto column = borrow_temporary<std::int32_t>(scratch, rows, "sort_rows.column");
  detail::GatherColumn gather{table, order, column.view(), width, width - 1};
#if AFEM_HAS_CUDA
  auto policy = arena_policy(scratch, "sort_rows.thrust");
  thrust::sequence(policy, order.begin(), order.end());
  for (; gather.column >= 0; --gather.column) {
    thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), rows, gather);
    radix_sort_by_key(column.view(), order, scratch);
  }
#else
  const auto w = static_cast<std::size_t>(width);
  const std::size_t blocks = (rows + detail::sort_rows_grain - 1) / detail::sort_rows_grain;
  auto bounds_buffer = borrow_temporary<std::int32_t>(scratch, 2 * blocks, "sort_rows.bounds");
  const ArrayView<std::int32_t> bounds = bounds_buffer.view();
  parallel_for(blocks, 1, [&](std::size_t b) {
    std::int32_t low = table[b * detail::sort_rows_grain * w];
    std::int32_t high = low;
    for (std::size_t r = b * detail::sort_rows_grain;
         r < std::min(rows, (b + 1) * detail::sort_rows_grain); ++r) {
      low = std::min(low, table[r * w]);
      high = std::max(high, table[r * w]);
    }
    bounds[2 * b] = low;
    bounds[2 * b + 1] = high;
  });
  std::int32_t low = bounds[0];
  std::int32_t high = bounds[1];
  for (std::size_t b = 1; b < blocks; ++b) {
    low = std::min(low, bounds[2 * b]);
    high = std::max(high, bounds[2 * b + 1]);
  }
  const std::int64_t span = std::int64_t{high} - low + 1;
  if (span > 2 * static_cast<std::int64_t>(rows) + 1024) {
    parallel_for(rows, detail::sort_rows_grain,
                 [&](std::size_t i) { order[i] = static_cast<std::int32_t>(i); });
    for (; gather.column >= 0; --gather.column) {
      parallel_for(rows, detail::sort_rows_grain, gather);
      radix_sort_by_key(column.view(), order, scratch);
    }
    return;
  }
  const auto groups = static_cast<std::size_t>(span);
  auto offsets_buffer = borrow_temporary<std::int32_t>(scratch, groups + 1, "sort_rows.offsets");
  const ArrayView<std::int32_t> offsets = offsets_buffer.view();
  const ArrayView<std::int32_t> first_column = column.view();
  parallel_for(rows, detail::sort_rows_grain,
               [&](std::size_t r) { first_column[r] = table[r * w] - low; });
  counting_sort_indices(first_column, static_cast<std::int32_t>(span), order, offsets, scratch);
  if (width > 1) {
    parallel_for(groups, detail::sort_rows_grain, [&](std::size_t g) {
      detail::sort_row_group(table.data(), width, order.data() + offsets[g],
                             order.data() + offsets[g + 1]);
    });
  }
#endif
}

}  // namespace afem::memory
