#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/vtu.hpp"
#include "arenafem/memory/error.hpp"
#include "support/temp_file.hpp"
#include "support/vtk_xml.hpp"

namespace afem::geometry {
namespace {

using test::data_array_tag;
using test::data_array_values;
using test::occurrences;
using test::read_all;
using test::TempFile;
using test::values_after;
using test::words;

class WriteVtuIn : public ::testing::TestWithParam<VtkEncoding> {};

TEST_P(WriteVtuIn, WritesAQuadMeshWithPointAndCellData) {
  const VtkEncoding encoding = GetParam();
  MeshData mesh = box_mesh(CellType::quadrilateral, {2, 1, 0}, {0, 0, 0}, {2, 1, 0});
  mesh.cell_tags = {4, -1};
  const VtuArray velocity{"velocity", 2, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11.5}};
  const VtuArray pressure{"pressure", 1, {0.25, -1e-300}};
  const TempFile file("quads", ".vtu");
  write_vtu(file.path(), mesh, {velocity}, {pressure}, encoding);
  const std::string xml = read_all(file.path());

  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\"?>", 0), 0U) << xml;
  EXPECT_NE(xml.find(R"(<VTKFile type="UnstructuredGrid" version="1.0" byte_order="LittleEndian" )"
                     R"(header_type="UInt64">)"),
            std::string::npos);
  EXPECT_NE(xml.find(R"(<Piece NumberOfPoints="6" NumberOfCells="2">)"), std::string::npos);
  if (encoding == VtkEncoding::ascii) {
    EXPECT_EQ(occurrences(xml, "<DataArray"), occurrences(xml, "</DataArray>"));
    EXPECT_EQ(occurrences(xml, "<AppendedData"), 0U);
  } else {
    // Every array is an empty element pointing into the one appended section.
    EXPECT_EQ(occurrences(xml, "<DataArray"), 7U);
    EXPECT_EQ(occurrences(xml, R"(format="appended")"), 7U);
    EXPECT_EQ(occurrences(xml, "</DataArray>"), 0U);
    EXPECT_EQ(occurrences(xml, R"(<AppendedData encoding="raw">)"), 1U);
    EXPECT_LT(xml.find("</UnstructuredGrid>"), xml.find("<AppendedData"));
    EXPECT_LT(xml.rfind("</AppendedData>"), xml.rfind("</VTKFile>"));
  }
  for (const char* element :
       {"VTKFile", "UnstructuredGrid", "Piece", "PointData", "CellData", "Points", "Cells"}) {
    EXPECT_EQ(occurrences(xml, std::string("<") + element + ">") +
                  occurrences(xml, std::string("<") + element + " "),
              1U)
        << element;
    EXPECT_EQ(occurrences(xml, std::string("</") + element + ">"), 1U) << element;
  }

  EXPECT_EQ(data_array_values(xml, "connectivity"), words("0 1 4 3 1 2 5 4"));
  EXPECT_EQ(data_array_values(xml, "offsets"), words("4 8"));
  EXPECT_EQ(data_array_values(xml, "types"), words("9 9"));
  EXPECT_EQ(data_array_values(xml, "cell_tag"), words("4 -1"));
  EXPECT_NE(data_array_tag(xml, "cell_tag").find(R"(type="Int32")"), std::string::npos);
  EXPECT_NE(data_array_tag(xml, "velocity").find(R"(NumberOfComponents="2")"), std::string::npos);
  EXPECT_EQ(data_array_values(xml, "velocity"), words("0 1 2 3 4 5 6 7 8 9 10 11.5"));
  EXPECT_NE(data_array_tag(xml, "pressure").find(R"(NumberOfComponents="1")"), std::string::npos);
  EXPECT_EQ(data_array_values(xml, "pressure"), words("0.25 -1e-300"));
  // Point data inside <PointData>, cell data inside <CellData>.
  EXPECT_LT(xml.find("<PointData>"), xml.find("Name=\"velocity\""));
  EXPECT_LT(xml.find("Name=\"velocity\""), xml.find("</PointData>"));
  EXPECT_LT(xml.find("<CellData>"), xml.find("Name=\"pressure\""));
  EXPECT_LT(xml.find("Name=\"pressure\""), xml.find("</CellData>"));

  // Points: 3 components, z = 0 in 2D.
  const std::size_t points = xml.find("<Points>");
  ASSERT_NE(points, std::string::npos);
  const std::size_t points_array = xml.find("<DataArray", points);
  EXPECT_NE(xml.substr(points_array, 80).find(R"(NumberOfComponents="3")"), std::string::npos);
  EXPECT_EQ(values_after(xml, points_array), words("0 0 0 1 0 0 2 0 0 0 1 0 1 1 0 2 1 0"));
}

INSTANTIATE_TEST_SUITE_P(Encodings, WriteVtuIn,
                         ::testing::Values(VtkEncoding::binary, VtkEncoding::ascii),
                         [](const auto& param_info) {
                           return param_info.param == VtkEncoding::binary ? "binary" : "ascii";
                         });

TEST(WriteVtu, BinaryIsTheDefaultAndHoldsExactlyWhatAsciiHoldsInFewerBytes) {
  const MeshData mesh = box_mesh(CellType::hexahedron, {20, 20, 20}, {0, 0, 0}, {1, 1, 1});
  const auto vertices = static_cast<std::size_t>(mesh.vertex_total());
  VtuArray field{"field", 3, std::vector<double>(3 * vertices)};
  for (std::size_t i = 0; i < field.values.size(); ++i) {
    field.values[i] = std::sin(0.37 * static_cast<double>(i)) / 3.0;
  }
  const TempFile binary("big_binary", ".vtu");
  const TempFile ascii("big_ascii", ".vtu");
  write_vtu(binary.path(), mesh, {field});
  write_vtu(ascii.path(), mesh, {field}, {}, VtkEncoding::ascii);
  const std::string binary_xml = read_all(binary.path());
  const std::string ascii_xml = read_all(ascii.path());
  EXPECT_NE(data_array_tag(binary_xml, "field").find(R"(format="appended")"), std::string::npos);
  for (const char* name : {"field", "connectivity", "offsets", "types", "cell_tag"}) {
    const std::vector<std::string> values = data_array_values(binary_xml, name);
    EXPECT_FALSE(values.empty()) << name;
    EXPECT_EQ(values, data_array_values(ascii_xml, name)) << name;
  }
  EXPECT_EQ(test::data_array_numbers(binary_xml, "field"), field.values);  // bit for bit
  const auto points = [](const std::string& xml) {
    return values_after(xml, xml.find("<DataArray", xml.find("<Points>")));
  };
  EXPECT_EQ(points(binary_xml).size(), 3 * vertices);
  EXPECT_EQ(points(binary_xml), points(ascii_xml));
  // 8 bytes a value against 20 characters or so for full-precision values, less for the
  // short integers of the connectivity: 0.59 of ASCII's size here.
  EXPECT_LT(4 * binary_xml.size(), 3 * ascii_xml.size())
      << binary_xml.size() << " bytes binary, " << ascii_xml.size() << " ASCII";
}

TEST(WriteVtu, WritesEachCellTypesVtkNumber) {
  const std::vector<std::pair<CellType, std::string>> cases = {{CellType::triangle, "5"},
                                                               {CellType::quadrilateral, "9"},
                                                               {CellType::tetrahedron, "10"},
                                                               {CellType::hexahedron, "12"}};
  for (const auto& [type, vtk_type] : cases) {
    SCOPED_TRACE(std::string(name(type)));
    const MeshData mesh = box_mesh(type, {1, 1, 1}, {0, 0, 0}, {1, 2, 3});
    const TempFile file("types_" + std::string(name(type)), ".vtu");
    write_vtu(file.path(), mesh);
    const std::string xml = read_all(file.path());
    const auto cells = static_cast<std::size_t>(mesh.cell_total());
    EXPECT_NE(xml.find("NumberOfPoints=\"" + std::to_string(mesh.vertex_total()) +
                       "\" NumberOfCells=\"" + std::to_string(cells) + "\""),
              std::string::npos);
    EXPECT_EQ(data_array_values(xml, "types"), std::vector<std::string>(cells, vtk_type));
    std::vector<std::string> connectivity;
    for (const std::int32_t v : mesh.cells) {
      connectivity.push_back(std::to_string(v));
    }
    EXPECT_EQ(data_array_values(xml, "connectivity"), connectivity);
    const std::vector<std::string> offsets = data_array_values(xml, "offsets");
    ASSERT_EQ(offsets.size(), cells);
    EXPECT_EQ(offsets.back(), std::to_string(mesh.cells.size()));
    EXPECT_EQ(data_array_values(xml, "cell_tag"), std::vector<std::string>(cells, "0"));
  }
}

std::string write_error(const std::filesystem::path& file, const MeshData& mesh,
                        const std::vector<VtuArray>& point_data,
                        const std::vector<VtuArray>& cell_data) {
  try {
    write_vtu(file, mesh, point_data, cell_data);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(WriteVtu, RejectsBadArraysAndPathsWithoutWriting) {
  const MeshData mesh = box_mesh(CellType::triangle, {1, 1, 0}, {0, 0, 0}, {1, 1, 0});
  const TempFile file("errors", ".vtu");
  const auto expect_error = [&](const std::vector<VtuArray>& point_data,
                                const std::vector<VtuArray>& cell_data, const std::string& part) {
    const std::string message = write_error(file.path(), mesh, point_data, cell_data);
    EXPECT_NE(message.find(part), std::string::npos) << "expected '" << part << "' in: " << message;
    EXPECT_FALSE(std::filesystem::exists(file.path())) << "written despite: " << message;
  };
  expect_error({{"u", 2, {1, 2, 3}}}, {},
               "point array \"u\" has 3 values; expected 2 per vertex x 4 vertices = 8");
  expect_error({}, {{"damage", 1, {1, 2, 3}}}, "cell array \"damage\" has 3 values");
  expect_error({}, {{"cell_tag", 1, {1, 2}}}, "cell array \"cell_tag\": the name is used twice");
  expect_error({{"u", 1, {1, 2, 3, 4}}, {"u", 1, {1, 2, 3, 4}}}, {},
               "point array \"u\": the name is used twice");
  expect_error({{"u", 0, {}}}, {}, "point array \"u\" has 0 components");
  expect_error({{"", 1, {1, 2, 3, 4}}}, {}, "a point array has an empty name");
  expect_error({{"u", 1, {1, 2, std::numeric_limits<double>::infinity(), 4}}}, {},
               "point array \"u\": value 2 is not finite");
  MeshData broken = mesh;
  broken.cell_tags = {1, 2, 3};
  EXPECT_NE(write_error(file.path(), broken, {}, {}).find("cell_tags hold 3 tags"),
            std::string::npos);

  const std::filesystem::path unwritable =
      std::filesystem::temp_directory_path() / "arenafem_no_such_dir" / "out.vtu";
  const std::string message = write_error(unwritable, mesh, {}, {});
  EXPECT_NE(message.find("cannot open '" + unwritable.string() + "'"), std::string::npos)
      << message;
}

TEST(WriteVtu, EscapesArrayNames) {
  const MeshData mesh = box_mesh(CellType::triangle, {1, 1, 0}, {0, 0, 0}, {1, 1, 0});
  const TempFile file("escapes", ".vtu");
  write_vtu(file.path(), mesh, {{"a<b & \"c\"", 1, {1, 2, 3, 4}}});
  const std::string xml = read_all(file.path());
  EXPECT_NE(xml.find(R"(Name="a&lt;b &amp; &quot;c&quot;")"), std::string::npos) << xml;
}

}  // namespace
}  // namespace afem::geometry
