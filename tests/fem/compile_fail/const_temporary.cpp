// Must not compile: writing through the view of a const Temporary (a const owner lends read-only
// elements).
#include "arenafem/memory/temporary.hpp"

void write_through(const afem::memory::Temporary<double>& values) {
  values.view()[0] = 1.0;
}
