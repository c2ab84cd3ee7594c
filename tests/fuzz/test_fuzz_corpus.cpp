// The fuzz targets' corpus replayed in the ordinary test build (and under the sanitizers): every
// seed is accepted, every input named refuse_* is refused with afem::Error, and none crashes.
// Inputs the fuzzers found that once failed are kept here as refuse_* regressions.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "targets.hpp"

namespace afem::test {
namespace {

using Target = bool (*)(const std::uint8_t*, std::size_t);

void replay(const std::string& name, Target target) {
  const std::filesystem::path folder = std::filesystem::path(AFEM_FUZZ_CORPUS) / name;
  int inputs = 0;
  for (const auto& file : std::filesystem::directory_iterator(folder)) {
    std::ifstream in(file.path(), std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    const bool accepted = target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    const bool refuse = file.path().filename().string().rfind("refuse_", 0) == 0;
    EXPECT_EQ(accepted, !refuse) << file.path();
    ++inputs;
  }
  EXPECT_GE(inputs, 3) << folder;
}

TEST(FuzzCorpus, GmshInputsAreAcceptedOrRefusedAsNamed) {
  replay("gmsh", fuzz_gmsh_input);
}

TEST(FuzzCorpus, CommandLinesAreAcceptedOrRefusedAsNamed) {
  replay("command_line", fuzz_command_line_input);
}

}  // namespace
}  // namespace afem::test
