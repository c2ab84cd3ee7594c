#include "arenafem/geometry/gmsh.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <istream>
#include <limits>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arenafem/memory/error.hpp"

namespace afem::geometry {
namespace {

constexpr std::int64_t k_index_limit = std::numeric_limits<std::int32_t>::max();

/// What Gmsh calls its element types, for messages ("type 9 (6-node triangle)").
std::string gmsh_type_name(std::int64_t type) {
  static constexpr std::array<std::string_view, 20> k_names = {"",
                                                               "2-node line",
                                                               "3-node triangle",
                                                               "4-node quadrangle",
                                                               "4-node tetrahedron",
                                                               "8-node hexahedron",
                                                               "6-node prism",
                                                               "5-node pyramid",
                                                               "3-node line",
                                                               "6-node triangle",
                                                               "9-node quadrangle",
                                                               "10-node tetrahedron",
                                                               "27-node hexahedron",
                                                               "18-node prism",
                                                               "14-node pyramid",
                                                               "1-node point",
                                                               "8-node quadrangle",
                                                               "20-node hexahedron",
                                                               "15-node prism",
                                                               "13-node pyramid"};
  std::string text = "type " + std::to_string(type);
  if (type > 0 && type < static_cast<std::int64_t>(k_names.size())) {
    text += " (" + std::string(k_names[static_cast<std::size_t>(type)]) + ")";
  }
  return text;
}

/// The cell type of a Gmsh element type that arenafem keeps, if it is one. Gmsh orders the
/// vertices of these four types as arenafem does (counterclockwise faces; a hexahedron's bottom
/// face, then its top face), so connectivity is taken over without permutation.
std::optional<CellType> supported_cell_type(std::int64_t gmsh_type) {
  switch (gmsh_type) {
    case 2:
      return CellType::triangle;
    case 3:
      return CellType::quadrilateral;
    case 4:
      return CellType::tetrahedron;
    case 5:
      return CellType::hexahedron;
    default:
      return std::nullopt;
  }
}

std::int64_t gmsh_type_of(CellType type) {
  switch (type) {
    case CellType::triangle:
      return 2;
    case CellType::quadrilateral:
      return 3;
    case CellType::tetrahedron:
      return 4;
    case CellType::hexahedron:
      return 5;
  }
  return 0;
}

/// The Gmsh type of the sides of a cell type: 2-node lines for triangles and quadrangles, 3-node
/// triangles for tetrahedra, 4-node quadrangles for hexahedra.
std::int64_t gmsh_side_type_of(CellType type) {
  switch (type) {
    case CellType::triangle:
    case CellType::quadrilateral:
      return 1;
    case CellType::tetrahedron:
      return 2;
    case CellType::hexahedron:
      return 3;
  }
  return 0;
}

/// Nodes per element and dimension of a Gmsh element type that read_gmsh may keep.
struct KeptType {
  std::size_t nodes = 0;
  int dim = 0;
};

/// The Gmsh types read_gmsh may keep, as cells or as tagged sides: 2-node lines (type 1) and the
/// four cell types (types 2 to 5); nullopt for the others.
std::optional<KeptType> kept_type(std::int64_t gmsh_type) {
  switch (gmsh_type) {
    case 1:
      return KeptType{2, 1};
    case 2:
      return KeptType{3, 2};
    case 3:
      return KeptType{4, 2};
    case 4:
      return KeptType{4, 3};
    case 5:
      return KeptType{8, 3};
    default:
      return std::nullopt;
  }
}

/// The highest Gmsh type that kept_type accepts.
constexpr std::size_t k_last_kept_type = 5;

/// The Gmsh types whose elements may be tagged sides (lines, triangles, quadrangles).
constexpr std::int64_t k_last_side_type = 3;

/// Reads an input line by line, splits each line into whitespace-separated tokens, and prefixes
/// every error with "source:line: ".
class LineReader {
public:
  LineReader(std::istream& in, std::string_view source) : in_(in), source_(source) {}

  /// Moves to the next line that is not blank; false at the end of the input.
  bool advance() {
    while (std::getline(in_, line_)) {
      ++line_number_;
      split();
      if (!tokens_.empty()) {
        return true;
      }
    }
    if (in_.bad()) {
      fail_after_end("read error");
    }
    tokens_.clear();
    return false;
  }

  /// Moves to the next line that is not blank, or throws "unexpected end of file, expected ...".
  void require(std::string_view expected) {
    if (!advance()) {
      fail_after_end("unexpected end of file, expected " + std::string(expected));
    }
  }

  [[nodiscard]] std::int64_t line_number() const { return line_number_; }
  [[nodiscard]] std::size_t size() const { return tokens_.size(); }
  [[nodiscard]] std::string_view token(std::size_t i) const { return tokens_[i]; }

  /// The current line without surrounding blanks, shortened for messages.
  [[nodiscard]] std::string quoted_line() const {
    const std::string_view first = tokens_.front();
    const std::string_view last = tokens_.back();
    std::string_view text(first.data(),
                          static_cast<std::size_t>(last.data() + last.size() - first.data()));
    constexpr std::size_t k_shown = 60;
    std::string shown(text.substr(0, k_shown));
    if (text.size() > k_shown) {
      shown += "...";
    }
    return "'" + shown + "'";
  }

  /// Whether the current line is exactly the one token `word`.
  [[nodiscard]] bool is(std::string_view word) const {
    return tokens_.size() == 1 && tokens_[0] == word;
  }

  /// Throws afem::Error "source:line: what" for the current line.
  [[noreturn]] void fail(const std::string& what) const { fail_at(line_number_, what); }

  /// Throws afem::Error "source:line: what" for the given line.
  [[noreturn]] void fail_at(std::int64_t line, const std::string& what) const {
    throw Error(source_ + ":" + std::to_string(line) + ": " + what);
  }

  /// Throws for the line after the last one read (the end of the input).
  [[noreturn]] void fail_after_end(const std::string& what) const {
    fail_at(line_number_ + 1, what);
  }

  /// Throws unless the current line holds `expected` tokens (`what` describes them).
  void expect_size(std::size_t expected, std::string_view what) const {
    if (tokens_.size() != expected) {
      fail("expected " + std::to_string(expected) + " values (" + std::string(what) + "), found " +
           std::to_string(tokens_.size()) + ": " + quoted_line());
    }
  }

  /// Token i as an integer; `what` names it in the error.
  [[nodiscard]] std::int64_t integer(std::size_t i, std::string_view what) const {
    const std::string_view text = tokens_[i];
    std::int64_t value = 0;
    const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (result.ec != std::errc{} || result.ptr != text.data() + text.size()) {
      fail("expected " + std::string(what) + " (an integer), found '" + std::string(text) + "'");
    }
    return value;
  }

  /// Token i as an integer within [0, limit]; `what` names it in the error.
  [[nodiscard]] std::int64_t count(
      std::size_t i, std::string_view what,
      std::int64_t limit = std::numeric_limits<std::int64_t>::max()) const {
    const std::int64_t value = integer(i, what);
    if (value < 0) {
      fail("expected a non-negative " + std::string(what) + ", found " + std::to_string(value));
    }
    if (value > limit) {
      fail("expected " + std::string(what) + " of at most " + std::to_string(limit) + ", found " +
           std::to_string(value));
    }
    return value;
  }

  /// Token i as an int in [low, high]; `what` names it in the error.
  [[nodiscard]] int small_integer(std::size_t i, std::string_view what, int low, int high) const {
    const std::int64_t value = integer(i, what);
    if (value < low || value > high) {
      fail("expected " + std::string(what) + " between " + std::to_string(low) + " and " +
           std::to_string(high) + ", found " + std::to_string(value));
    }
    return static_cast<int>(value);
  }

  /// Token i as a 32-bit tag; `what` names it in the error.
  [[nodiscard]] std::int32_t tag(std::size_t i, std::string_view what) const {
    const std::int64_t value = integer(i, what);
    if (value < std::numeric_limits<std::int32_t>::min() ||
        value > std::numeric_limits<std::int32_t>::max()) {
      fail("expected " + std::string(what) + " within 32-bit integers, found " +
           std::to_string(value));
    }
    return static_cast<std::int32_t>(value);
  }

  /// Token i as a finite floating-point number; `what` names it in the error.
  [[nodiscard]] double real(std::size_t i, std::string_view what) const {
    const std::string_view text = tokens_[i];
    double value = 0.0;
    const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (result.ec != std::errc{} || result.ptr != text.data() + text.size() ||
        !std::isfinite(value)) {
      fail("expected " + std::string(what) + " (a finite number), found '" + std::string(text) +
           "'");
    }
    return value;
  }

private:
  void split() {
    tokens_.clear();
    const std::string_view line(line_);
    std::size_t at = 0;
    while (at < line.size()) {
      const std::size_t begin = line.find_first_not_of(" \t\r\f\v", at);
      if (begin == std::string_view::npos) {
        break;
      }
      std::size_t end = line.find_first_of(" \t\r\f\v", begin);
      if (end == std::string_view::npos) {
        end = line.size();
      }
      tokens_.push_back(line.substr(begin, end - begin));
      at = end;
    }
  }

  std::istream& in_;
  std::string source_;
  std::string line_;
  std::vector<std::string_view> tokens_;
  std::int64_t line_number_ = 0;
};

/// An element block as read, for choosing the kept dimension and checking the tagged sides once
/// all blocks are known.
struct BlockInfo {
  std::int64_t line = 0;
  int dim = 0;
  std::int64_t gmsh_type = 0;
  std::int32_t physical = 0;
};

/// The elements read of one Gmsh type that may be kept, in file order: node indices (into the
/// nodes read) and the physical tag of each element's entity; for the types that may be tagged
/// sides, also each element's tag and line, for messages.
struct ElementsRead {
  std::vector<std::int32_t> nodes;
  std::vector<std::int32_t> tags;
  std::vector<std::int64_t> element_tags;
  std::vector<std::int64_t> lines;
};

struct PhysicalName {
  int dim = 0;
  std::int32_t tag = 0;
  std::string name;
};

/// The state of one read_gmsh call: what the sections read so far hold.
class GmshReader {
public:
  GmshReader(std::istream& in, std::string_view source) : in_(in, source) {}

  MeshData read() {
    if (!in_.advance() || !in_.is("$MeshFormat")) {
      if (in_.size() == 0) {
        in_.fail_after_end("unexpected end of file, expected $MeshFormat");
      }
      in_.fail("expected $MeshFormat first, found " + in_.quoted_line());
    }
    read_mesh_format();
    while (in_.advance()) {
      const std::string_view header = in_.token(0);
      if (in_.size() != 1 || header.front() != '$') {
        in_.fail("expected a section such as $Nodes or $Elements, found " + in_.quoted_line());
      }
      if (header.starts_with("$End")) {
        in_.fail("unexpected " + std::string(header) + " outside its section");
      }
      if (header == "$MeshFormat") {
        in_.fail("second $MeshFormat section; expected one, at the start");
      } else if (header == "$PhysicalNames") {
        once(have_physical_names_, header);
        read_physical_names();
      } else if (header == "$Entities") {
        once(have_entities_, header);
        if (have_elements_) {
          in_.fail("expected $Entities before $Elements, whose tags it gives");
        }
        read_entities();
      } else if (header == "$Nodes") {
        once(have_nodes_, header);
        read_nodes();
      } else if (header == "$Elements") {
        once(have_elements_, header);
        if (!have_nodes_) {
          in_.fail("expected $Nodes before $Elements");
        }
        read_elements();
      } else {
        skip_section(header.substr(1));
      }
    }
    if (!have_nodes_) {
      in_.fail_after_end("unexpected end of file, expected a $Nodes section");
    }
    if (!have_elements_) {
      in_.fail_after_end("unexpected end of file, expected an $Elements section");
    }
    return assemble();
  }

private:
  void once(bool& seen, std::string_view header) {
    if (seen) {
      in_.fail("second " + std::string(header) + " section; expected one");
    }
    seen = true;
  }

  void expect_end(std::string_view end) {
    in_.require(end);
    if (!in_.is(end)) {
      in_.fail("expected " + std::string(end) + ", found " + in_.quoted_line());
    }
  }

  void read_mesh_format() {
    in_.require("the format line '4.1 0 8'");
    if (in_.token(0) != "4.1") {
      in_.fail("expected MSH format version 4.1, found '" + std::string(in_.token(0)) +
               "' (save with Gmsh's Mesh.MshFileVersion = 4.1)");
    }
    in_.expect_size(3, "version, file-type, data-size");
    const std::int64_t file_type = in_.integer(1, "file-type");
    if (file_type != 0) {
      in_.fail("expected file-type 0 (ASCII), found " + std::to_string(file_type) +
               (file_type == 1 ? " (binary, which read_gmsh does not read; save with Gmsh's "
                                 "Mesh.Binary = 0)"
                               : ""));
    }
    (void)in_.count(2, "data-size");
    expect_end("$EndMeshFormat");
  }

  void read_physical_names() {
    in_.require("the number of physical names");
    in_.expect_size(1, "number of physical names");
    const std::int64_t total = in_.count(0, "number of physical names");
    for (std::int64_t n = 0; n < total; ++n) {
      in_.require("a physical name: dimension, tag, \"name\"");
      if (in_.size() < 3) {
        in_.fail("expected a physical name (dimension, tag, \"name\"), found " + in_.quoted_line());
      }
      PhysicalName entry;
      entry.dim = in_.small_integer(0, "physical name dimension", 0, 3);
      entry.tag = in_.tag(1, "physical tag");
      // The name runs from the first to the last double quote and may contain blanks.
      const std::string_view rest(
          in_.token(2).data(),
          static_cast<std::size_t>(in_.token(in_.size() - 1).data() +
                                   in_.token(in_.size() - 1).size() - in_.token(2).data()));
      if (rest.size() < 2 || rest.front() != '"' || rest.back() != '"') {
        in_.fail("expected a physical name in double quotes, found " + std::string(rest));
      }
      entry.name = std::string(rest.substr(1, rest.size() - 2));
      physical_names_.push_back(std::move(entry));
    }
    expect_end("$EndPhysicalNames");
  }

  void read_entities() {
    in_.require("entity counts: points, curves, surfaces, volumes");
    in_.expect_size(4, "numbers of points, curves, surfaces, volumes");
    std::array<std::int64_t, 4> totals{};
    for (std::size_t dim = 0; dim < 4; ++dim) {
      totals[dim] = in_.count(dim, "number of entities");
    }
    constexpr std::array<std::string_view, 4> k_kinds = {"point", "curve", "surface", "volume"};
    for (std::size_t dim = 0; dim < 4; ++dim) {
      const std::string kind(k_kinds[dim]);
      for (std::int64_t n = 0; n < totals[dim]; ++n) {
        in_.require("a " + kind + " entity");
        // point: tag x y z numPhysicalTags tags...
        // others: tag minX minY minZ maxX maxY maxZ numPhysicalTags tags... numBounding tags...
        const std::size_t physical_at = dim == 0 ? 4 : 7;
        if (in_.size() < physical_at + 1) {
          in_.fail("expected a " + kind + " entity (tag, " +
                   (dim == 0 ? "x, y, z" : "bounding box") +
                   ", number of physical tags, ...), found " + in_.quoted_line());
        }
        const std::int32_t entity = in_.tag(0, kind + " tag");
        for (std::size_t i = 1; i < physical_at; ++i) {
          (void)in_.real(i, dim == 0 ? "a coordinate" : "a bounding-box coordinate");
        }
        const std::int64_t physicals = in_.count(physical_at, "number of physical tags");
        const auto first_tag = static_cast<std::size_t>(physical_at + 1);
        const auto after_tags =
            first_tag + static_cast<std::size_t>(std::min<std::int64_t>(physicals, k_index_limit));
        std::size_t expected = after_tags;
        if (dim > 0) {
          if (in_.size() < after_tags + 1) {
            in_.fail("expected " + std::to_string(physicals) +
                     " physical tag(s) and the number of bounding entities, found " +
                     in_.quoted_line());
          }
          expected += 1 + static_cast<std::size_t>(in_.count(after_tags,
                                                             "number of bounding "
                                                             "entities",
                                                             k_index_limit));
        }
        in_.expect_size(expected,
                        kind + " entity with " + std::to_string(physicals) + " physical tags");
        for (std::size_t i = first_tag; i < expected; ++i) {
          (void)in_.tag(i, i < after_tags ? "physical tag" : "bounding entity tag");
        }
        const std::int32_t physical =
            physicals > 0 ? in_.tag(first_tag, "physical tag") : std::int32_t{0};
        if (!entity_physical_[dim].emplace(entity, physical).second) {
          in_.fail(kind + " entity " + std::to_string(entity) + " is listed twice");
        }
      }
    }
    expect_end("$EndEntities");
  }

  void read_nodes() {
    in_.require("the $Nodes header: blocks, nodes, min tag, max tag");
    in_.expect_size(4, "numbers of entity blocks and nodes, min and max node tags");
    const std::int64_t blocks = in_.count(0, "number of entity blocks");
    const std::int64_t announced = in_.count(1, "number of nodes", k_index_limit);
    (void)in_.count(2, "minimum node tag");
    (void)in_.count(3, "maximum node tag");
    const std::int64_t header_line = in_.line_number();
    std::vector<std::int64_t> block_tags;
    for (std::int64_t b = 0; b < blocks; ++b) {
      in_.require("a node block header: entity dimension, entity tag, parametric, count");
      in_.expect_size(4, "entity dimension, entity tag, parametric, number of nodes");
      const int dim = in_.small_integer(0, "entity dimension", 0, 3);
      (void)in_.tag(1, "entity tag");
      const int parametric = in_.small_integer(2, "parametric flag", 0, 1);
      const std::int64_t total = in_.count(3, "number of nodes in the block", k_index_limit);
      if (node_tags_.size() + static_cast<std::size_t>(total) >
          static_cast<std::size_t>(announced)) {
        in_.fail("node blocks hold more nodes than the " + std::to_string(announced) +
                 " the $Nodes header (line " + std::to_string(header_line) + ") announces");
      }
      block_tags.clear();
      for (std::int64_t n = 0; n < total; ++n) {
        in_.require("a node tag");
        in_.expect_size(1, "a node tag");
        const std::int64_t node_tag = in_.count(0, "node tag");
        const auto index = static_cast<std::int32_t>(node_tags_.size() + block_tags.size());
        if (!node_index_.emplace(node_tag, index).second) {
          in_.fail("node tag " + std::to_string(node_tag) + " appears twice");
        }
        block_tags.push_back(node_tag);
      }
      const std::size_t values = 3 + static_cast<std::size_t>(parametric != 0 ? dim : 0);
      const std::string what =
          parametric != 0 && dim > 0 ? "x, y, z and parametric coordinates" : "x, y, z";
      for (std::int64_t n = 0; n < total; ++n) {
        in_.require("node coordinates");
        in_.expect_size(values, what);
        for (std::size_t i = 0; i < 3; ++i) {
          node_xyz_.push_back(in_.real(i, "a coordinate"));
        }
        for (std::size_t i = 3; i < values; ++i) {
          (void)in_.real(i, "a parametric coordinate");
        }
      }
      node_tags_.insert(node_tags_.end(), block_tags.begin(), block_tags.end());
    }
    expect_end("$EndNodes");
    if (node_tags_.size() != static_cast<std::size_t>(announced)) {
      in_.fail_at(header_line, "the $Nodes header announces " + std::to_string(announced) +
                                   " nodes, its blocks hold " + std::to_string(node_tags_.size()));
    }
  }

  void read_elements() {
    in_.require("the $Elements header: blocks, elements, min tag, max tag");
    in_.expect_size(4, "numbers of entity blocks and elements, min and max element tags");
    const std::int64_t blocks = in_.count(0, "number of entity blocks");
    const std::int64_t announced = in_.count(1, "number of elements", k_index_limit);
    (void)in_.count(2, "minimum element tag");
    (void)in_.count(3, "maximum element tag");
    const std::int64_t header_line = in_.line_number();
    std::int64_t read = 0;
    for (std::int64_t b = 0; b < blocks; ++b) {
      in_.require("an element block header: entity dimension, entity tag, element type, count");
      in_.expect_size(4, "entity dimension, entity tag, element type, number of elements");
      const int dim = in_.small_integer(0, "entity dimension", 0, 3);
      const std::int32_t entity = in_.tag(1, "entity tag");
      const std::int64_t gmsh_type = in_.integer(2, "element type");
      const std::int64_t total = in_.count(3, "number of elements in the block", k_index_limit);
      read += total;
      if (read > announced) {
        in_.fail("element blocks hold more elements than the " + std::to_string(announced) +
                 " the $Elements header (line " + std::to_string(header_line) + ") announces");
      }
      const std::optional<KeptType> kept = kept_type(gmsh_type);
      if (kept && kept->dim != dim) {
        in_.fail("elements of " + gmsh_type_name(gmsh_type) + " are " + std::to_string(kept->dim) +
                 "-dimensional, but the block's entity is " + std::to_string(dim) + "-dimensional");
      }
      // Blocks of dimension 1 or 2 may hold tagged sides, so their physical tag is needed even
      // when their type is not kept (to refuse tagged sides of the wrong type).
      const std::int32_t physical =
          kept || dim == 1 || dim == 2 ? physical_tag(dim, entity) : std::int32_t{0};
      if (total > 0) {
        blocks_.push_back({in_.line_number(), dim, gmsh_type, physical});
      }
      // Untagged lines are never kept: they are neither cells nor tagged sides.
      if (!kept || (kept->dim == 1 && physical == 0)) {
        for (std::int64_t n = 0; n < total; ++n) {
          in_.require("an element of " + gmsh_type_name(gmsh_type));
        }
        continue;
      }
      ElementsRead& elements = elements_[static_cast<std::size_t>(gmsh_type)];
      const bool may_be_side = gmsh_type <= k_last_side_type;
      for (std::int64_t n = 0; n < total; ++n) {
        in_.require("an element of " + gmsh_type_name(gmsh_type));
        if (in_.size() != kept->nodes + 1) {
          in_.fail("expected " + std::to_string(kept->nodes) + " node tags for an element of " +
                   gmsh_type_name(gmsh_type) + ", found " + std::to_string(in_.size() - 1));
        }
        const std::int64_t element = in_.count(0, "element tag");
        for (std::size_t i = 1; i <= kept->nodes; ++i) {
          const std::int64_t node_tag = in_.count(i, "node tag");
          const auto found = node_index_.find(node_tag);
          if (found == node_index_.end()) {
            in_.fail("element " + std::to_string(element) + " refers to node tag " +
                     std::to_string(node_tag) + ", which $Nodes does not list");
          }
          elements.nodes.push_back(found->second);
        }
        elements.tags.push_back(physical);
        if (may_be_side) {
          elements.element_tags.push_back(element);
          elements.lines.push_back(in_.line_number());
        }
      }
    }
    expect_end("$EndElements");
    if (read != announced) {
      in_.fail_at(header_line, "the $Elements header announces " + std::to_string(announced) +
                                   " elements, its blocks hold " + std::to_string(read));
    }
    choose_cell_type(header_line);
  }

  /// The first physical tag of an element block's entity (0 without $Entities).
  std::int32_t physical_tag(int dim, std::int32_t entity) const {
    if (!have_entities_) {
      return 0;
    }
    const auto& physicals = entity_physical_[static_cast<std::size_t>(dim)];
    const auto found = physicals.find(entity);
    if (found == physicals.end()) {
      in_.fail("element block on " + std::to_string(dim) + "-dimensional entity " +
               std::to_string(entity) + ", which $Entities does not list");
    }
    return found->second;
  }

  /// Picks the kept cell type: the one type of the highest dimension present.
  void choose_cell_type(std::int64_t header_line) {
    int top = -1;
    for (const BlockInfo& block : blocks_) {
      top = std::max(top, block.dim);
    }
    if (top < 2) {
      in_.fail_at(header_line,
                  "expected triangles, quadrangles, tetrahedra or hexahedra (Gmsh types 2, 3, "
                  "4, 5) in $Elements, found " +
                      (top < 0 ? std::string("no elements")
                               : "elements of dimension " + std::to_string(top) + " only"));
    }
    const BlockInfo* first = nullptr;
    for (const BlockInfo& block : blocks_) {
      if (block.dim != top) {
        continue;
      }
      const std::optional<CellType> type = supported_cell_type(block.gmsh_type);
      if (!type) {
        in_.fail_at(block.line, "element " + gmsh_type_name(block.gmsh_type) +
                                    " is not supported in the mesh's top dimension " +
                                    std::to_string(top) +
                                    "; expected 3-node triangles, 4-node quadrangles, 4-node "
                                    "tetrahedra or 8-node hexahedra (Gmsh types 2, 3, 4, 5)");
      }
      if (first == nullptr) {
        first = &block;
        cell_type_ = *type;
      } else if (block.gmsh_type != first->gmsh_type) {
        in_.fail_at(block.line,
                    "mixed cell types in dimension " + std::to_string(top) + ": " +
                        std::string(name(*type)) + " (Gmsh " + gmsh_type_name(block.gmsh_type) +
                        ") here, " + std::string(name(cell_type_)) + " (Gmsh " +
                        gmsh_type_name(first->gmsh_type) + ") at line " +
                        std::to_string(first->line) + "; expected one cell type per mesh");
      }
    }
    check_side_blocks(top);
  }

  /// Throws for a block of dimension top - 1 with a physical tag that cannot hold tagged sides of
  /// the kept cells: elements of another type than their sides, or a physical tag below 1.
  void check_side_blocks(int top) const {
    const std::int64_t side_type = gmsh_side_type_of(cell_type_);
    for (const BlockInfo& block : blocks_) {
      if (block.dim != top - 1 || block.physical == 0) {
        continue;
      }
      if (block.gmsh_type != side_type) {
        in_.fail_at(block.line,
                    "element " + gmsh_type_name(block.gmsh_type) + " in the " +
                        std::to_string(block.dim) + "-dimensional physical group " +
                        std::to_string(block.physical) + " cannot be a side of the mesh's " +
                        std::string(name(cell_type_)) + " cells; expected " +
                        gmsh_type_name(side_type) +
                        " elements as tagged sides (or an entity without a physical tag)");
      }
      if (block.physical < 0) {
        in_.fail_at(block.line, "side elements in the " + std::to_string(block.dim) +
                                    "-dimensional physical group " +
                                    std::to_string(block.physical) +
                                    "; expected a positive physical tag for tagged sides");
      }
    }
  }

  /// Skips the section that starts on the current line, up to its $End line. `section` points
  /// into the current line, so it is copied before the reader moves on.
  void skip_section(std::string_view section) {
    const std::string section_name(section);
    const std::string end = "$End" + section_name;
    const std::int64_t start = in_.line_number();
    while (true) {
      if (!in_.advance()) {
        std::string message = "unexpected end of file, expected ";
        message += end;
        message += " (the section $";
        message += section_name;
        message += " starts at line " + std::to_string(start) + ")";
        in_.fail_after_end(message);
      }
      if (in_.is(end)) {
        return;
      }
    }
  }

  /// The MeshData of the kept cells (their vertices only, in file order) and of the tagged sides.
  MeshData assemble() {
    ElementsRead& cells = elements_[static_cast<std::size_t>(gmsh_type_of(cell_type_))];
    MeshData mesh;
    mesh.cell_type = cell_type_;
    std::vector<std::int32_t> renumber(node_tags_.size(), -1);
    for (const std::int32_t node : cells.nodes) {
      renumber[static_cast<std::size_t>(node)] = 0;
    }
    const auto dim = static_cast<std::size_t>(dimension(cell_type_));
    std::int32_t used = 0;
    for (std::size_t node = 0; node < renumber.size(); ++node) {
      if (renumber[node] < 0) {
        continue;
      }
      renumber[node] = used++;
      for (std::size_t axis = 0; axis < dim; ++axis) {
        mesh.positions.push_back(node_xyz_[3 * node + axis]);
      }
    }
    mesh.cells = std::move(cells.nodes);
    for (std::int32_t& node : mesh.cells) {
      node = renumber[static_cast<std::size_t>(node)];
    }
    mesh.cell_tags = std::move(cells.tags);

    const ElementsRead& sides = elements_[static_cast<std::size_t>(gmsh_side_type_of(cell_type_))];
    const auto corners = static_cast<std::size_t>(side_vertex_count(cell_type_));
    for (std::size_t side = 0; side < sides.tags.size(); ++side) {
      if (sides.tags[side] == 0) {
        continue;
      }
      for (std::size_t i = 0; i < corners; ++i) {
        const auto node = static_cast<std::size_t>(sides.nodes[side * corners + i]);
        if (renumber[node] < 0) {
          in_.fail_at(sides.lines[side], "side element " +
                                             std::to_string(sides.element_tags[side]) +
                                             " uses node tag " + std::to_string(node_tags_[node]) +
                                             ", which no cell uses");
        }
        mesh.side_vertices.push_back(renumber[node]);
      }
      mesh.side_tags.push_back(sides.tags[side]);
    }

    for (PhysicalName& entry : physical_names_) {
      if (entry.dim == dimension(cell_type_)) {
        mesh.tag_names.emplace_back(entry.tag, std::move(entry.name));
      } else if (entry.dim == dimension(cell_type_) - 1) {
        mesh.side_tag_names.emplace_back(entry.tag, std::move(entry.name));
      }
    }
    return mesh;
  }

  LineReader in_;
  bool have_physical_names_ = false;
  bool have_entities_ = false;
  bool have_nodes_ = false;
  bool have_elements_ = false;
  std::vector<PhysicalName> physical_names_;
  std::array<std::unordered_map<std::int32_t, std::int32_t>, 4> entity_physical_;
  std::unordered_map<std::int64_t, std::int32_t> node_index_;
  std::vector<std::int64_t> node_tags_;
  std::vector<double> node_xyz_;
  std::vector<BlockInfo> blocks_;
  std::array<ElementsRead, k_last_kept_type + 1> elements_;  ///< indexed by Gmsh type
  CellType cell_type_ = CellType::triangle;
};

/// Throws unless `mesh` can be written: consistent sizes, indices in range, finite positions,
/// cell and side tag names without quotes or line breaks.
void check_writable(const MeshData& mesh) {
  check_consistent(mesh, "write_gmsh");
  const std::string what = "write_gmsh: " + std::string(name(mesh.cell_type)) + " mesh: ";
  for (const auto& [tag, tag_name] : mesh.tag_names) {
    AFEM_EXPECTS(tag_name.find_first_of("\"\n\r") == std::string::npos,
                 what + "the name of tag " + std::to_string(tag) +
                     " contains a double quote or a line break, which MSH cannot store");
  }
  for (const auto& [tag, tag_name] : mesh.side_tag_names) {
    AFEM_EXPECTS(tag_name.find_first_of("\"\n\r") == std::string::npos,
                 what + "the name of side tag " + std::to_string(tag) +
                     " contains a double quote or a line break, which MSH cannot store");
  }
}

/// Collects output text and hands it to the stream in large pieces.
class TextWriter {
public:
  explicit TextWriter(std::ostream& out) : out_(out) { text_.reserve(k_flush_at + 256); }
  TextWriter(const TextWriter&) = delete;
  TextWriter& operator=(const TextWriter&) = delete;
  TextWriter(TextWriter&&) = delete;
  TextWriter& operator=(TextWriter&&) = delete;
  ~TextWriter() = default;

  TextWriter& operator<<(std::string_view text) {
    text_ += text;
    maybe_flush();
    return *this;
  }
  TextWriter& operator<<(char c) {
    text_ += c;
    return *this;
  }
  TextWriter& operator<<(std::int64_t value) { return number(value); }
  TextWriter& operator<<(std::int32_t value) { return number(value); }
  TextWriter& operator<<(std::size_t value) { return number(value); }
  TextWriter& operator<<(double value) { return number(value); }

  /// Writes what is left; throws when the stream failed.
  void finish() {
    flush();
    out_.flush();
    AFEM_EXPECTS(out_.good(), std::string("write_gmsh: writing the mesh failed"));
  }

private:
  static constexpr std::size_t k_flush_at = std::size_t{1} << 16;

  template <typename T>
  TextWriter& number(T value) {
    std::array<char, 32> buffer{};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    text_.append(buffer.data(), result.ptr);
    maybe_flush();
    return *this;
  }
  void maybe_flush() {
    if (text_.size() >= k_flush_at) {
      flush();
    }
  }
  void flush() {
    out_.write(text_.data(), static_cast<std::streamsize>(text_.size()));
    text_.clear();
  }

  std::ostream& out_;
  std::string text_;
};

/// Elements to write as Gmsh element blocks: `corners` 0-based vertex indices each and one tag
/// each (or none: all 0), of Gmsh type `gmsh_type` on entities of dimension `dim`.
struct ElementsToWrite {
  int dim = 0;
  std::int64_t gmsh_type = 0;
  std::size_t corners = 0;
  std::span<const std::int32_t> vertices;
  std::span<const std::int32_t> tags;

  [[nodiscard]] std::size_t count() const { return vertices.size() / corners; }
  [[nodiscard]] std::int32_t tag(std::size_t element) const {
    return tags.empty() ? std::int32_t{0} : tags[element];
  }
  /// Element blocks needed: one per run of equal tags, so the elements keep their order.
  [[nodiscard]] std::size_t runs() const {
    std::size_t total = 0;
    for (std::size_t e = 0; e < count(); ++e) {
      total += e == 0 || tag(e) != tag(e - 1) ? 1 : 0;
    }
    return total;
  }
};

/// The distinct values of `tags` in ascending order: entity e + 1 holds the elements tagged
/// tags[e].
std::vector<std::int32_t> entity_tags(std::vector<std::int32_t> tags) {
  std::sort(tags.begin(), tags.end());
  tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
  return tags;
}

/// Writes one $Entities line per entry of `entities` (see entity_tags): entity number, the
/// bounding box `low`-`high`, its physical tag (none for 0), no bounding entities.
void write_entities(TextWriter& w, const std::vector<std::int32_t>& entities,
                    const std::array<double, 3>& low, const std::array<double, 3>& high) {
  for (std::size_t e = 0; e < entities.size(); ++e) {
    w << static_cast<std::int64_t>(e + 1);
    for (const std::array<double, 3>& corner : {low, high}) {
      for (const double x : corner) {
        w << ' ' << x;
      }
    }
    if (entities[e] != 0) {
      w << " 1 " << entities[e];
    } else {
      w << " 0";
    }
    w << " 0\n";
  }
}

/// Writes `elements` as elements.runs() element blocks, each on the entity of its tag among
/// `entities` (see entity_tags), with element tags first_tag, first_tag + 1, ...
void write_element_blocks(TextWriter& w, const ElementsToWrite& elements,
                          const std::vector<std::int32_t>& entities, std::size_t first_tag) {
  const std::size_t count = elements.count();
  for (std::size_t begin = 0; begin < count;) {
    std::size_t end = begin + 1;
    while (end < count && elements.tag(end) == elements.tag(begin)) {
      ++end;
    }
    const auto entity =
        std::lower_bound(entities.begin(), entities.end(), elements.tag(begin)) - entities.begin();
    w << std::int64_t{elements.dim} << ' ' << static_cast<std::int64_t>(entity + 1) << ' '
      << elements.gmsh_type << ' ' << end - begin << '\n';
    for (std::size_t e = begin; e < end; ++e) {
      w << first_tag + e;
      for (std::size_t i = 0; i < elements.corners; ++i) {
        w << ' ' << static_cast<std::int64_t>(elements.vertices[e * elements.corners + i]) + 1;
      }
      w << '\n';
    }
    begin = end;
  }
}

/// Writes a mesh that check_writable accepted.
void write_checked(const MeshData& mesh, std::ostream& out) {
  const int dim = dimension(mesh.cell_type);
  const auto vertices = static_cast<std::size_t>(mesh.vertex_total());
  const ElementsToWrite cells{dim, gmsh_type_of(mesh.cell_type),
                              static_cast<std::size_t>(vertex_count(mesh.cell_type)), mesh.cells,
                              mesh.cell_tags};
  const ElementsToWrite sides{dim - 1, gmsh_side_type_of(mesh.cell_type),
                              static_cast<std::size_t>(side_vertex_count(mesh.cell_type)),
                              mesh.side_vertices, mesh.side_tags};

  // Cell entities: one per distinct cell tag, at least one (tag 0) for an untagged mesh. Side
  // entities: one per distinct side tag (all positive).
  std::vector<std::int32_t> cell_entities = entity_tags(mesh.cell_tags);
  if (mesh.cell_tags.empty()) {
    cell_entities.push_back(0);
  }
  const std::vector<std::int32_t> side_entities = entity_tags(mesh.side_tags);

  std::array<double, 3> low = {0.0, 0.0, 0.0};
  std::array<double, 3> high = {0.0, 0.0, 0.0};
  for (std::size_t v = 0; v < vertices; ++v) {
    for (std::size_t axis = 0; axis < static_cast<std::size_t>(dim); ++axis) {
      const double x = mesh.positions[v * static_cast<std::size_t>(dim) + axis];
      low[axis] = v == 0 ? x : std::min(low[axis], x);
      high[axis] = v == 0 ? x : std::max(high[axis], x);
    }
  }

  TextWriter w(out);
  w << "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n";
  if (!mesh.tag_names.empty() || !mesh.side_tag_names.empty()) {
    w << "$PhysicalNames\n" << mesh.tag_names.size() + mesh.side_tag_names.size() << '\n';
    for (const auto& [tag, tag_name] : mesh.tag_names) {
      w << std::int64_t{dim} << ' ' << tag << " \"" << tag_name << "\"\n";
    }
    for (const auto& [tag, tag_name] : mesh.side_tag_names) {
      w << std::int64_t{dim - 1} << ' ' << tag << " \"" << tag_name << "\"\n";
    }
    w << "$EndPhysicalNames\n";
  }
  // Entity counts: points, curves, surfaces, volumes; the sides' entities come first.
  w << "$Entities\n0 " << (dim == 2 ? side_entities.size() : std::size_t{0}) << ' '
    << (dim == 2 ? cell_entities.size() : side_entities.size()) << ' '
    << (dim == 3 ? cell_entities.size() : std::size_t{0}) << '\n';
  write_entities(w, side_entities, low, high);
  write_entities(w, cell_entities, low, high);
  w << "$EndEntities\n";

  w << "$Nodes\n"
    << (vertices > 0 ? std::size_t{1} : std::size_t{0}) << ' ' << vertices << ' '
    << (vertices > 0 ? std::size_t{1} : std::size_t{0}) << ' ' << vertices << '\n';
  if (vertices > 0) {
    w << std::int64_t{dim} << " 1 0 " << vertices << '\n';
    for (std::size_t v = 0; v < vertices; ++v) {
      w << v + 1 << '\n';
    }
    for (std::size_t v = 0; v < vertices; ++v) {
      for (std::size_t axis = 0; axis < 3; ++axis) {
        w << (axis > 0 ? " " : "")
          << (axis < static_cast<std::size_t>(dim)
                  ? mesh.positions[v * static_cast<std::size_t>(dim) + axis]
                  : 0.0);
      }
      w << '\n';
    }
  }
  w << "$EndNodes\n";

  const std::size_t elements = cells.count() + sides.count();
  w << "$Elements\n"
    << cells.runs() + sides.runs() << ' ' << elements << ' '
    << (elements > 0 ? std::size_t{1} : std::size_t{0}) << ' ' << elements << '\n';
  write_element_blocks(w, cells, cell_entities, 1);
  write_element_blocks(w, sides, side_entities, cells.count() + 1);
  w << "$EndElements\n";
  w.finish();
}

}  // namespace

MeshData read_gmsh(std::istream& in, std::string_view source_name) {
  GmshReader reader(in, source_name);
  return reader.read();
}

MeshData read_gmsh(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    throw Error("read_gmsh: cannot open '" + file.string() + "' for reading");
  }
  return read_gmsh(in, file.string());
}

void write_gmsh(const MeshData& mesh, std::ostream& out) {
  check_writable(mesh);
  write_checked(mesh, out);
}

void write_gmsh(const MeshData& mesh, const std::filesystem::path& file) {
  check_writable(mesh);
  std::ofstream out(file);
  if (!out) {
    throw Error("write_gmsh: cannot open '" + file.string() + "' for writing");
  }
  try {
    write_checked(mesh, out);
  } catch (const Error& error) {
    throw Error(std::string(error.what()) + " (file '" + file.string() + "')");
  }
}

}  // namespace afem::geometry
