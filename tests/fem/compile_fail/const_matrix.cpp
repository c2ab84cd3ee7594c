// Must not compile: writing the values of a const BsrMatrix through its view.
#include "arenafem/fem/bsr_matrix.hpp"

void write_through(const afem::fem::BsrMatrix<1>& matrix) {
  matrix.view().values[0] = 1.0;
}
