#include "geometry/vtu.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string_view>

#include "memory/error.hpp"

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

/// `text` with the XML special characters replaced by entities, for an attribute value.
std::string xml_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
        break;
    }
  }
  return out;
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

/// Appends the shortest text that reads back as `value`.
template <typename T>
void append_number(std::string& text, T value) {
  std::array<char, 32> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  text.append(buffer.data(), result.ptr);
}

/// Appends `values` in lines of `per_line`, each line indented.
template <typename T>
void append_values(std::string& text, const std::vector<T>& values, std::size_t per_line) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    text += i % per_line == 0 ? "          " : " ";
    append_number(text, values[i]);
    if ((i + 1) % per_line == 0 || i + 1 == values.size()) {
      text += '\n';
    }
  }
}

void append_float_array(std::string& text, const VtuArray& array) {
  text += R"(        <DataArray type="Float64" Name=")" + xml_escaped(array.name) +
          R"(" NumberOfComponents=")" + std::to_string(array.components) + R"(" format="ascii">)" +
          "\n";
  append_values(text, array.values, static_cast<std::size_t>(array.components));
  text += "        </DataArray>\n";
}

}  // namespace

void write_vtu(const std::filesystem::path& file, const MeshData& mesh,
               const std::vector<VtuArray>& point_data, const std::vector<VtuArray>& cell_data) {
  check_consistent(mesh, "write_vtu");
  const auto dim = static_cast<std::size_t>(dimension(mesh.cell_type));
  const auto corners = static_cast<std::size_t>(vertex_count(mesh.cell_type));
  const auto vertices = static_cast<std::size_t>(mesh.vertex_total());
  const auto cells = static_cast<std::size_t>(mesh.cell_total());
  check_arrays(point_data, vertices, {"point", "vertex", "vertices"}, {});
  check_arrays(cell_data, cells, {"cell", "cell", "cells"}, {"cell_tag"});

  std::string text;
  text += "<?xml version=\"1.0\"?>\n";
  text += R"(<VTKFile type="UnstructuredGrid" version="0.1" byte_order="LittleEndian">)";
  text += "\n  <UnstructuredGrid>\n";
  text += R"(    <Piece NumberOfPoints=")" + std::to_string(vertices) + R"(" NumberOfCells=")" +
          std::to_string(cells) + "\">\n";

  text += "      <PointData>\n";
  for (const VtuArray& array : point_data) {
    append_float_array(text, array);
  }
  text += "      </PointData>\n";

  text += "      <CellData>\n";
  text += R"(        <DataArray type="Int32" Name="cell_tag" format="ascii">)";
  text += '\n';
  const std::vector<std::int32_t> zeros(mesh.cell_tags.empty() ? cells : 0, 0);
  append_values(text, mesh.cell_tags.empty() ? zeros : mesh.cell_tags, 16);
  text += "        </DataArray>\n";
  for (const VtuArray& array : cell_data) {
    append_float_array(text, array);
  }
  text += "      </CellData>\n";

  text += "      <Points>\n";
  text += R"(        <DataArray type="Float64" NumberOfComponents="3" format="ascii">)";
  text += '\n';
  for (std::size_t v = 0; v < vertices; ++v) {
    text += "         ";
    for (std::size_t axis = 0; axis < 3; ++axis) {
      text += ' ';
      append_number(text, axis < dim ? mesh.positions[v * dim + axis] : 0.0);
    }
    text += '\n';
  }
  text += "        </DataArray>\n";
  text += "      </Points>\n";

  text += "      <Cells>\n";
  text += R"(        <DataArray type="Int32" Name="connectivity" format="ascii">)";
  text += '\n';
  append_values(text, mesh.cells, corners);
  text += "        </DataArray>\n";
  text += R"(        <DataArray type="Int64" Name="offsets" format="ascii">)";
  text += '\n';
  std::vector<std::int64_t> offsets(cells);
  for (std::size_t c = 0; c < cells; ++c) {
    offsets[c] = static_cast<std::int64_t>((c + 1) * corners);
  }
  append_values(text, offsets, 16);
  text += "        </DataArray>\n";
  text += R"(        <DataArray type="UInt8" Name="types" format="ascii">)";
  text += '\n';
  append_values(text, std::vector<int>(cells, vtk_cell_type(mesh.cell_type)), 32);
  text += "        </DataArray>\n";
  text += "      </Cells>\n";
  text += "    </Piece>\n  </UnstructuredGrid>\n</VTKFile>\n";

  std::ofstream out(file, std::ios::binary);
  if (!out) {
    throw Error("write_vtu: cannot open '" + file.string() + "' for writing");
  }
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.flush();
  if (!out) {
    throw Error("write_vtu: writing '" + file.string() + "' failed");
  }
}

}  // namespace afem::geometry
