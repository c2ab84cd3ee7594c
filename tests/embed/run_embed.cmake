# Installs the arenafem build in BUILD_DIR into a scratch prefix, then configures, builds and runs
# the consumer project in SOURCE_DIR against it. Run by CTest as `embed_find_package`.
set(work ${BUILD_DIR}/embed-test)
file(REMOVE_RECURSE ${work})

function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    string(REPLACE ";" " " line "${ARGV}")
    message(FATAL_ERROR "embed test: `${line}` failed (${status})")
  endif()
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${work}/prefix)
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE} -fno-omit-frame-pointer")
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${work}/build -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_PREFIX_PATH=${work}/prefix -DCMAKE_CXX_FLAGS=${flags})
run(${CMAKE_COMMAND} --build ${work}/build)
run(${work}/build/embed_consumer)
