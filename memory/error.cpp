#include "memory/error.hpp"

#include <cstdio>
#include <cstdlib>

namespace afem::detail {

void throw_expects_failure(const char* condition, const std::string& message, const char* file,
                           int line) {
  throw Error(message + " (expected " + condition + " at " + file + ":" + std::to_string(line) +
              ")");
}

void assert_failure(const char* condition, const char* message, const char* file,
                    int line) noexcept {
  std::fprintf(stderr, "arenafem: internal check failed: %s (%s) at %s:%d\n", message, condition,
               file, line);
  std::abort();
}

void report_noexcept_failure(const char* what, const char* file, int line) noexcept {
  std::fprintf(stderr, "arenafem: error in a no-throw path: %s at %s:%d\n", what, file, line);
}

}  // namespace afem::detail
