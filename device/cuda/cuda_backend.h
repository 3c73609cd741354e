#pragma once
/// @file cuda_backend.h
/// The CUDA backend: streams and events of CUDA devices on the CUDA runtime,
/// served by the CUDA plugin (plugin.h), which the first call here loads.
///
/// Stream id 0 of `cuda:N` is that device's legacy default (null) stream,
/// as PyTorch's default stream: shared by every thread and by libraries that
/// use the null stream. It orders with blocking streams but not with the
/// pool streams, which are created non-blocking. Ids 1..pool_size are the
/// device's pool, created on first use. The project is built without
/// per-thread default streams (nvcc's `--default-stream legacy`), so the
/// null handle means the legacy stream everywhere.
///
/// This header needs no CUDA header, and calling it links no CUDA library.

#include "actorgrad/device/stream_backend.h"

struct CUstream_st;
/// The CUDA runtime's stream handle, declared as in its driver_types.h.
typedef struct CUstream_st* cudaStream_t;

namespace actorgrad::cuda {

/// CUDA devices visible to this process; 0 when the CUDA plugin cannot be
/// loaded, or there is no driver or no device (the error is swallowed).
/// Counted once.
int device_count();

/// At least one CUDA device is usable.
bool available();

/// The runtime handle of `s` (null for a default stream), creating the
/// device's pool streams on first use. Throws std::invalid_argument for a
/// stream that is not of a visible CUDA device or beyond the pool, and
/// std::runtime_error when the runtime fails or the plugin cannot be loaded.
cudaStream_t native_stream(Stream s);

} // namespace actorgrad::cuda
