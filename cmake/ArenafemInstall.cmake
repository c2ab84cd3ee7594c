# Installs the library, its headers and a package config so that another CMake project can
# find_package(arenafem) and link arenafem::arenafem.

include(CMakePackageConfigHelpers)

set(ARENAFEM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/arenafem)

install(TARGETS arenafem_memory arenafem_geometry arenafem_quadrature arenafem_fem arenafem
  EXPORT arenafemTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT arenafemTargets NAMESPACE arenafem:: DESTINATION ${ARENAFEM_INSTALL_CMAKEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/arenafemConfig.cmake.in
  ${PROJECT_BINARY_DIR}/arenafemConfig.cmake
  INSTALL_DESTINATION ${ARENAFEM_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/arenafemConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/arenafemConfig.cmake
              ${PROJECT_BINARY_DIR}/arenafemConfigVersion.cmake
  DESTINATION ${ARENAFEM_INSTALL_CMAKEDIR})
