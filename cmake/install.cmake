# `cmake --install BUILD [--prefix PREFIX]`: the solver core as a library a
# game or tool links, with its headers, a CMake package and pkg-config
# files. Included last by the root CMakeLists.txt, once every target exists.
#
#   find_package(posewire CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE posewire::core)   # solvers
#   target_link_libraries(app PRIVATE posewire::assets) # + BVH/glTF readers
#   target_link_libraries(app PRIVATE posewire::client) # + the gRPC client
#
# or `pkg-config --cflags --libs posewire-core` (posewire-assets,
# posewire-client). tests/install builds two programs outside the tree
# against an installed copy, with each.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(POSEWIRE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/posewire)

# Headers are included as "solver_core/...", from the source root here and
# from the include directory once installed.
target_include_directories(posewire_core PUBLIC
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# Determinism travels with the headers: their inline math must not be
# contracted into FMAs, or reassociated, in the files of a program that
# includes them either.
target_compile_options(posewire_core INTERFACE -ffp-contract=off
                                               -fno-fast-math)
set_target_properties(posewire_core PROPERTIES EXPORT_NAME core)
set_target_properties(posewire_assets PROPERTIES EXPORT_NAME assets)
set(posewire_installed_targets posewire_core posewire_assets)
# The public headers, without the families' internal/ folders, plus the
# one internal layer public inline code needs: the SIMD lanes that
# transform.h, pose.h and quaternion_math.h compose with (as a library of
# inline math installs its detail headers). Programs include the public
# headers only; install_test.sh compiles them all against the prefix.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/solver_core/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/solver_core
        FILES_MATCHING PATTERN "*.h"
        PATTERN "internal" EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/solver_core/model/internal/simd_lanes.h
              ${PROJECT_SOURCE_DIR}/solver_core/model/internal/simd_lanes_avx2.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/solver_core/model/internal)

if(POSEWIRE_BUILD_SERVICE)
  # The C++ client with what its header needs: the generated messages
  # ("posewire/v1/*.pb.h") and the wire conversions.
  target_include_directories(posewire_proto PUBLIC
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  set_target_properties(posewire_proto PROPERTIES EXPORT_NAME proto)
  set_target_properties(posewire_wire PROPERTIES EXPORT_NAME wire)
  set_target_properties(posewire_client PROPERTIES EXPORT_NAME client)
  list(APPEND posewire_installed_targets posewire_proto posewire_wire
       posewire_client)
  install(DIRECTORY ${PROJECT_BINARY_DIR}/proto/posewire/
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/posewire
          FILES_MATCHING PATTERN "*.pb.h")
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/proto/posewire/
          DESTINATION ${CMAKE_INSTALL_DATADIR}/posewire/proto/posewire
          FILES_MATCHING PATTERN "*.proto")
  install(FILES ${PROJECT_SOURCE_DIR}/server/wire/wire_convert.h
                ${PROJECT_SOURCE_DIR}/server/wire/field_name.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/server/wire)
  install(FILES ${PROJECT_SOURCE_DIR}/clients/cpp/posewire_client.h
                ${PROJECT_SOURCE_DIR}/clients/cpp/frame_batcher.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/clients/cpp)
endif()

install(TARGETS ${posewire_installed_targets} EXPORT posewireTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT posewireTargets NAMESPACE posewire::
        DESTINATION ${POSEWIRE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/posewireConfig.cmake.in
  ${PROJECT_BINARY_DIR}/posewireConfig.cmake
  INSTALL_DESTINATION ${POSEWIRE_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/posewireConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/posewireConfig.cmake
              ${PROJECT_BINARY_DIR}/posewireConfigVersion.cmake
        DESTINATION ${POSEWIRE_CMAKE_DIR})

# pkg-config: posewire-core (the solvers), posewire-assets (+ readers) and,
# with the service, posewire-client (+ the gRPC client and its messages).
# Relocatable: the prefix is found from the .pc file's own place, so
# `cmake --install --prefix` anywhere gives working files.
file(RELATIVE_PATH POSEWIRE_PC_TO_PREFIX
     /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
set(posewire_pc_names core assets)
if(POSEWIRE_BUILD_SERVICE)
  list(APPEND posewire_pc_names client)
endif()
foreach(pc_name ${posewire_pc_names})
  configure_file(${PROJECT_SOURCE_DIR}/cmake/posewire-${pc_name}.pc.in
                 ${PROJECT_BINARY_DIR}/posewire-${pc_name}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/posewire-${pc_name}.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
