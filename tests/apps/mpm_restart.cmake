# A run resumed in a new process is bitwise the uninterrupted one: `mpm` runs STEPS steps with a
# checkpoint at the end; another `mpm` runs STEPS/2 steps and checkpoints, a third resumes from
# that checkpoint for STEPS/2 more and checkpoints; the two final checkpoints must be equal byte for
# byte. Run by CTest as mpm.cli_restart_is_bitwise with MPM, ARGS (the scene flags), STEPS, WORK.
file(REMOVE_RECURSE ${WORK})
separate_arguments(scene_args UNIX_COMMAND "${ARGS}")
math(EXPR half "${STEPS} / 2")

function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    string(REPLACE ";" " " line "${ARGV}")
    message(FATAL_ERROR "`${line}` failed (${status}):\n${out}${err}")
  endif()
endfunction()

run(${MPM} ${scene_args} --steps ${STEPS} --checkpoint-every ${STEPS} --out ${WORK}/whole)
run(${MPM} ${scene_args} --steps ${half} --checkpoint-every ${half} --out ${WORK}/first)
run(${MPM} --restart ${WORK}/first/checkpoint.afem --steps ${half} --checkpoint-every ${half}
    --out ${WORK}/resumed)
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK}/whole/checkpoint.afem
                        ${WORK}/resumed/checkpoint.afem RESULT_VARIABLE differ)
if(NOT differ EQUAL 0)
  message(FATAL_ERROR "the resumed run's checkpoint differs from the uninterrupted run's")
endif()
message(STATUS "resumed run is bitwise the uninterrupted one after ${STEPS} steps")
