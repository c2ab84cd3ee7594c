#pragma once

/// @file
/// VTK XML UnstructuredGrid (.vtu) output of MeshData with point and cell data, for ParaView.

#include <filesystem>
#include <string>
#include <vector>

#include "arenafem/geometry/mesh_data.hpp"
#include "arenafem/geometry/vtk_xml_writer.hpp"

namespace afem::geometry {

/// A named array of values per vertex or per cell: `components` values per entry, entry-major
/// (vertex 0's components, then vertex 1's, ...). Written as Float64.
struct VtuArray {
  std::string name;
  int components = 1;
  std::vector<double> values;
};

/// Writes `mesh` to `file` as a VTK XML UnstructuredGrid (format version 1.0), its arrays as
/// appended raw binary (the default) or ASCII (`encoding`).
///
/// Points always have 3 components (z = 0 for 2D meshes); cells are written with their vertex
/// order unchanged (arenafem's order is VTK's) and VTK cell types triangle 5, quad 9, tetra 10,
/// hexahedron 12. The cell tags are written as the Int32 cell array "cell_tag" (zeros when the
/// mesh has none), before `cell_data`; `point_data` and `cell_data` follow as Float64 arrays.
/// Throws afem::Error, before the file is opened, when the mesh is inconsistent, when an array
/// has no name, a repeated name (also "cell_tag" among the cell data), fewer than 1 component,
/// or not components x (vertex or cell count) values (the message names the array), or when a
/// value is not finite; and, naming the path, when the file cannot be opened or written.
void write_vtu(const std::filesystem::path& file, const MeshData& mesh,
               const std::vector<VtuArray>& point_data = {},
               const std::vector<VtuArray>& cell_data = {},
               VtkEncoding encoding = VtkEncoding::binary);

}  // namespace afem::geometry
