// main() of the tests that run under mpirun: MPI around GoogleTest. Every rank runs every test;
// rank 0 prints the full report, the others their failures only.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "arenafem/memory/communicator.hpp"

namespace {

/// Prints a failed assertion with the rank that saw it.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (result.failed()) {
      std::fprintf(stderr, "rank %d: %s:%d: %s\n", rank_,
                   result.file_name() == nullptr ? "?" : result.file_name(), result.line_number(),
                   result.summary());
    }
  }

private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  const afem::memory::MpiSession mpi(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  const afem::memory::Communicator comm;
  if (comm.rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    // GoogleTest's listener list hands back and takes ownership as raw pointers.
    const std::unique_ptr<::testing::TestEventListener> printer(
        listeners.Release(listeners.default_result_printer()));
    listeners.Append(std::make_unique<RankFailurePrinter>(comm.rank()).release());
  }
  return RUN_ALL_TESTS();
}
