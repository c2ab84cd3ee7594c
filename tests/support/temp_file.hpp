#pragma once

/// @file
/// TempFile: a path in the temporary directory, unique to the test process; the file or directory
/// at it is removed when the object goes out of scope.

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace afem::test {

/// A path "arenafem_<stem>_<pid><extension>" in the temporary directory; the file or directory
/// (with its files) at it, if any, is removed on destruction.
class TempFile {
public:
  explicit TempFile(const std::string& stem, const std::string& extension = ".msh")
      : path_(std::filesystem::temp_directory_path() /
              ("arenafem_" + stem + "_" + std::to_string(::getpid()) + extension)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  TempFile(TempFile&&) = delete;
  TempFile& operator=(TempFile&&) = delete;
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
};

}  // namespace afem::test
