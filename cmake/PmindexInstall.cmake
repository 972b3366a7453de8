# Install rules: the public headers, the library, a CMake package (find_package(pmindex)
# gives pmindex::pmindex) and a pkg-config file (pmindex.pc).
include(CMakePackageConfigHelpers)

set(PMINDEX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/pmindex)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/pmindex
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(TARGETS pmindex EXPORT pmindexTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT pmindexTargets NAMESPACE pmindex:: DESTINATION ${PMINDEX_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/pmindexConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/pmindexConfig.cmake
                              INSTALL_DESTINATION ${PMINDEX_CMAKE_DIR})
# 0.x: minor versions may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pmindexConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/pmindexConfig.cmake
              ${PROJECT_BINARY_DIR}/pmindexConfigVersion.cmake
        DESTINATION ${PMINDEX_CMAKE_DIR})

# pkg-config: relocatable (prefix found from the .pc file's own place). A static libpmindex
# needs libpmem2 and threads on the link line of every user; a shared one only at its own.
file(RELATIVE_PATH PMINDEX_PC_TO_PREFIX
     /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" PMINDEX_PC_TO_PREFIX "${PMINDEX_PC_TO_PREFIX}")
if(BUILD_SHARED_LIBS)
  set(PMINDEX_PC_REQUIRES "")
  set(PMINDEX_PC_REQUIRES_PRIVATE "libpmem2")
  set(PMINDEX_PC_LIBS_PRIVATE "-pthread")
  set(PMINDEX_PC_LIBS "")
else()
  set(PMINDEX_PC_REQUIRES "libpmem2")
  set(PMINDEX_PC_REQUIRES_PRIVATE "")
  set(PMINDEX_PC_LIBS_PRIVATE "")
  set(PMINDEX_PC_LIBS "-pthread")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/pmindex.pc.in ${PROJECT_BINARY_DIR}/pmindex.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pmindex.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# The license travels with every installed copy.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/pmindex)
