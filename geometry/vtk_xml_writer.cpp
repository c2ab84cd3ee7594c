#include "arenafem/geometry/vtk_xml_writer.hpp"

#include <array>
#include <bit>
#include <charconv>
#include <cstring>
#include <fstream>
#include <type_traits>

#include "arenafem/memory/error.hpp"

namespace afem::geometry {
namespace {

template <class T>
const char* vtk_type_name() {
  if constexpr (std::is_same_v<T, double>) {
    return "Float64";
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    return "Int32";
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return "Int64";
  } else {
    static_assert(std::is_same_v<T, std::uint8_t>, "VtkXmlWriter: double, int32, int64 or uint8");
    return "UInt8";
  }
}

/// Appends the shortest text that reads back as `value`.
template <class T>
void append_number(std::string& text, T value) {
  std::array<char, 32> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  text.append(buffer.data(), result.ptr);
}

}  // namespace

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

void VtkXmlWriter::begin(std::string_view type) {
  constexpr bool little = std::endian::native == std::endian::little;
  xml_ += "<?xml version=\"1.0\"?>\n<VTKFile type=\"";
  xml_ += type;
  xml_ += "\" version=\"1.0\" byte_order=\"";
  xml_ += little ? "LittleEndian" : "BigEndian";
  xml_ += "\" header_type=\"UInt64\">\n";
}

template <class T>
void VtkXmlWriter::data_array(std::string_view name, int components, std::span<const T> values,
                              std::size_t per_line) {
  xml_ += "        <DataArray type=\"";
  xml_ += vtk_type_name<T>();
  xml_ += '"';
  if (!name.empty()) {
    xml_ += " Name=\"" + xml_escaped(name) + '"';
  }
  xml_ += " NumberOfComponents=\"" + std::to_string(components) + '"';
  if (encoding_ == VtkEncoding::binary) {
    xml_ += " format=\"appended\" offset=\"" + std::to_string(appended_.size()) + "\"/>\n";
    const std::uint64_t bytes = values.size_bytes();
    const std::size_t at = appended_.size();
    appended_.resize(at + sizeof bytes + values.size_bytes());
    std::memcpy(appended_.data() + at, &bytes, sizeof bytes);
    if (!values.empty()) {
      std::memcpy(appended_.data() + at + sizeof bytes, values.data(), values.size_bytes());
    }
    return;
  }
  xml_ += " format=\"ascii\">\n";
  for (std::size_t i = 0; i < values.size(); ++i) {
    xml_ += i % per_line == 0 ? "          " : " ";
    if constexpr (std::is_same_v<T, std::uint8_t>) {
      append_number(xml_, static_cast<int>(values[i]));
    } else {
      append_number(xml_, values[i]);
    }
    if ((i + 1) % per_line == 0 || i + 1 == values.size()) {
      xml_ += '\n';
    }
  }
  xml_ += "        </DataArray>\n";
}

void VtkXmlWriter::write(const std::filesystem::path& file, std::string_view what) {
  std::ofstream out(file, std::ios::binary);
  if (!out) {
    throw Error(std::string(what) + ": cannot open '" + file.string() + "' for writing");
  }
  out.write(xml_.data(), static_cast<std::streamsize>(xml_.size()));
  if (encoding_ == VtkEncoding::binary) {
    constexpr std::string_view open = "  <AppendedData encoding=\"raw\">\n   _";
    constexpr std::string_view close = "\n  </AppendedData>\n";
    out.write(open.data(), static_cast<std::streamsize>(open.size()));
    out.write(appended_.data(), static_cast<std::streamsize>(appended_.size()));
    out.write(close.data(), static_cast<std::streamsize>(close.size()));
  }
  constexpr std::string_view end = "</VTKFile>\n";
  out.write(end.data(), static_cast<std::streamsize>(end.size()));
  out.flush();
  if (!out) {
    throw Error(std::string(what) + ": writing '" + file.string() + "' failed");
  }
}

template void VtkXmlWriter::data_array(std::string_view, int, std::span<const double>, std::size_t);
template void VtkXmlWriter::data_array(std::string_view, int, std::span<const std::int32_t>,
                                       std::size_t);
template void VtkXmlWriter::data_array(std::string_view, int, std::span<const std::int64_t>,
                                       std::size_t);
template void VtkXmlWriter::data_array(std::string_view, int, std::span<const std::uint8_t>,
                                       std::size_t);

}  // namespace afem::geometry
