// libFuzzer entry point: the MPM programs' command line (see targets.hpp).
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)afem::test::fuzz_command_line_input(data, size);
  return 0;
}
