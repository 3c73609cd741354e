#pragma once
/// @file stream_backend.h
/// What a device type with streams implements (PyTorch's DeviceGuardImplInterface).

#include <cstdint>
#include <memory>

#include "actorgrad/device/stream.h"

namespace actorgrad {

/// A recorded event as a backend sees it; each backend derives its own.
struct EventState {
  virtual ~EventState() = default;
};

/// Streams and events of one device type. stream.h, event.h and guards.h
/// dispatch to it; kernels enqueue through the backend's own launch API.
/// Every method may be called from any thread.
class StreamBackend {
public:
  virtual ~StreamBackend() = default;

  /// Streams per device in the pool (ids 1..pool_size()).
  virtual std::uint32_t pool_size() const = 0;
  /// Makes `d` current on the calling thread (cudaSetDevice; sim: nothing).
  virtual void set_device(Device d) = 0;

  virtual void synchronize(Stream s) = 0;
  virtual bool query(Stream s) = 0;

  /// Records an event at the current end of `s`.
  virtual std::shared_ptr<const EventState> record(Stream s) = 0;
  /// Orders work enqueued on `s` from now on after `e`.
  virtual void block(Stream s, const EventState& e) = 0;
  virtual bool query(const EventState& e) = 0;
  virtual void synchronize(const EventState& e) = 0;
};

/// The backend of `t`, or null for a type without streams (the CPU, or
/// CUDA when its plugin cannot be loaded). The first call for CUDA loads
/// the plugin (device/cuda/plugin_loader.h).
StreamBackend* stream_backend(DeviceType t);

} // namespace actorgrad
