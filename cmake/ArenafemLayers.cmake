# The library's layers as targets: arenafem::memory < arenafem::geometry < arenafem::quadrature <
# arenafem::fem, each linking the one below, and arenafem::arenafem, the whole.
#
# Headers are included under the package's name, in the tree as once installed:
# <arenafem/fem/integrate.hpp>. Each layer gets its own include root in the build tree,
# include/<layer>/arenafem/<layer>, a link to its source folder, and a target sees only its own
# root and those of the layers it links. So a header that includes a layer above its own does not
# compile: the build itself keeps memory < geometry < quadrature < fem.

# Creates the include root of `name` (a folder of the source tree) and returns it in `out`.
function(arenafem_include_root name out)
  set(root ${PROJECT_BINARY_DIR}/include/${name})
  file(MAKE_DIRECTORY ${root}/arenafem)
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${name} ${root}/arenafem/${name} SYMBOLIC)
  set(${out} ${root} PARENT_SCOPE)
endfunction()

# arenafem_add_layer(LAYER SOURCES ... [DEPENDS target]): the static library arenafem_<LAYER>
# (exported as arenafem::<LAYER>) built from SOURCES, its headers under <arenafem/LAYER/...>,
# linking DEPENDS publicly.
function(arenafem_add_layer layer)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DEPENDS" "SOURCES")
  arenafem_include_root(${layer} root)
  add_library(arenafem_${layer} STATIC ${arg_SOURCES})
  add_library(arenafem::${layer} ALIAS arenafem_${layer})
  set_target_properties(arenafem_${layer} PROPERTIES EXPORT_NAME ${layer}
                        POSITION_INDEPENDENT_CODE ON)
  target_include_directories(arenafem_${layer} PUBLIC $<BUILD_INTERFACE:${root}>
                             $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(arenafem_${layer} PUBLIC ${arg_DEPENDS}
                        PRIVATE $<BUILD_INTERFACE:arenafem_warnings>)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/arenafem/${layer}
    FILES_MATCHING PATTERN "*.hpp")
endfunction()
