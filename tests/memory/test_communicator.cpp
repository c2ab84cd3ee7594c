// Communicator: sums in rank order, exchanges, and errors that stop every rank together.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "arenafem/memory/communicator.hpp"

namespace afem::memory {
namespace {

TEST(Communicator, SumsAreAddedInRankOrderAndTheSameBitsOnEveryRank) {
  const Communicator comm;
  // Terms whose sum depends on the order of addition (with 4 ranks, rank order gives 1 where
  // pairwise addition gives 0): (1 + 1e16) - 1e16 + 1, ...
  const auto term = [](int r) {
    constexpr double terms[] = {1.0, 1e16, -1e16, 1.0};
    return terms[r % 4];
  };
  double expected = 0.0;
  for (int r = 0; r < comm.size(); ++r) {
    expected += term(r);
  }
  const double total = comm.sum(term(comm.rank()));
  EXPECT_EQ(total, expected);
  // The same bits everywhere: the largest and the smallest over the ranks agree.
  EXPECT_EQ(comm.max(total), total);
  EXPECT_EQ(-comm.max(-total), total);
  EXPECT_EQ(comm.sum(std::int64_t{comm.rank()}), std::int64_t{comm.size()} * (comm.size() - 1) / 2);
  EXPECT_EQ(comm.exclusive_sum(std::int64_t{1}), comm.rank());
  EXPECT_EQ(comm.max(std::int64_t{comm.rank()}), comm.size() - 1);
}

TEST(Communicator, ExchangeDeliversEachRanksVectorToItsTarget) {
  const Communicator comm;
  std::vector<std::vector<std::int64_t>> to(static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) {
    // r + 1 values from this rank to rank r: (rank, r, 0), (rank, r, 1), ...
    for (int k = 0; k <= r; ++k) {
      to[static_cast<std::size_t>(r)].push_back(comm.rank() * 10000 + r * 100 + k);
    }
  }
  const auto from = comm.exchange(to);
  // No ASSERT between collective calls: a rank that returned early would leave the others
  // waiting.
  EXPECT_EQ(from.size(), static_cast<std::size_t>(comm.size()));
  for (std::size_t r = 0; r < from.size(); ++r) {
    const auto& got = from[r];
    EXPECT_EQ(got.size(), static_cast<std::size_t>(comm.rank()) + 1);
    for (std::size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k], static_cast<std::int64_t>(r) * 10000 + std::int64_t{comm.rank()} * 100 +
                            static_cast<std::int64_t>(k));
    }
  }
  std::vector<double> values;
  if (comm.rank() == 0) {
    values = {1.5, 2.5, 3.5};
  }
  comm.broadcast(values, 0);
  EXPECT_EQ(values, (std::vector<double>{1.5, 2.5, 3.5}));
}

TEST(Communicator, AFailureOnOneRankIsThrownOnEveryRank) {
  const Communicator comm;
  const int failing = comm.size() - 1;
  try {
    comm.collective([&] {
      if (comm.rank() == failing) {
        throw Error("cannot read 'mesh.msh'");
      }
    });
    FAIL() << "rank " << comm.rank() << " did not throw";
  } catch (const CollectiveError& error) {
    EXPECT_EQ(std::string(error.what()),
              "rank " + std::to_string(failing) + ": cannot read 'mesh.msh'");
  }
  // The lowest failing rank's message wins; the communicator stays usable.
  try {
    comm.collective([&] { throw Error("failed on rank " + std::to_string(comm.rank())); });
    FAIL();
  } catch (const CollectiveError& error) {
    EXPECT_EQ(std::string(error.what()), "rank 0: failed on rank 0");
  }
  EXPECT_NO_THROW(comm.collective([] {}));
  EXPECT_EQ(comm.sum(std::int64_t{1}), comm.size());
}

}  // namespace
}  // namespace afem::memory
