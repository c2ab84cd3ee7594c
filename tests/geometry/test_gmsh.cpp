#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "arenafem/geometry/box_mesh.hpp"
#include "arenafem/geometry/gmsh.hpp"
#include "arenafem/memory/error.hpp"
#include "support/temp_file.hpp"

namespace afem::geometry {
namespace {

using test::TempFile;

MeshData read_text(const std::string& text) {
  std::istringstream in(text);
  return read_gmsh(in, "mesh.msh");
}

/// The message read_gmsh throws for `text`, or "no error".
std::string read_error(const std::string& text) {
  try {
    (void)read_text(text);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

/// `text` with its 1-based line `line` replaced by `replacement` (several lines, or none).
std::string replace_line(const std::string& text, int line, const std::string& replacement) {
  std::istringstream in(text);
  std::string out;
  std::string current;
  for (int n = 1; std::getline(in, current); ++n) {
    out += n == line ? replacement : current + "\n";
  }
  return out;
}

/// `text` up to and including its line `line`.
std::string first_lines(const std::string& text, int line) {
  std::istringstream in(text);
  std::string out;
  std::string current;
  for (int n = 1; n <= line && std::getline(in, current); ++n) {
    out += current + "\n";
  }
  return out;
}

// One tetrahedron, no $Entities. Line numbers matter to the tests below.
const std::string k_tetrahedron =
    "$MeshFormat\n"     // 1
    "4.1 0 8\n"         // 2
    "$EndMeshFormat\n"  // 3
    "$Nodes\n"          // 4
    "1 4 1 4\n"         // 5
    "3 1 0 4\n"         // 6
    "1\n"               // 7
    "2\n"               // 8
    "3\n"               // 9
    "4\n"               // 10
    "0 0 0\n"           // 11
    "1 0 0\n"           // 12
    "0 1 0\n"           // 13
    "0 0 1\n"           // 14
    "$EndNodes\n"       // 15
    "$Elements\n"       // 16
    "1 1 1 1\n"         // 17
    "3 1 4 1\n"         // 18
    "1 1 2 3 4\n"       // 19
    "$EndElements\n";   // 20

// Two triangles on the unit square, no $Entities; line 18 is the element block header.
const std::string k_square =
    "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n"                          // 1-3
    "$Nodes\n1 4 1 4\n2 1 0 4\n1\n2\n3\n4\n"                          // 4-10
    "0 0 0\n1 0 0\n1 1 0\n0 1 0\n$EndNodes\n"                         // 11-15
    "$Elements\n1 2 1 2\n2 1 2 2\n1 1 2 3\n2 1 3 4\n$EndElements\n";  // 16-21

void expect_error(const std::string& text, const std::vector<std::string>& parts) {
  const std::string message = read_error(text);
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "expected '" << part << "' in: " << message;
  }
}

TEST(ReadGmsh, ReadsAMinimalTetrahedron) {
  const MeshData mesh = read_text(k_tetrahedron);
  EXPECT_EQ(mesh.cell_type, CellType::tetrahedron);
  EXPECT_EQ(mesh.positions, (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(mesh.cells, (std::vector<std::int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(mesh.cell_tags, (std::vector<std::int32_t>{0}));
  EXPECT_TRUE(mesh.tag_names.empty());
  const MeshData square = read_text(k_square);
  EXPECT_EQ(square.cell_type, CellType::triangle);
  EXPECT_EQ(square.positions, (std::vector<double>{0, 0, 1, 0, 1, 1, 0, 1}));
  EXPECT_EQ(square.cells, (std::vector<std::int32_t>{0, 1, 2, 0, 2, 3}));
}

TEST(ReadGmsh, RejectsOtherVersionsAndBinaryFiles) {
  expect_error(replace_line(k_tetrahedron, 2, "2.2 0 8\n"),
               {"mesh.msh:2:", "expected MSH format version 4.1, found '2.2'"});
  expect_error(replace_line(k_tetrahedron, 2, "4.1 1 8\n"),
               {"mesh.msh:2:", "expected file-type 0 (ASCII), found 1", "binary"});
  expect_error(replace_line(k_tetrahedron, 1, "$Nodes\n"),
               {"mesh.msh:1:", "expected $MeshFormat first"});
  expect_error("", {"mesh.msh:1:", "unexpected end of file, expected $MeshFormat"});
}

TEST(ReadGmsh, RejectsMissingEndsAndTruncatedFiles) {
  expect_error(replace_line(k_tetrahedron, 15, ""),
               {"mesh.msh:15:", "expected $EndNodes, found '$Elements'"});
  expect_error(first_lines(k_tetrahedron, 12),
               {"mesh.msh:13:", "unexpected end of file, expected node coordinates"});
  expect_error(first_lines(k_tetrahedron, 19),
               {"mesh.msh:20:", "unexpected end of file, expected $EndElements"});
  expect_error(first_lines(k_tetrahedron, 15),
               {"mesh.msh:16:", "unexpected end of file, expected an $Elements section"});
  expect_error(k_tetrahedron + "$NodeData\n1\n",
               {"mesh.msh:23:", "expected $EndNodeData", "starts at line 21"});
}

TEST(ReadGmsh, RejectsSectionsOutOfOrderOrRepeated) {
  expect_error(k_tetrahedron + "$Entities\n0 0 0 0\n$EndEntities\n",
               {"mesh.msh:21:", "expected $Entities before $Elements"});
  expect_error(replace_line(k_tetrahedron, 4, "$Elements\n1 0 0 0\n$EndElements\n$Nodes\n"),
               {"mesh.msh:4:", "expected $Nodes before $Elements"});
  expect_error(k_tetrahedron + "$Nodes\n0 0 0 0\n$EndNodes\n",
               {"mesh.msh:21:", "second $Nodes section"});
  expect_error(k_tetrahedron + "$EndNodes\n", {"mesh.msh:21:", "unexpected $EndNodes outside"});
  expect_error(k_tetrahedron + "Nodes\n",
               {"mesh.msh:21:", "expected a section such as $Nodes or $Elements, found 'Nodes'"});
}

TEST(ReadGmsh, RejectsNonNumericAndNegativeTokens) {
  expect_error(replace_line(k_tetrahedron, 12, "1 x 0\n"),
               {"mesh.msh:12:", "expected a coordinate (a finite number), found 'x'"});
  expect_error(replace_line(k_tetrahedron, 19, "1 1 2 3 four\n"),
               {"mesh.msh:19:", "expected node tag (an integer), found 'four'"});
  expect_error(replace_line(k_tetrahedron, 5, "-1 4 1 4\n"),
               {"mesh.msh:5:", "expected a non-negative number of entity blocks, found -1"});
  expect_error(replace_line(k_tetrahedron, 18, "3 1 4 -2\n"),
               {"mesh.msh:18:", "non-negative number of elements in the block, found -2"});
  expect_error(replace_line(k_tetrahedron, 12, "1 0\n"),
               {"mesh.msh:12:", "expected 3 values (x, y, z), found 2"});
}

TEST(ReadGmsh, RejectsBadElements) {
  expect_error(replace_line(k_tetrahedron, 19, "1 1 2 9 4\n"),
               {"mesh.msh:19:", "element 1 refers to node tag 9, which $Nodes does not list"});
  expect_error(replace_line(k_tetrahedron, 19, "1 1 2 3\n"),
               {"mesh.msh:19:",
                "expected 4 node tags for an element of type 4 (4-node tetrahedron), found 3"});
  expect_error(replace_line(k_tetrahedron, 8, "1\n"), {"mesh.msh:8:", "node tag 1 appears twice"});
  expect_error(replace_line(k_tetrahedron, 17, "1 2 1 1\n"),
               {"mesh.msh:17:", "announces 2 elements, its blocks hold 1"});
}

TEST(ReadGmsh, RejectsUnsupportedTypesInTheTopDimension) {
  // A 6-node triangle block: the only 2D elements.
  std::string text = replace_line(k_square, 17, "1 1 1 1\n");
  text = replace_line(text, 18, "2 1 9 1\n");
  text = replace_line(text, 19, "1 1 2 3 1 2 3\n");
  text = replace_line(text, 20, "");
  expect_error(
      text, {"mesh.msh:18:", "element type 9 (6-node triangle) is not supported", "dimension 2"});
  // Lines (type 1) and points (type 15) alone: nothing to keep.
  text = replace_line(k_square, 17, "2 2 1 2\n");
  text = replace_line(text, 18, "1 1 1 1\n");
  text = replace_line(text, 19, "1 1 2\n");
  text = replace_line(text, 20, "0 1 15 1\n2 3\n");
  expect_error(text, {"mesh.msh:17:", "expected triangles, quadrangles, tetrahedra or hexahedra",
                      "dimension 1 only"});
}

TEST(ReadGmsh, RejectsMixedCellTypes) {
  std::string text = replace_line(k_square, 17, "2 2 1 2\n");
  text = replace_line(text, 18, "2 1 2 1\n");
  text = replace_line(text, 20, "2 1 3 1\n2 1 2 3 4\n");
  expect_error(text, {"mesh.msh:20:", "mixed cell types in dimension 2",
                      "quadrilateral (Gmsh type 3 (4-node quadrangle)) here",
                      "triangle (Gmsh type 2 (3-node triangle)) at line 18"});
}

TEST(ReadGmsh, SkipsUnknownSections) {
  const std::string text = replace_line(k_tetrahedron, 3,
                                        "$EndMeshFormat\n$Comments\nanything $Nodes\n"
                                        "$EndComments\n") +
                           "$Periodic\n0\n$EndPeriodic\n$NodeData\n1\n\"u\"\n$EndNodeData\n";
  const MeshData mesh = read_text(text);
  EXPECT_EQ(mesh.cell_total(), 1);
}

// A realistic Gmsh 4.1 file: two physical surfaces (10 "left half", 20 "right"), a physical
// curve (1 "bottom") carrying a block of line elements, a point element, sparse node tags, a
// parametric node block, an unused node (tag 99) and node data after the elements.
const std::string k_two_surfaces =
    "$MeshFormat\n"
    "4.1 0 8\n"
    "$EndMeshFormat\n"
    "$PhysicalNames\n"
    "3\n"
    "1 1 \"bottom\"\n"
    "2 10 \"left half\"\n"
    "2 20 \"right\"\n"
    "$EndPhysicalNames\n"
    "$Entities\n"
    "3 1 2 0\n"
    "1 0 0 0 0\n"
    "2 2 0 0 0\n"
    "3 5 5 0 0\n"
    "1 0 0 0 2 0 0 1 1 2 1 -2\n"
    "1 0 0 0 1 1 0 1 10 0\n"
    "2 1 0 0 2 1 0 2 20 5 0\n"
    "$EndEntities\n"
    "$Nodes\n"
    "6 7 1 99\n"
    "0 1 0 1\n"
    "1\n"
    "0 0 0\n"
    "0 3 0 1\n"
    "99\n"
    "5 5 0\n"
    "0 2 0 1\n"
    "2\n"
    "2 0 0\n"
    "1 1 1 1\n"
    "7\n"
    "1 0 0 0.5\n"
    "2 1 0 2\n"
    "10\n"
    "42\n"
    "0 1 0\n"
    "1 1 0\n"
    "2 2 0 1\n"
    "5\n"
    "2 1 0\n"
    "$EndNodes\n"
    "$Elements\n"
    "4 7 1 107\n"
    "0 3 15 1\n"
    "100 99\n"
    "1 1 1 2\n"
    "101 1 7\n"
    "102 7 2\n"
    "2 1 2 2\n"
    "103 1 7 42\n"
    "104 1 42 10\n"
    "2 2 2 2\n"
    "105 7 2 5\n"
    "106 7 5 42\n"
    "$EndElements\n"
    "$NodeData\n"
    "1\n"
    "\"temperature\"\n"
    "1\n"
    "0.0\n"
    "3\n"
    "0\n"
    "1\n"
    "1\n"
    "1 20.5\n"
    "$EndNodeData\n";

TEST(ReadGmsh, ReadsARealisticFile) {
  const MeshData mesh = read_text(k_two_surfaces);
  EXPECT_EQ(mesh.cell_type, CellType::triangle);
  // Node tags 1, 2, 7, 10, 42, 5 in file order (99 is used by the point element only).
  EXPECT_EQ(mesh.positions, (std::vector<double>{0, 0, 2, 0, 1, 0, 0, 1, 1, 1, 2, 1}));
  EXPECT_EQ(mesh.cells, (std::vector<std::int32_t>{0, 2, 4, 0, 4, 3, 2, 1, 5, 2, 5, 4}));
  EXPECT_EQ(mesh.cell_tags, (std::vector<std::int32_t>{10, 10, 20, 20}));
  const std::vector<std::pair<std::int32_t, std::string>> names = {{10, "left half"},
                                                                   {20, "right"}};
  EXPECT_EQ(mesh.tag_names, names);
  // The lines of the physical curve 1, nodes (1, 7) and (7, 2); the point element is skipped.
  EXPECT_EQ(mesh.side_vertices, (std::vector<std::int32_t>{0, 2, 2, 1}));
  EXPECT_EQ(mesh.side_tags, (std::vector<std::int32_t>{1, 1}));
  const std::vector<std::pair<std::int32_t, std::string>> side_names = {{1, "bottom"}};
  EXPECT_EQ(mesh.side_tag_names, side_names);
}

TEST(ReadGmsh, RejectsAnElementBlockOnAnUnlistedEntity) {
  const std::string text = replace_line(k_two_surfaces, 52, "2 3 2 2\n");
  expect_error(text, {"mesh.msh:52:", "2-dimensional entity 3, which $Entities does not list"});
}

TEST(ReadGmsh, NamesTheFileThatCannotBeOpened) {
  const std::filesystem::path missing =
      std::filesystem::temp_directory_path() / "arenafem_no_such_dir" / "none.msh";
  try {
    (void)read_gmsh(missing);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(missing.string()), std::string::npos) << error.what();
  }
}

// Two quadrangles on [0, 2] x [0, 1] (physical surface 5 "plate") and line elements on three
// curves: "left" (physical 1), "right" (physical 2) and an untagged one, whose second line uses a
// node no cell uses. The lines come before the cells, as Gmsh writes them; sparse node tags.
const std::string k_plate =
    "$MeshFormat\n"                                      // 1
    "4.1 0 8\n"                                          // 2
    "$EndMeshFormat\n"                                   // 3
    "$PhysicalNames\n"                                   // 4
    "3\n"                                                // 5
    "1 2 \"right\"\n"                                    // 6
    "2 5 \"plate\"\n"                                    // 7
    "1 1 \"left\"\n"                                     // 8
    "$EndPhysicalNames\n"                                // 9
    "$Entities\n"                                        // 10
    "0 3 1 0\n"                                          // 11
    "1 0 0 0 0 1 0 1 1 0\n"                              // 12: curve 1, "left"
    "2 2 0 0 2 1 0 1 2 0\n"                              // 13: curve 2, "right"
    "3 0 0 0 2 0 0 0 0\n"                                // 14: curve 3, no physical tag
    "1 0 0 0 2 1 0 1 5 0\n"                              // 15: surface 1, "plate"
    "$EndEntities\n"                                     // 16
    "$Nodes\n"                                           // 17
    "1 7 10 70\n"                                        // 18
    "2 1 0 7\n"                                          // 19
    "10\n20\n30\n40\n50\n60\n70\n"                       // 20-26
    "0 0 0\n1 0 0\n2 0 0\n0 1 0\n1 1 0\n2 1 0\n5 5 0\n"  // 27-33
    "$EndNodes\n"                                        // 34
    "$Elements\n"                                        // 35
    "4 6 1 6\n"                                          // 36
    "1 1 1 1\n"                                          // 37: "left"
    "1 40 10\n"                                          // 38
    "1 3 1 2\n"                                          // 39: untagged
    "2 10 20\n"                                          // 40
    "3 20 70\n"                                          // 41
    "1 2 1 1\n"                                          // 42: "right"
    "4 30 60\n"                                          // 43
    "2 1 3 2\n"                                          // 44: "plate"
    "5 10 20 50 40\n"                                    // 45
    "6 20 30 60 50\n"                                    // 46
    "$EndElements\n";                                    // 47

TEST(ReadGmsh, KeepsTaggedLinesOfA2dMeshAsSides) {
  const MeshData mesh = read_text(k_plate);
  EXPECT_EQ(mesh.cell_type, CellType::quadrilateral);
  EXPECT_EQ(mesh.positions, (std::vector<double>{0, 0, 1, 0, 2, 0, 0, 1, 1, 1, 2, 1}));
  EXPECT_EQ(mesh.cells, (std::vector<std::int32_t>{0, 1, 4, 3, 1, 2, 5, 4}));
  EXPECT_EQ(mesh.cell_tags, (std::vector<std::int32_t>{5, 5}));
  const std::vector<std::pair<std::int32_t, std::string>> names = {{5, "plate"}};
  EXPECT_EQ(mesh.tag_names, names);
  // Node tags 40, 10 then 30, 60, in the file's order within each side.
  EXPECT_EQ(mesh.side_vertices, (std::vector<std::int32_t>{3, 0, 2, 5}));
  EXPECT_EQ(mesh.side_tags, (std::vector<std::int32_t>{1, 2}));
  EXPECT_EQ(mesh.side_total(), 2);
  const std::vector<std::pair<std::int32_t, std::string>> side_names = {{2, "right"}, {1, "left"}};
  EXPECT_EQ(mesh.side_tag_names, side_names);
}

TEST(ReadGmsh, SkipsUntaggedSidesOfAnyType) {
  // The untagged curve's elements as 3-node lines instead: skipped as well.
  std::string text = replace_line(k_plate, 39, "1 3 8 2\n");
  text = replace_line(text, 40, "2 10 20 30\n");
  text = replace_line(text, 41, "3 20 70 30\n");
  MeshData mesh = read_text(text);
  EXPECT_EQ(mesh.side_vertices, (std::vector<std::int32_t>{3, 0, 2, 5}));
  EXPECT_EQ(mesh.side_tags, (std::vector<std::int32_t>{1, 2}));
  // Without $Entities no element has a physical tag: no tagged sides, all cell tags 0.
  text = k_plate;
  for (int removed = 0; removed < 7; ++removed) {
    text = replace_line(text, 10, "");  // lines 10-16
  }
  mesh = read_text(text);
  EXPECT_EQ(mesh.cells, (std::vector<std::int32_t>{0, 1, 4, 3, 1, 2, 5, 4}));
  EXPECT_EQ(mesh.cell_tags, (std::vector<std::int32_t>{0, 0}));
  EXPECT_TRUE(mesh.side_vertices.empty());
  EXPECT_TRUE(mesh.side_tags.empty());
}

TEST(ReadGmsh, RejectsTaggedSidesThatDoNotFitTheCells) {
  expect_error(replace_line(k_plate, 43, "4 30 70\n"),
               {"mesh.msh:43:", "side element 4 uses node tag 70, which no cell uses"});
  std::string text = replace_line(k_plate, 42, "1 2 8 1\n");
  text = replace_line(text, 43, "4 30 60 20\n");
  expect_error(text,
               {"mesh.msh:42:", "element type 8 (3-node line)", "physical group 2",
                "quadrilateral cells", "expected type 1 (2-node line) elements as tagged sides"});
  expect_error(replace_line(k_plate, 13, "2 2 0 0 2 1 0 1 -2 0\n"),
               {"mesh.msh:42:", "physical group -2", "expected a positive physical tag"});
  expect_error(replace_line(k_plate, 37, "2 1 1 1\n"),
               {"mesh.msh:37:", "type 1 (2-node line) are 1-dimensional",
                "the block's entity is 2-dimensional"});
}

// One tetrahedron (physical volume 3 "solid") with a triangle on physical surface 7 "bottom",
// one on an untagged surface and a line on physical curve 9 "edge", below the sides' dimension.
const std::string k_tagged_tetrahedron =
    "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n"   // 1-3
    "$PhysicalNames\n3\n"                      // 4-5
    "2 7 \"bottom\"\n"                         // 6
    "3 3 \"solid\"\n"                          // 7
    "1 9 \"edge\"\n"                           // 8
    "$EndPhysicalNames\n"                      // 9
    "$Entities\n0 1 2 1\n"                     // 10-11
    "1 0 0 0 1 0 0 1 9 0\n"                    // 12: curve 1, "edge"
    "1 0 0 0 1 1 0 1 7 0\n"                    // 13: surface 1, "bottom"
    "2 0 0 0 1 0 1 0 0\n"                      // 14: surface 2, no physical tag
    "1 0 0 0 1 1 1 1 3 0\n"                    // 15: volume 1, "solid"
    "$EndEntities\n"                           // 16
    "$Nodes\n1 4 1 4\n3 1 0 4\n1\n2\n3\n4\n"   // 17-23
    "0 0 0\n1 0 0\n0 1 0\n0 0 1\n$EndNodes\n"  // 24-28
    "$Elements\n4 4 1 4\n"                     // 29-30
    "1 1 1 1\n1 1 2\n"                         // 31-32
    "2 1 2 1\n2 1 3 2\n"                       // 33-34
    "2 2 2 1\n3 1 2 4\n"                       // 35-36
    "3 1 4 1\n4 1 2 3 4\n"                     // 37-38
    "$EndElements\n";                          // 39

TEST(ReadGmsh, KeepsTaggedTrianglesOfATetrahedronMeshAsSides) {
  const MeshData mesh = read_text(k_tagged_tetrahedron);
  EXPECT_EQ(mesh.cell_type, CellType::tetrahedron);
  EXPECT_EQ(mesh.cells, (std::vector<std::int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(mesh.cell_tags, (std::vector<std::int32_t>{3}));
  const std::vector<std::pair<std::int32_t, std::string>> names = {{3, "solid"}};
  EXPECT_EQ(mesh.tag_names, names);
  EXPECT_EQ(mesh.side_vertices, (std::vector<std::int32_t>{0, 2, 1}));
  EXPECT_EQ(mesh.side_tags, (std::vector<std::int32_t>{7}));
  const std::vector<std::pair<std::int32_t, std::string>> side_names = {{7, "bottom"}};
  EXPECT_EQ(mesh.side_tag_names, side_names);
  // A quadrangle on the untagged surface is skipped; on the tagged one it is an error.
  std::string text = replace_line(k_tagged_tetrahedron, 35, "2 2 3 1\n");
  text = replace_line(text, 36, "3 1 2 4 3\n");
  EXPECT_EQ(read_text(text).side_vertices, (std::vector<std::int32_t>{0, 2, 1}));
  text = replace_line(k_tagged_tetrahedron, 33, "2 1 3 1\n");
  text = replace_line(text, 34, "2 1 2 4 3\n");
  expect_error(
      text, {"mesh.msh:33:", "element type 3 (4-node quadrangle)", "2-dimensional physical group 7",
             "tetrahedron cells", "expected type 2 (3-node triangle) elements as tagged sides"});
}

MeshData tagged_box(CellType type) {
  MeshData mesh = box_mesh(type, {3, 2, 2}, {-1.0, 0.1, 0.3}, {2.0, 1.7, 1.0});
  const auto cells = static_cast<std::size_t>(mesh.cell_total());
  mesh.cell_tags.resize(cells);
  for (std::size_t c = 0; c < cells; ++c) {
    // Runs of equal tags, a tag 0 run and a repeated tag, so blocks and entities both vary.
    mesh.cell_tags[c] = c < cells / 3 ? 7 : c < cells / 2 ? 0 : c % 3 == 0 ? 3 : 7;
  }
  mesh.tag_names = {{3, "inner"}, {7, "outer region"}};
  // Side tags in runs of various lengths, out of ascending order, and a name for one more tag.
  const auto sides = static_cast<std::size_t>(mesh.side_total());
  for (std::size_t s = 0; s < sides; s += 3) {
    mesh.side_tags[s] = 9;
  }
  mesh.side_tag_names.emplace_back(9, "every third side");
  return mesh;
}

/// Expects `back` to hold the tagged sides of `mesh`, in the same order.
void expect_same_sides(const MeshData& back, const MeshData& mesh) {
  EXPECT_EQ(back.side_vertices, mesh.side_vertices);
  EXPECT_EQ(back.side_tags, mesh.side_tags);
  EXPECT_EQ(back.side_tag_names, mesh.side_tag_names);
}

TEST(WriteGmsh, RoundTripsEveryCellTypeThroughAFile) {
  for (const CellType type :
       {CellType::triangle, CellType::quadrilateral, CellType::tetrahedron, CellType::hexahedron}) {
    SCOPED_TRACE(std::string(name(type)));
    const MeshData mesh = tagged_box(type);
    const TempFile file("round_trip_" + std::string(name(type)));
    write_gmsh(mesh, file.path());
    const MeshData back = read_gmsh(file.path());
    EXPECT_EQ(back.cell_type, mesh.cell_type);
    ASSERT_EQ(back.positions.size(), mesh.positions.size());
    for (std::size_t i = 0; i < mesh.positions.size(); ++i) {
      EXPECT_NEAR(back.positions[i], mesh.positions[i], 1e-12) << "value " << i;
    }
    EXPECT_EQ(back.cells, mesh.cells);
    EXPECT_EQ(back.cell_tags, mesh.cell_tags);
    EXPECT_EQ(back.tag_names, mesh.tag_names);
    ASSERT_GT(mesh.side_total(), 0);
    expect_same_sides(back, mesh);
  }
}

TEST(WriteGmsh, RoundTripsTheTaggedSidesOfBoxMeshes) {
  for (const CellType type :
       {CellType::triangle, CellType::quadrilateral, CellType::tetrahedron, CellType::hexahedron}) {
    SCOPED_TRACE(std::string(name(type)));
    const MeshData mesh = box_mesh(type, {3, 2, 2}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0});
    std::ostringstream out;
    write_gmsh(mesh, out);
    const MeshData back = read_text(out.str());
    EXPECT_EQ(back.cells, mesh.cells);
    ASSERT_EQ(mesh.side_tag_names, box_side_tag_names(dimension(type)));
    expect_same_sides(back, mesh);
    // Entity counts (points, curves, surfaces, volumes): one per side tag one dimension below
    // the single cell entity.
    const std::string text = out.str();
    const std::size_t at = text.find("$Entities\n");
    ASSERT_NE(at, std::string::npos);
    const std::string counts = text.substr(at + 10, text.find('\n', at + 10) - at - 10);
    EXPECT_EQ(counts, dimension(type) == 2 ? "0 4 1 0" : "0 0 6 1");
  }
}

TEST(WriteGmsh, RejectsSideTagNamesThatMshCannotStore) {
  MeshData mesh = box_mesh(CellType::quadrilateral, {1, 1, 0}, {0, 0, 0}, {1, 1, 0});
  for (const char* bad : {"say \"hi\"", "two\nlines"}) {
    mesh.side_tag_names = {{2, "fine"}, {3, bad}};
    std::ostringstream out;
    try {
      write_gmsh(mesh, out);
      ADD_FAILURE() << "no error";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("the name of side tag 3 contains a double quote"),
                std::string::npos)
          << error.what();
    }
    EXPECT_TRUE(out.str().empty());
  }
  mesh.side_tag_names = {{2, "fine"}};
  mesh.side_tags[0] = 0;
  std::ostringstream out;
  EXPECT_THROW(write_gmsh(mesh, out), Error);
  EXPECT_TRUE(out.str().empty());
}

TEST(WriteGmsh, UntaggedMeshesReadBackWithZeroTags) {
  const MeshData mesh = box_mesh(CellType::quadrilateral, {2, 2, 0}, {0, 0, 0}, {1, 1, 0});
  std::ostringstream out;
  write_gmsh(mesh, out);
  const MeshData back = read_text(out.str());
  EXPECT_EQ(back.cells, mesh.cells);
  EXPECT_EQ(back.positions, mesh.positions);
  EXPECT_EQ(back.cell_tags, std::vector<std::int32_t>(4, 0));
  EXPECT_TRUE(back.tag_names.empty());
}

TEST(WriteGmsh, RejectsInconsistentMeshesBeforeWriting) {
  MeshData mesh = box_mesh(CellType::triangle, {1, 1, 0}, {0, 0, 0}, {1, 1, 0});
  mesh.cells[3] = 4;
  std::ostringstream out;
  try {
    write_gmsh(mesh, out);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("cell 1 refers to vertex 4"), std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(out.str().empty());
  mesh.cells[3] = 0;
  mesh.cell_tags = {1};
  EXPECT_THROW(write_gmsh(mesh, out), Error);
  mesh.cell_tags = {1, 2};
  mesh.tag_names = {{1, "say \"hi\""}};
  EXPECT_THROW(write_gmsh(mesh, out), Error);
  mesh.tag_names.clear();
  const std::filesystem::path unwritable =
      std::filesystem::temp_directory_path() / "arenafem_no_such_dir" / "out.msh";
  try {
    write_gmsh(mesh, unwritable);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(unwritable.string()), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace afem::geometry
