#pragma once

/// @file
/// The exception tree of arenafem and the checking macros used at API boundaries.

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>

namespace afem {

/// Root of the errors arenafem throws for invalid input or a broken promise of the caller (the
/// exception is afem::OutOfMemory, a std::bad_alloc). The message says what was wrong and what
/// was expected.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A Pool or Arena could not provide memory: the upstream refused, or a hard capacity was reached.
/// Derives from std::bad_alloc so generic out-of-memory handlers see it too.
class OutOfMemory : public std::bad_alloc {
public:
  explicit OutOfMemory(std::string message) : message_(std::move(message)) {}
  [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }

private:
  std::string message_;
};

/// A handle borrowed from an Arena was used after that arena was reset.
class StaleHandle : public Error {
public:
  using Error::Error;
};

/// A CUDA runtime call failed; the message names the call site and the CUDA error.
class CudaError : public Error {
public:
  using Error::Error;
};

namespace detail {
[[noreturn]] void throw_expects_failure(const char* condition, const std::string& message,
                                        const char* file, int line);
[[noreturn]] void assert_failure(const char* condition, const char* message, const char* file,
                                 int line) noexcept;
void report_noexcept_failure(const char* what, const char* file, int line) noexcept;
/// A Pool or Arena is being destroyed while `handles` of its Temporaries are still out: prints
/// who holds them (`ledger_table`) and aborts in checked builds; the memory leaks otherwise.
void report_source_destroyed_with_handles(const char* kind, const std::string& name,
                                          std::size_t handles,
                                          const std::string& ledger_table) noexcept;
}  // namespace detail

}  // namespace afem

/// Checks a precondition at an API boundary; throws afem::Error naming the condition, file and
/// line.
#define AFEM_EXPECTS(condition, message)                                                \
  do {                                                                                  \
    if (!(condition)) {                                                                 \
      ::afem::detail::throw_expects_failure(#condition, (message), __FILE__, __LINE__); \
    }                                                                                   \
  } while (false)

#if defined(ARENAFEM_CHECKS)
/// Checks an internal invariant when ARENAFEM_CHECKS is on (debug builds and tests); aborts
/// with the condition, message, file and line, because a broken invariant cannot be recovered.
#define AFEM_ASSERT(condition, message)                                          \
  do {                                                                           \
    if (!(condition)) {                                                          \
      ::afem::detail::assert_failure(#condition, (message), __FILE__, __LINE__); \
    }                                                                            \
  } while (false)
#else
#define AFEM_ASSERT(condition, message) \
  do {                                  \
  } while (false)
#endif
