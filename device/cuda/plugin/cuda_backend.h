#pragma once
/// @file cuda_backend.h
/// The CUDA plugin's stream backend (the streams of cuda/cuda_backend.h),
/// on the CUDA runtime.

#include "actorgrad/device/cuda/cuda_backend.h"

namespace actorgrad::cuda::plugin {

/// CUDA devices visible to this process; 0 when there is no driver or no
/// device (no_device_reason() says which). Counted once.
int device_count();

/// Why device_count() is 0, in the runtime's words ("cudaGetDeviceCount:
/// CUDA driver version is insufficient for CUDA runtime version"); empty
/// when it is not.
const char* no_device_reason();

/// The CUDA device type's stream backend (process-wide, never destroyed).
StreamBackend& backend();

/// As cuda::native_stream.
cudaStream_t native_stream(Stream s);

} // namespace actorgrad::cuda::plugin
