#pragma once

/// @file
/// VtkXmlWriter: the text of a VTK XML file (.vtu, .vtp) whose data arrays are stored as appended
/// raw binary (the default) or as ASCII.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace afem::geometry {

/// How a VTK XML file stores its data arrays. binary: appended raw bytes in the machine's byte
/// order with 64-bit size headers (8 bytes a double against about 20 characters of text, written
/// and read without formatting or parsing numbers); ascii: numbers as text, each reading back
/// exactly.
enum class VtkEncoding : std::uint8_t { binary, ascii };

/// Builds a VTK XML file (format version 1.0, UInt64 headers) in memory: begin() opens the
/// VTKFile element, text() adds markup, data_array() adds a DataArray (inline as ASCII, or an
/// empty element pointing into the appended section), and write() saves it with the appended
/// section and the closing tag. Owns its buffers; nothing is written before write().
class VtkXmlWriter {
public:
  explicit VtkXmlWriter(VtkEncoding encoding) : encoding_(encoding) {}

  /// The XML declaration and the opening VTKFile tag of `type` ("UnstructuredGrid", "PolyData").
  void begin(std::string_view type);
  /// Appends markup.
  void text(std::string_view markup) { xml_ += markup; }
  /// A DataArray of `values` (double, int32, int64 or uint8) with `components` per tuple, named
  /// `name` (no Name attribute when empty; the name is escaped), ASCII lines of `per_line` values.
  template <class T>
  void data_array(std::string_view name, int components, std::span<const T> values,
                  std::size_t per_line);
  /// Closes the VTKFile element (after the appended section when there is one) and writes the
  /// file. Throws afem::Error naming `what` and the path when it cannot be opened or written.
  void write(const std::filesystem::path& file, std::string_view what);

  [[nodiscard]] VtkEncoding encoding() const { return encoding_; }

private:
  VtkEncoding encoding_;
  std::string xml_;
  std::string appended_;
};

/// `text` with the XML special characters replaced by entities, for an attribute value.
std::string xml_escaped(std::string_view text);

extern template void VtkXmlWriter::data_array(std::string_view, int, std::span<const double>,
                                              std::size_t);
extern template void VtkXmlWriter::data_array(std::string_view, int, std::span<const std::int32_t>,
                                              std::size_t);
extern template void VtkXmlWriter::data_array(std::string_view, int, std::span<const std::int64_t>,
                                              std::size_t);
extern template void VtkXmlWriter::data_array(std::string_view, int, std::span<const std::uint8_t>,
                                              std::size_t);

}  // namespace afem::geometry
