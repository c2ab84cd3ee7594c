// copy_to_device and copy_to_host as users write them: from and into vectors, arrays and spans,
// with the library's views of T or of const T, no template arguments spelled out.
#include <gtest/gtest.h>

#include <array>
#include <span>
#include <string>
#include <vector>

#include "arenafem/memory/array_view.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/temporary.hpp"
#include "support/backend_test.hpp"

namespace afem::memory {
namespace {

// A const host range cannot be copied into; a range of another element type is refused.
template <class Range, class T>
concept CopiesToHost = requires(Range&& range, ArrayView<T> view, const Stream& stream) {
  copy_to_host(range, view, stream);
};
static_assert(CopiesToHost<std::vector<double>&, const double>);
static_assert(CopiesToHost<std::span<double>, double>);
static_assert(!CopiesToHost<const std::vector<double>&, double>);
static_assert(!CopiesToHost<std::vector<float>&, double>);

class CopyTest : public test::BackendTest {};

TEST_F(CopyTest, RoundTripsThroughVectorsArraysAndSpansAsWritten) {
  if (IsSkipped()) {
    return;
  }
  const Stream& stream = pool_->stream();
  auto device = borrow_temporary<double>(*pool_, 4, "test.copy");
  const std::vector<double> values{1.5, -2.0, 3.25, 1e-300};
  copy_to_device(device.view(), values, stream);

  std::vector<double> from_view(4);
  copy_to_host(from_view, device.view(), stream);  // a view of T
  EXPECT_EQ(from_view, values);

  const ArrayView<const double> read_only = device.view();
  std::array<double, 4> into_array{};
  copy_to_host(into_array, read_only, stream);  // a view of const T
  EXPECT_EQ(std::vector<double>(into_array.begin(), into_array.end()), values);

  const std::array<double, 2> head{7.0, 8.0};
  copy_to_device(device.view().subview(0, 2), head, stream);
  std::vector<double> back(4);
  copy_to_host(std::span<double>(back), read_only, stream);
  EXPECT_EQ(back, (std::vector<double>{7.0, 8.0, 3.25, 1e-300}));
}

TEST_F(CopyTest, MismatchedSizesAreRefusedWithBothCounts) {
  if (IsSkipped()) {
    return;
  }
  auto device = borrow_temporary<double>(*pool_, 4, "test.copy");
  std::vector<double> three(3);
  try {
    copy_to_host(three, device.view(), pool_->stream());
    FAIL() << "a 3-element destination took 4 elements";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("destination holds 3 elements, source 4"),
              std::string::npos)
        << error.what();
  }
  try {
    copy_to_device(device.view(), three, pool_->stream());
    FAIL() << "3 elements were copied into 4";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("destination holds 4 elements, source 3"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace afem::memory
