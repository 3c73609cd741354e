#pragma once
/// @file guards.h
/// Scoped current device and current stream (PyTorch's DeviceGuard and StreamGuard).

#include <optional>

#include "device/stream.h"

namespace actorgrad {

/// This thread's current device of type `t` (index 0 until set).
Device current_device(DeviceType t);

/// Makes `d` the current device of its type for a scope (cudaSetDevice on
/// CUDA), restoring the previous one after.
class DeviceGuard {
public:
  explicit DeviceGuard(Device d);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
  Device previous_;
};

/// Makes `s` the current stream of its device, and the device current, for
/// a scope; restores both after. Sets nothing when `s` is already current.
class StreamGuard {
public:
  explicit StreamGuard(Stream s);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

private:
  DeviceGuard device_;
  Stream previous_;
};

/// A StreamGuard when given a stream, nothing otherwise.
class OptionalStreamGuard {
public:
  explicit OptionalStreamGuard(const std::optional<Stream>& s) {
    if (s)
      guard_.emplace(*s);
  }

private:
  std::optional<StreamGuard> guard_;
};

} // namespace actorgrad
