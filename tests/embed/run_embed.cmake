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

# README's examples, compiled and run exactly as README shows them: the C++ block that follows a
# line "<!-- embed: NAME.cpp -->" becomes NAME.cpp.
file(READ ${SOURCE_DIR}/../../README.md readme_text)
function(extract name)
  string(FIND "${readme_text}" "<!-- embed: ${name} -->\n```cpp\n" start)
  if(start EQUAL -1)
    message(FATAL_ERROR "embed test: README.md has no block after <!-- embed: ${name} -->")
  endif()
  string(SUBSTRING "${readme_text}" ${start} -1 text)
  string(FIND "${text}" "```cpp\n" open)
  math(EXPR open "${open} + 7")
  string(SUBSTRING "${text}" ${open} -1 text)
  string(FIND "${text}" "```" close)
  string(SUBSTRING "${text}" 0 ${close} example)
  file(WRITE ${work}/${name} "${example}")
endfunction()
extract(readme_mpm.cpp)
extract(readme_fem.cpp)
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE} -fno-omit-frame-pointer")
endif()
string(TOUPPER "${BUILD_TYPE}" config)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${work}/build -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    "-DCMAKE_CXX_FLAGS_${config}=${CONFIG_FLAGS}"
    -DCMAKE_PREFIX_PATH=${work}/prefix -DCMAKE_CXX_FLAGS=${flags}
    -DREADME_EXAMPLES=${work})
run(${CMAKE_COMMAND} --build ${work}/build)
run(${work}/build/embed_consumer)
run(${work}/build/embed_mpm ${work}/embed_mpm.afem)
run(${work}/build/embed_poisson ${SOURCE_DIR}/../apps/data/rectangle_tri.msh)
run(${work}/build/embed_readme_mpm)
run(${work}/build/embed_readme_fem)
