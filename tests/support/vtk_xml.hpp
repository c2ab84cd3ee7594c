#pragma once

/// @file
/// Reading back the VTK XML files that the library and the apps write (.vtu, .vtp, .pvd), with
/// their arrays as ASCII or appended raw binary: enough of XML for tests to check element counts,
/// array names and values (binary values are given as the text the ASCII writer would print).

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace afem::test {

/// The whole file as text.
inline std::string read_all(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The opening tag of the DataArray whose Name attribute is `name` (empty when there is none).
inline std::string data_array_tag(const std::string& xml, const std::string& name) {
  const std::size_t at = xml.find("Name=\"" + name + "\"");
  if (at == std::string::npos) {
    return "";
  }
  const std::size_t begin = xml.rfind("<DataArray", at);
  return xml.substr(begin, xml.find('>', at) + 1 - begin);
}

/// The value of attribute `name` in the first element of `xml` at or after `from` that has it
/// (empty when none has).
inline std::string attribute(const std::string& xml, const std::string& name,
                             std::size_t from = 0) {
  const std::string key = " " + name + "=\"";
  const std::size_t at = xml.find(key, from);
  if (at == std::string::npos) {
    return "";
  }
  const std::size_t begin = at + key.size();
  return xml.substr(begin, xml.find('"', begin) - begin);
}

/// The values of an appended DataArray whose opening tag is `tag`, as text (empty when the file
/// has no appended section).
inline std::vector<std::string> appended_values(const std::string& xml, const std::string& tag) {
  const std::size_t section = xml.find("<AppendedData encoding=\"raw\">");
  if (section == std::string::npos) {
    return {};
  }
  const std::size_t data = xml.find('_', section) + 1 + std::stoull(attribute(tag, "offset"));
  std::uint64_t bytes = 0;
  std::memcpy(&bytes, xml.data() + data, sizeof bytes);
  const char* values = xml.data() + data + sizeof bytes;
  const std::string type = attribute(tag, "type");
  std::vector<std::string> out;
  const auto add = [&out](auto value) {
    std::array<char, 32> buffer{};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    out.emplace_back(buffer.data(), result.ptr);
  };
  const auto read = [&](auto zero) {
    using T = decltype(zero);
    for (std::uint64_t i = 0; i < bytes / sizeof(T); ++i) {
      T value{};
      std::memcpy(&value, values + i * sizeof(T), sizeof(T));
      if constexpr (std::is_same_v<T, std::uint8_t>) {
        add(static_cast<int>(value));
      } else {
        add(value);
      }
    }
  };
  if (type == "Float64") {
    read(0.0);
  } else if (type == "Int32") {
    read(std::int32_t{0});
  } else if (type == "Int64") {
    read(std::int64_t{0});
  } else if (type == "UInt8") {
    read(std::uint8_t{0});
  }
  return out;
}

/// The values of the DataArray that `tag_start` points into: whitespace-separated text, or the
/// appended binary values as text.
inline std::vector<std::string> values_after(const std::string& xml, std::size_t tag_start) {
  const std::size_t open = xml.rfind("<DataArray", tag_start);
  const std::string tag = xml.substr(open, xml.find('>', tag_start) + 1 - open);
  if (tag.find("format=\"appended\"") != std::string::npos) {
    return appended_values(xml, tag);
  }
  const std::size_t begin = xml.find('>', tag_start) + 1;
  const std::size_t end = xml.find("</DataArray>", begin);
  std::istringstream in(xml.substr(begin, end - begin));
  std::vector<std::string> values;
  for (std::string value; in >> value;) {
    values.push_back(value);
  }
  return values;
}

/// The values of the DataArray named `name`.
inline std::vector<std::string> data_array_values(const std::string& xml, const std::string& name) {
  const std::size_t at = xml.find("Name=\"" + name + "\"");
  if (at == std::string::npos) {
    return {};
  }
  return values_after(xml, at);
}

/// The whitespace-separated words of `text`.
inline std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> values;
  for (std::string value; in >> value;) {
    values.push_back(value);
  }
  return values;
}

/// How often `part` occurs in `text`.
inline std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

/// The values of the DataArray named `name`, as numbers.
inline std::vector<double> data_array_numbers(const std::string& xml, const std::string& name) {
  std::vector<double> numbers;
  for (const std::string& value : data_array_values(xml, name)) {
    numbers.push_back(std::stod(value));
  }
  return numbers;
}

}  // namespace afem::test
