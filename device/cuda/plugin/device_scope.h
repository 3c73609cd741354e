#pragma once
/// @file device_scope.h
/// The CUDA device current on the calling thread, set for a scope.

#include "actorgrad/device/device.h"

namespace actorgrad::cuda::plugin {

/// Makes CUDA device `d` current on the calling thread (cudaSetDevice) for
/// a scope and restores the previous one after; costs one cudaGetDevice
/// when `d` already is current. Unlike DeviceGuard it leaves the thread's
/// tracked current device alone: the backend, the allocator and the kernels
/// hold one around every runtime call that acts on the current device
/// (launches and records on the default stream, cudaMalloc).
class DeviceScope {
public:
  /// Throws std::runtime_error naming `d` when it cannot be made current.
  explicit DeviceScope(Device d);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

private:
  int previous_ = -1; ///< -1: nothing to restore
};

} // namespace actorgrad::cuda::plugin
