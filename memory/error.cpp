#include "arenafem/memory/error.hpp"

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

void report_source_destroyed_with_handles(const char* kind, const std::string& name,
                                          std::size_t handles,
                                          const std::string& ledger_table) noexcept {
  std::fprintf(stderr,
               "arenafem: %s '%s' destroyed while %zu of its handles are outstanding; every "
               "Temporary must be released before its %s dies\n%s",
               kind, name.c_str(), handles, kind, ledger_table.c_str());
#if defined(ARENAFEM_CHECKS)
  std::abort();
#endif
}

}  // namespace afem::detail
