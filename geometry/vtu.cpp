#include "arenafem/geometry/vtu.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "arenafem/geometry/vtk_xml_writer.hpp"
#include "arenafem/memory/error.hpp"

namespace afem::geometry {
namespace {

/// VTK's number for each cell type (vtkCellType.h); the vertex orders agree with arenafem's.
int vtk_cell_type(CellType type) {
  switch (type) {
    case CellType::triangle:
      return 5;
    case CellType::quadrilateral:
      return 9;
    case CellType::tetrahedron:
      return 10;
    case CellType::hexahedron:
      return 12;
  }
  return 0;
}

/// Names of what an array has values for: "point" arrays have one tuple per "vertex".
struct ArrayKind {
  std::string_view kind;
  std::string_view entity;
  std::string_view entities;
};

/// Throws unless every array has a unique non-empty name (none of `names`), at least one
/// component, one tuple per entity (`entities` of them), and finite values.
void check_arrays(const std::vector<VtuArray>& arrays, std::size_t entities,
                  const ArrayKind& what_kind, std::vector<std::string> names) {
  const std::string kind(what_kind.kind);
  for (const VtuArray& array : arrays) {
    const std::string what = "write_vtu: " + kind + " array \"" + array.name + "\"";
    AFEM_EXPECTS(!array.name.empty(),
                 "write_vtu: a " + kind + " array has an empty name; expected a name");
    for (const std::string& taken : names) {
      AFEM_EXPECTS(taken != array.name,
                   what + ": the name is used twice (\"cell_tag\" is " + "taken by the cell tags)");
    }
    names.push_back(array.name);
    AFEM_EXPECTS(array.components >= 1, what + " has " + std::to_string(array.components) +
                                            " components; expected at least 1");
    const std::size_t expected = static_cast<std::size_t>(array.components) * entities;
    AFEM_EXPECTS(array.values.size() == expected,
                 what + " has " + std::to_string(array.values.size()) + " values; expected " +
                     std::to_string(array.components) + " per " + std::string(what_kind.entity) +
                     " x " + std::to_string(entities) + " " + std::string(what_kind.entities) +
                     " = " + std::to_string(expected));
    for (std::size_t i = 0; i < array.values.size(); ++i) {
      AFEM_EXPECTS(std::isfinite(array.values[i]),
                   what + ": value " + std::to_string(i) + " is not finite");
    }
  }
}

}  // namespace

void write_vtu(const std::filesystem::path& file, const MeshData& mesh,
               const std::vector<VtuArray>& point_data, const std::vector<VtuArray>& cell_data,
               VtkEncoding encoding) {
  check_consistent(mesh, "write_vtu");
  const auto dim = static_cast<std::size_t>(dimension(mesh.cell_type));
  const auto corners = static_cast<std::size_t>(vertex_count(mesh.cell_type));
  const auto vertices = static_cast<std::size_t>(mesh.vertex_total());
  const auto cells = static_cast<std::size_t>(mesh.cell_total());
  check_arrays(point_data, vertices, {"point", "vertex", "vertices"}, {});
  check_arrays(cell_data, cells, {"cell", "cell", "cells"}, {"cell_tag"});

  const auto float_array = [](VtkXmlWriter& writer, const VtuArray& array) {
    writer.data_array(array.name, array.components, std::span<const double>(array.values),
                      static_cast<std::size_t>(array.components));
  };
  VtkXmlWriter writer(encoding);
  writer.begin("UnstructuredGrid");
  writer.text("  <UnstructuredGrid>\n    <Piece NumberOfPoints=\"" + std::to_string(vertices) +
              "\" NumberOfCells=\"" + std::to_string(cells) + "\">\n      <PointData>\n");
  for (const VtuArray& array : point_data) {
    float_array(writer, array);
  }
  writer.text("      </PointData>\n      <CellData>\n");
  const std::vector<std::int32_t> zeros(mesh.cell_tags.empty() ? cells : 0, 0);
  writer.data_array("cell_tag", 1,
                    std::span<const std::int32_t>(mesh.cell_tags.empty() ? zeros : mesh.cell_tags),
                    16);
  for (const VtuArray& array : cell_data) {
    float_array(writer, array);
  }
  writer.text("      </CellData>\n      <Points>\n");
  std::vector<double> points(vertices * 3, 0.0);
  for (std::size_t v = 0; v < vertices; ++v) {
    for (std::size_t axis = 0; axis < dim; ++axis) {
      points[v * 3 + axis] = mesh.positions[v * dim + axis];
    }
  }
  writer.data_array("", 3, std::span<const double>(points), 3);
  writer.text("      </Points>\n      <Cells>\n");
  writer.data_array("connectivity", 1, std::span<const std::int32_t>(mesh.cells), corners);
  std::vector<std::int64_t> offsets(cells);
  for (std::size_t c = 0; c < cells; ++c) {
    offsets[c] = static_cast<std::int64_t>((c + 1) * corners);
  }
  writer.data_array("offsets", 1, std::span<const std::int64_t>(offsets), 16);
  const std::vector<std::uint8_t> types(cells,
                                        static_cast<std::uint8_t>(vtk_cell_type(mesh.cell_type)));
  writer.data_array("types", 1, std::span<const std::uint8_t>(types), 32);
  writer.text("      </Cells>\n    </Piece>\n  </UnstructuredGrid>\n");
  writer.write(file, "write_vtu");
}

}  // namespace afem::geometry
