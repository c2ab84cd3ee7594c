// Must not compile: code built against the memory layer alone including a header of a layer
// above it (the build keeps memory < geometry < quadrature < fem).
#include "arenafem/geometry/grid.hpp"
