# Runs a program as a test and checks both its exit status and its output, which CTest's own
# properties cannot do together (PASS_REGULAR_EXPRESSION ignores the exit status, WILL_FAIL the
# output).
#
#   cmake -DEXIT=zero|nonzero -DOUTPUT=<regex> -P expect_command.cmake -- <program> [args...]
#
# Passes when the program's exit status is as EXIT says and OUTPUT matches its standard output
# and standard error together; otherwise fails and prints what the program printed.

if(NOT EXIT MATCHES "^(zero|nonzero)$")
  message(FATAL_ERROR "expect_command: EXIT is '${EXIT}', expected zero or nonzero")
endif()
if(NOT DEFINED OUTPUT OR OUTPUT STREQUAL "")
  message(FATAL_ERROR "expect_command: OUTPUT (a regular expression) is missing")
endif()

set(command)
set(after_separator FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(after_separator)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_separator TRUE)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "expect_command: no program after '--'")
endif()

execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(printed "${out}${err}")
set(problems)
if(EXIT STREQUAL "zero" AND NOT status STREQUAL "0")
  list(APPEND problems "exit status '${status}', expected 0")
elseif(EXIT STREQUAL "nonzero" AND status STREQUAL "0")
  list(APPEND problems "exit status 0, expected a failure")
elseif(EXIT STREQUAL "nonzero" AND NOT status MATCHES "^[0-9]+$")
  list(APPEND problems "ended by '${status}', expected an error exit")
endif()
if(NOT printed MATCHES "${OUTPUT}")
  list(APPEND problems "output does not match '${OUTPUT}'")
endif()
if(problems)
  string(JOIN "; " summary ${problems})
  message(FATAL_ERROR "${summary}\ncommand: ${command}\noutput:\n${printed}")
endif()
message(STATUS "exit status ${status} and output as expected")
