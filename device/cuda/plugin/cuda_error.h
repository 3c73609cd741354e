#pragma once
/// @file cuda_error.h
/// Checked CUDA runtime calls: a failure becomes an exception naming the
/// call, the device and the runtime's message. Internal to the CUDA backend
/// and the CUDA kernels (it includes the CUDA runtime header).

#include <cuda_runtime_api.h>

#include "actorgrad/device/device.h"

namespace actorgrad::cuda::plugin {

/// Throws std::runtime_error "`call` on `device`: <cudaGetErrorString>"
/// unless `err` is cudaSuccess. Clears the runtime's last error first, so
/// that a reported (non-sticky) error does not surface again at a later
/// launch check.
void check(cudaError_t err, const char* call, Device device);

} // namespace actorgrad::cuda::plugin
