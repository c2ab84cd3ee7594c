# Installs the arenafem build in BUILD_DIR into a scratch prefix, then configures, builds and runs
# the consumer project in SOURCE_DIR against it. Run by CTest as `embed_find_package`.
set(work ${BUILD_DIR}/embed-test)
file(REMOVE_RECURSE ${work})

function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE status WORKING_DIRECTORY ${work})
  if(NOT status EQUAL 0)
    string(REPLACE ";" " " line "${ARGV}")
    message(FATAL_ERROR "embed test: `${line}` failed (${status})")
  endif()
endfunction()

file(MAKE_DIRECTORY ${work})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${work}/prefix)

# README's MPM embedding example, compiled and run exactly as README shows it: the C++ block that
# follows the line "<!-- embed: readme_mpm.cpp -->".
file(READ ${SOURCE_DIR}/../../README.md readme)
string(FIND "${readme}" "<!-- embed: readme_mpm.cpp -->\n```cpp\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "embed test: README.md has no block after <!-- embed: readme_mpm.cpp -->")
endif()
string(SUBSTRING "${readme}" ${start} -1 readme)
string(FIND "${readme}" "```cpp\n" open)
math(EXPR open "${open} + 7")
string(SUBSTRING "${readme}" ${open} -1 readme)
string(FIND "${readme}" "```" close)
string(SUBSTRING "${readme}" 0 ${close} example)
file(WRITE ${work}/readme_mpm.cpp "${example}")
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE} -fno-omit-frame-pointer")
endif()
string(TOUPPER "${BUILD_TYPE}" config)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${work}/build -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    "-DCMAKE_CXX_FLAGS_${config}=${CONFIG_FLAGS}"
    -DCMAKE_PREFIX_PATH=${work}/prefix -DCMAKE_CXX_FLAGS=${flags}
    -DREADME_EXAMPLE=${work}/readme_mpm.cpp)
run(${CMAKE_COMMAND} --build ${work}/build)
run(${work}/build/embed_consumer)
run(${work}/build/embed_mpm ${work}/embed_mpm.afem)
run(${work}/build/embed_poisson ${SOURCE_DIR}/../apps/data/rectangle_tri.msh)
run(${work}/build/embed_readme_mpm)
