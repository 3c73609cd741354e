# The optional CUDA backend (DESIGN.md section 4): built when a working nvcc
# is found, unless -DACTORGRAD_CUDA=OFF, as the plugin libactorgrad_cuda.so
# (libengine/CMakeLists.txt), loaded on the first use of a CUDA device. Sets
# ACTORGRAD_WITH_CUDA for the subdirectories (device/, libengine/, tests/)
# and ACTORGRAD_CUDA_PLUGIN_DIR, the plugin's folder in the build tree.
option(ACTORGRAD_CUDA "Build the CUDA backend when nvcc is found" ON)
set(ACTORGRAD_WITH_CUDA OFF)
if(ACTORGRAD_CUDA)
  include(CheckLanguage)
  # nvcc is not on every PATH. A hint through CUDACXX (not CMAKE_CUDA_COMPILER,
  # which would make check_language skip its test) keeps the check real.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX}
     AND EXISTS /usr/local/cuda/bin/nvcc)
    set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90) # H100 / H200
    endif()
    # One CUDA runtime per process: the shared one, as CUDA::cudart links.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    if(CCACHE_PROGRAM)
      set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
    endif()
    enable_language(CUDA)
    # CMake 3.25 knows no C++20 flag for nvcc: the .cu files (and the few
    # headers they include) are C++17; after enable_language, whose probe
    # must not ask for a standard.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(ACTORGRAD_WITH_CUDA ON)
  endif()
endif()
if(ACTORGRAD_WITH_CUDA)
  # The build tree's binaries find the plugin through their RUNPATH (the
  # install replaces it; there they look next to themselves and in libdir).
  set(ACTORGRAD_CUDA_PLUGIN_DIR ${PROJECT_BINARY_DIR}/lib)
  list(APPEND CMAKE_BUILD_RPATH ${ACTORGRAD_CUDA_PLUGIN_DIR})
  message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "CUDA backend: off (no nvcc found, or ACTORGRAD_CUDA=OFF)")
endif()
