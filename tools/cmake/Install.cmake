# `cmake --install` and `cpack -G DEB`: the libraries as exported targets
# actorgrad::{device,engine,actors,trace,torch} and actorgrad::actorgrad (the
# usual set: actors + trace), their headers under include/actorgrad/, the
# `actorgrad` command line, actorgradConfig.cmake (+ version, FindCAF.cmake)
# and actorgrad.pc. The same names work inside the tree (ALIAS targets), for
# add_subdirectory(actorgrad) consumers.
include(CMakePackageConfigHelpers)

set(library_targets actorgrad_device actorgrad_engine actorgrad_actors actorgrad_trace)
if(ACTORGRAD_WITH_TORCH)
  list(APPEND library_targets actorgrad_torch)
endif()
foreach(target ${library_targets})
  string(REPLACE "actorgrad_" "" name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  add_library(actorgrad::${name} ALIAS ${target})
endforeach()
add_library(actorgrad_all INTERFACE)
set_target_properties(actorgrad_all PROPERTIES EXPORT_NAME actorgrad)
target_link_libraries(actorgrad_all INTERFACE actorgrad_actors actorgrad_trace)
add_library(actorgrad::actorgrad ALIAS actorgrad_all)

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/actorgrad)
install(TARGETS ${library_targets} actorgrad_all EXPORT actorgradTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT actorgradTargets NAMESPACE actorgrad:: DESTINATION ${config_dir})
if(TARGET actorgrad)
  install(TARGETS actorgrad RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# The CUDA plugin: not linked by anyone (no export), loaded from libdir on
# the first use of a CUDA device (device/cuda/plugin_loader.h).
if(TARGET actorgrad_cuda)
  install(TARGETS actorgrad_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# Headers: the public API only, one folder per library under
# include/actorgrad/, as included in the tree ("actorgrad/actors/engine.h").
# Left out: the internals (detail/ folders, *_impl.h, actors/messages.h: the
# engine's own messages; an application's requests are actors/requests.h),
# the Python module's (they need Python.h), the CUDA plugin's (the CUDA
# runtime's), and the torch bridge's but for actors/torch/install.h (its
# graph type, libengine/torch/, is the bridge's own).
# tools/check_installed_headers.py (run by the packaging test) fails when an
# installed header includes one that is not installed, or an internal one is
# installed.
set(header_excludes PATTERN python EXCLUDE PATTERN plugin EXCLUDE PATTERN torch EXCLUDE
  PATTERN detail EXCLUDE PATTERN "*_impl.h" EXCLUDE PATTERN messages.h EXCLUDE)
foreach(dir libengine actors device tools/trace)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/actorgrad/${dir}
    FILES_MATCHING PATTERN "*.h" ${header_excludes})
endforeach()
if(ACTORGRAD_WITH_TORCH)
  install(FILES ${PROJECT_SOURCE_DIR}/actors/torch/install.h
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/actorgrad/actors/torch)
endif()
install(FILES ${PROJECT_BINARY_DIR}/generated/actorgrad/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/actorgrad)

configure_package_config_file(tools/cmake/actorgradConfig.cmake.in
  ${PROJECT_BINARY_DIR}/actorgradConfig.cmake INSTALL_DESTINATION ${config_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/actorgradConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/actorgradConfig.cmake
  ${PROJECT_BINARY_DIR}/actorgradConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/tools/cmake/FindCAF.cmake
  DESTINATION ${config_dir})

# pkg-config: static libraries, so every library and dependency is listed
# (no CUDA library: the plugin links those).
set(pc_libs "-lactorgrad_trace -lactorgrad_actors -lactorgrad_engine -lactorgrad_device")
set(pc_libs "${pc_libs} -Wl,--undefined=actorgrad_actor_engine_registrar -lcaf_io -lcaf_core -pthread")
configure_file(tools/cmake/actorgrad.pc.in ${PROJECT_BINARY_DIR}/actorgrad.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/actorgrad.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# cpack -G DEB (in the build folder): one package, libraries (static),
# the CUDA plugin, headers, CMake and pkg-config files, the command line,
# the Python package.
set(CPACK_PACKAGE_NAME actorgrad)
set(CPACK_PACKAGE_VENDOR "actorgrad")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Reverse-mode autograd engine scheduled by actors (CAF)")
set(CPACK_PACKAGE_CONTACT "actorgrad developers <actorgrad@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(deb_depends "libcaf-dev (>= 0.17.6), libeigen3-dev, libboost-dev (>= 1.74), libstdc++6 (>= 12)")
if(ACTORGRAD_WITH_TORCH)
  string(APPEND deb_depends ", libtorch-dev (>= 1.13)")
endif()
if(ACTORGRAD_WITH_PYTHON)
  string(APPEND deb_depends ", python3-torch (>= 1.13)")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${deb_depends}")
include(CPack)
