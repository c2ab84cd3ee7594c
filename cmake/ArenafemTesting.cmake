# What every test of the project runs with, and programs run as tests (tests/, bench/).

# ctest runs tests side by side: OpenMP threads must not spin on cores another test needs.
set(ARENAFEM_TEST_ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE")
if(ARENAFEM_SANITIZE)
  list(APPEND ARENAFEM_TEST_ENVIRONMENT
    "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=${PROJECT_SOURCE_DIR}/tests/ubsan.supp")
endif()

# A program run as a test: its exit status must be as EXIT says (zero or nonzero) and its output
# must match OUTPUT; tests/support/expect_command.cmake checks both (CTest's
# PASS_REGULAR_EXPRESSION alone ignores the exit status, WILL_FAIL the output). No argument may
# hold a ';'.
#   arenafem_command_test(NAME n PROGRAM target-or-path EXIT zero|nonzero OUTPUT regex
#                         [LABEL label] [ARGS args...])
set(ARENAFEM_EXPECT_COMMAND ${PROJECT_SOURCE_DIR}/tests/support/expect_command.cmake)
# What tests under mpirun run with: one OpenMP thread per rank, oversubscribed cores, and the
# permission Open MPI wants for root (CI runs as root).
set(ARENAFEM_MPI_ENVIRONMENT ${ARENAFEM_TEST_ENVIRONMENT} OMP_NUM_THREADS=1
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1)

function(arenafem_command_test)
  cmake_parse_arguments(PARSE_ARGV 0 test "" "NAME;PROGRAM;EXIT;OUTPUT;LABEL" "ARGS")
  if(NOT test_LABEL)
    set(test_LABEL apps)
  endif()
  set(program ${test_PROGRAM})
  if(TARGET ${program})
    set(program $<TARGET_FILE:${program}>)
  endif()
  add_test(NAME ${test_NAME}
    COMMAND ${CMAKE_COMMAND} -DEXIT=${test_EXIT} "-DOUTPUT=${test_OUTPUT}"
            -P ${ARENAFEM_EXPECT_COMMAND} -- ${program} ${test_ARGS})
  set_tests_properties(${test_NAME} PROPERTIES LABELS ${test_LABEL}
    ENVIRONMENT "${ARENAFEM_TEST_ENVIRONMENT}")
endfunction()
