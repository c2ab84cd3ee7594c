// libFuzzer entry point: the Gmsh reader (see targets.hpp).
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)afem::test::fuzz_gmsh_input(data, size);
  return 0;
}
