#pragma once
/// @file require_gpu.h
/// Global fixture of the CUDA tests: exits 77 (ctest SKIP_RETURN_CODE) when
/// no CUDA device is present. Declare it before any other global fixture:
/// `BOOST_TEST_GLOBAL_FIXTURE(RequireGpu);`

#include <cstdio>
#include <cstdlib>

#include "actorgrad/device/cuda/cuda_backend.h"

namespace actorgrad::testing {

struct RequireGpu {
  RequireGpu() {
    if (cuda::available())
      return;
    std::puts("no CUDA device: skipped");
    std::fflush(stdout);
    std::exit(77);
  }
};

} // namespace actorgrad::testing
