#pragma once

/// @file
/// Reading back the ASCII VTK XML files that the library and the apps write (.vtu, .vtp, .pvd):
/// enough of XML for tests to check element counts, array names and values.

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace afem::test {

/// The whole file as text.
inline std::string read_all(const std::filesystem::path& file) {
  std::ifstream in(file);
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

/// The whitespace-separated values of the DataArray that `tag_start` points into.
inline std::vector<std::string> values_after(const std::string& xml, std::size_t tag_start) {
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

/// The values of the DataArray named `name`, as numbers.
inline std::vector<double> data_array_numbers(const std::string& xml, const std::string& name) {
  std::vector<double> numbers;
  for (const std::string& value : data_array_values(xml, name)) {
    numbers.push_back(std::stod(value));
  }
  return numbers;
}

}  // namespace afem::test
