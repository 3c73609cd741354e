#pragma once
/// @file guards.h
/// Scoped current device and current stream (PyTorch's DeviceGuard and StreamGuard).

#include <array>
#include <cstddef>
#include <optional>

#include "actorgrad/device/stream.h"

namespace actorgrad {

namespace detail {
/// This thread's current device of each type. Constant-initialized, so
/// reading it is a plain thread-local load (the guards run twice per node).
extern constinit thread_local std::array<Device, 3> current_devices;
} // namespace detail

/// This thread's current device of type `t` (index 0 until set).
inline Device current_device(DeviceType t) {
  return detail::current_devices[static_cast<std::size_t>(t)];
}

/// Makes `d` the current device of its type for a scope (cudaSetDevice on
/// CUDA), restoring the previous one after. Costs two loads when `d` is
/// already current, as it is on a device worker.
class DeviceGuard {
public:
  explicit DeviceGuard(Device d) : previous_(current_device(d.type)) {
    if (d != previous_)
      set(d);
  }
  ~DeviceGuard() {
    if (current_device(previous_.type) != previous_)
      set(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
  /// Makes `d` current: the backend first, then this thread's record.
  static void set(Device d);

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
