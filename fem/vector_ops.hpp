#pragma once

/// @file
/// Vector operations on the backend for solvers and operators: dot, norm, axpby, scale, copy,
/// fill. Each
/// borrows its Thrust scratch from the arena and gives it back before returning; sums are cut into
/// blocks that depend only on the length, so they do not depend on the thread count.

#include <thrust/copy.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/inner_product.h>
#include <thrust/iterator/counting_iterator.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "arenafem/fem/detail/check_size.hpp"
#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/thrust_allocator.hpp"

namespace afem::fem {

/// x . y; throws afem::Error when the lengths differ.
inline double dot(memory::ArrayView<const double> x, memory::ArrayView<const double> y,
                  memory::Arena& scratch) {
  detail::check_size(y.size(), static_cast<std::int64_t>(x.size()), "dot (y)");
  auto policy = memory::arena_policy(scratch, "vector.thrust");
  return thrust::inner_product(policy, x.begin(), x.end(), y.begin(), 0.0);
}

/// ||x||, the Euclidean norm.
inline double norm(memory::ArrayView<const double> x, memory::Arena& scratch) {
  return std::sqrt(dot(x, x, scratch));
}

/// y = a x + b y; throws afem::Error when the lengths differ. With b = 0, y is read anyway
/// (0 * y): use copy() or fill() to overwrite a vector that may hold anything.
inline void axpby(double a, memory::ArrayView<const double> x, double b,
                  memory::ArrayView<double> y, memory::Arena& scratch) {
  detail::check_size(y.size(), static_cast<std::int64_t>(x.size()), "axpby (y)");
  auto policy = memory::arena_policy(scratch, "vector.thrust");
  thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), x.size(),
                     [=] AFEM_HOST_DEVICE(std::size_t i) { y[i] = a * x[i] + b * y[i]; });
}

/// y = a y.
inline void scale(memory::ArrayView<double> y, double a, memory::Arena& scratch) {
  auto policy = memory::arena_policy(scratch, "vector.thrust");
  thrust::for_each_n(policy, thrust::counting_iterator<std::size_t>(0), y.size(),
                     [=] AFEM_HOST_DEVICE(std::size_t i) { y[i] *= a; });
}

/// y = x; throws afem::Error when the lengths differ.
inline void copy(memory::ArrayView<const double> x, memory::ArrayView<double> y,
                 memory::Arena& scratch) {
  detail::check_size(y.size(), static_cast<std::int64_t>(x.size()), "copy (y)");
  auto policy = memory::arena_policy(scratch, "vector.thrust");
  thrust::copy(policy, x.begin(), x.end(), y.begin());
}

/// y = value everywhere.
inline void fill(memory::ArrayView<double> y, double value, memory::Arena& scratch) {
  auto policy = memory::arena_policy(scratch, "vector.thrust");
  thrust::fill(policy, y.begin(), y.end(), value);
}

}  // namespace afem::fem
