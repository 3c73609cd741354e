# Dependencies come from Debian packages; nothing is downloaded at build time.
# CAF ships no CMake config or pkg-config file: wrap it in imported targets.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
find_library(CAF_IO_LIBRARY caf_io REQUIRED)
add_library(caf::core UNKNOWN IMPORTED)
set_target_properties(caf::core PROPERTIES IMPORTED_LOCATION ${CAF_CORE_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR})
add_library(caf::io UNKNOWN IMPORTED)
set_target_properties(caf::io PROPERTIES IMPORTED_LOCATION ${CAF_IO_LIBRARY}
  INTERFACE_LINK_LIBRARIES caf::core)

find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(Threads REQUIRED)
# The command line's flag parser (header-only; package libcli11-dev).
find_package(CLI11 2.1 REQUIRED CONFIG)
find_package(Boost 1.74 REQUIRED COMPONENTS unit_test_framework)
find_package(benchmark QUIET)

# libtorch is optional: only the cross-check test and the comparison benchmark use it.
find_package(Torch QUIET PATHS /usr/lib/x86_64-linux-gnu/cmake/Torch)
if(Torch_FOUND)
  message(STATUS "libtorch found: cross-checks and the libtorch benchmark are built")
else()
  message(STATUS "libtorch not found: its cross-check and benchmark are skipped")
endif()
