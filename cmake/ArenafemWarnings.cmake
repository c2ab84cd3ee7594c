# Strict warnings for arenafem's own targets (private: embedding projects keep their flags).

add_library(arenafem_warnings INTERFACE)
target_compile_options(arenafem_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Werror>
  $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -diag-suppress=20012 --expt-relaxed-constexpr
    -Xcompiler=-Wall,-Wextra>)

if(ARENAFEM_SANITIZE)
  # Null checks stay recoverable so that tests/ubsan.supp can silence the one Thrust idiom that
  # trips them; UBSAN_OPTIONS=halt_on_error=1 still stops at every other report.
  add_compile_options(-fsanitize=${ARENAFEM_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all -fsanitize-recover=null)
  add_link_options(-fsanitize=${ARENAFEM_SANITIZE})
endif()
