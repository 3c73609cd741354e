#pragma once
/// @file launch_support.cuh
/// Launch sizes, grid-stride loops and launch checks shared by the .cu files.

#include <algorithm>
#include <cstdint>

#include <cuda_runtime.h>

#include "actorgrad/device/cuda/plugin/cuda_error.h"
#include "actorgrad/libengine/tensor/cuda/detail/launch.h"

namespace actorgrad::kernels::cuda::detail {

inline constexpr int block_threads = 256;

/// Blocks of block_threads for a grid-stride loop over `n` items: one item
/// per thread up to a grid that fills the GPU many times over.
inline unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(
    std::clamp<std::int64_t>((n + block_threads - 1) / block_threads, 1, 1 << 16));
}

/// This thread's first item of a grid-stride loop.
__device__ inline std::int64_t grid_first() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

/// The step of a grid-stride loop.
__device__ inline std::int64_t grid_step() {
  return static_cast<std::int64_t>(blockDim.x) * gridDim.x;
}

/// Throws std::runtime_error naming the op and device when the last launch failed.
inline void check_launch(const Launch& l) {
  actorgrad::cuda::plugin::check(cudaGetLastError(), l.op, l.stream.device);
}

} // namespace actorgrad::kernels::cuda::detail
