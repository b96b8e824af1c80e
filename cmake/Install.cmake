# Install rules (included by the top CMakeLists.txt once every target is
# defined). `cmake --install <build> --prefix <p>` gives:
#
#   <p>/include/kctx/*.h                  the public headers
#   <p>/lib/libkctx.so*, libkctx_sim.so*  the libraries (RUNPATH $ORIGIN)
#   <p>/bin/kctx                          the tool (RUNPATH $ORIGIN/../lib)
#   <p>/share/kctx/examples/callables/    the example images (kctx demo, probe)
#   <p>/lib/pkgconfig/kctx.pc             pkg-config --cflags --libs kctx
#   <p>/lib/cmake/kctx/                   find_package(kctx): kctx::kctx, kctx::sim
include(CMakePackageConfigHelpers)

set(KCTX_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kctx)

install(TARGETS kctx kctx_sim EXPORT kctxTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT devel
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kctx
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT devel
  FILES_MATCHING PATTERN "*.h")
# Each platform's public headers (its declaration's PUBLIC_HEADERS, in its
# folder's include/kctx/), installed beside kctx.h.
kctx_platforms_members(kctx_platform_headers PUBLIC_HEADERS ${KCTX_KNOWN_PLATFORMS})
install(FILES ${kctx_platform_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kctx COMPONENT devel)
# Each platform's Python module (PYTHON) into the Python package, when
# scikit-build-core builds the wheel (python/pyproject.toml), with the
# generated list the package imports (_platforms.py, cmake/Python.cmake).
if(DEFINED SKBUILD_PLATLIB_DIR)
  kctx_platforms_members(kctx_platform_python PYTHON ${KCTX_KNOWN_PLATFORMS})
  install(FILES ${kctx_platform_python} ${PROJECT_BINARY_DIR}/python/kctx/_platforms.py
          DESTINATION ${SKBUILD_PLATLIB_DIR}/kctx COMPONENT runtime)
endif()

install(EXPORT kctxTargets NAMESPACE kctx:: FILE kctxTargets.cmake
  DESTINATION ${KCTX_INSTALL_CMAKEDIR} COMPONENT devel)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kctxConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kctxConfig.cmake
  INSTALL_DESTINATION ${KCTX_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kctxConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kctxConfig.cmake ${PROJECT_BINARY_DIR}/kctxConfigVersion.cmake
  DESTINATION ${KCTX_INSTALL_CMAKEDIR} COMPONENT devel)

# pkg-config: paths relative to the .pc file's own place, so that a moved
# prefix still works (pkg-config's ${pcfiledir}).
file(RELATIVE_PATH KCTX_PC_PREFIX_REL
  /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" KCTX_PC_PREFIX_REL "${KCTX_PC_PREFIX_REL}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/kctx.pc.in ${PROJECT_BINARY_DIR}/kctx.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kctx.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT devel)
