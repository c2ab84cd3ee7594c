// Must not compile: the first moment of a field whose space is not on a grid (value_and_moment
// sums node offsets in reference units, which only a grid's cells map by a constant diagonal).
#include "arenafem/fem/field.hpp"
#include "arenafem/fem/space.hpp"
#include "arenafem/geometry/mesh.hpp"

using Field =
    afem::fem::DiscreteFieldView<afem::fem::LagrangeSpace<afem::geometry::Trimesh, 1>::View>;

template afem::fem::ValueAndMoment<2, 1> Field::value_and_moment(
    const afem::fem::Sample<2>& s) const;
