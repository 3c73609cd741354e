# Dependencies come from Debian packages; nothing is downloaded at build time.
# CAF ships no CMake config or pkg-config file: FindCAF.cmake (installed with
# actorgradConfig.cmake) wraps it in imported targets.
find_package(CAF REQUIRED)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(Threads REQUIRED)
# Boost's headers (package libboost-dev): a Node keeps its edges and input
# metadata in boost::container::small_vector (Note [Edges inside the node]
# in libengine/autograd/node.h).
find_package(Boost 1.74 REQUIRED)
# Only what the parts being built need: as a subproject, the libraries need
# none of the following.
if(ACTORGRAD_BUILD_TOOLS)
  # The command line's flag parser (header-only; package libcli11-dev).
  find_package(CLI11 2.1 REQUIRED CONFIG)
endif()
if(ACTORGRAD_BUILD_TESTS)
  find_package(Boost 1.74 REQUIRED COMPONENTS unit_test_framework)
endif()
if(ACTORGRAD_BUILD_BENCH)
  find_package(benchmark QUIET)
endif()

# libtorch is optional: the cross-checks, the comparison benchmark and the
# torch bridge (ACTORGRAD_TORCH: AUTO builds the bridge when libtorch is
# found, ON requires it, OFF never builds it).
# An AUTO/ON/OFF cache option `name`; sets `out` to its value in upper case.
function(actorgrad_tristate_option name doc out)
  # As a subproject the optional parts are off unless asked for.
  if(PROJECT_IS_TOP_LEVEL)
    set(default AUTO)
  else()
    set(default OFF)
  endif()
  set(${name} ${default} CACHE STRING "${doc}: AUTO, ON or OFF")
  set_property(CACHE ${name} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${${name}}" value)
  if(NOT value MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${name}='${${name}}': use AUTO, ON or OFF")
  endif()
  set(${out} ${value} PARENT_SCOPE)
endfunction()

actorgrad_tristate_option(ACTORGRAD_TORCH "Build the torch bridge (actorgrad_torch)" torch_option)
if(NOT torch_option STREQUAL "OFF" OR ACTORGRAD_BUILD_TESTS OR ACTORGRAD_BUILD_BENCH)
  find_package(Torch QUIET PATHS /usr/lib/x86_64-linux-gnu/cmake/Torch)
endif()
if(Torch_FOUND)
  message(STATUS "libtorch found: cross-checks and the libtorch benchmark are built")
else()
  message(STATUS "libtorch not found: its cross-check and benchmark are skipped")
endif()
set(ACTORGRAD_WITH_TORCH OFF)
if(torch_option STREQUAL "ON" AND NOT Torch_FOUND)
  message(FATAL_ERROR "ACTORGRAD_TORCH=ON but libtorch was not found (Debian package "
                      "libtorch-dev; tools/setup.sh installs it), or set ACTORGRAD_TORCH=AUTO/OFF")
elseif(Torch_FOUND AND NOT torch_option STREQUAL "OFF")
  set(ACTORGRAD_WITH_TORCH ON)
  message(STATUS "torch bridge (actorgrad_torch) is built")
endif()

# The Python bridge (ACTORGRAD_PYTHON: AUTO builds the actorgrad Python package
# when the torch bridge is built and Debian's python3-torch and pybind11-dev are
# found, ON requires them, OFF never builds it). Debian's torch imports only
# in Debian's Python: Python3_EXECUTABLE defaults to /usr/bin/python3.
actorgrad_tristate_option(ACTORGRAD_PYTHON "Build the Python package actorgrad (torch bridge)" python_option)
set(ACTORGRAD_WITH_PYTHON OFF)
if(ACTORGRAD_WITH_TORCH AND NOT python_option STREQUAL "OFF")
  if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python3 QUIET COMPONENTS Interpreter Development.Module)
  find_package(pybind11 CONFIG QUIET)
  find_library(TORCH_PYTHON_LIBRARY torch_python)
  if(Python3_FOUND AND pybind11_FOUND AND TORCH_PYTHON_LIBRARY)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import torch"
                    RESULT_VARIABLE python_torch_missing OUTPUT_QUIET ERROR_QUIET)
  endif()
  if(Python3_FOUND AND pybind11_FOUND AND TORCH_PYTHON_LIBRARY AND NOT python_torch_missing)
    set(ACTORGRAD_WITH_PYTHON ON)
    message(STATUS "Python bridge (package actorgrad for ${Python3_EXECUTABLE}) is built")
  endif()
endif()
if(python_option STREQUAL "ON" AND NOT ACTORGRAD_WITH_PYTHON)
  message(FATAL_ERROR "ACTORGRAD_PYTHON=ON needs the torch bridge, python3-torch, pybind11-dev "
                      "and libtorch_python (tools/setup.sh --with-test-deps installs them)")
endif()
