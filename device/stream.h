#pragma once
/// @file stream.h
/// Streams: in-order queues of device work (PyTorch's c10::Stream).

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "actorgrad/device/device.h"

namespace actorgrad {

/// A stream of one device: work enqueued on it runs in order, and work on
/// different streams may overlap. A value type naming the stream; the
/// backend (sim or CUDA) owns what runs it. Id 0 is the device's default
/// stream, ids 1..pool_size its pool (`stream_from_pool`).
struct Stream {
  Device device;
  std::uint32_t id = 0;

  constexpr Stream() = default;
  constexpr Stream(Device d, std::uint32_t i) : device(d), id(i) {}

  constexpr bool is_default() const { return id == 0; }
  /// `sim:0/default` or `cuda:1/stream 3`.
  std::string str() const;

  friend constexpr bool operator==(Stream a, Stream b) {
    return a.device == b.device && a.id == b.id;
  }
  friend constexpr bool operator!=(Stream a, Stream b) { return !(a == b); }
  friend constexpr bool operator<(Stream a, Stream b) {
    return a.device != b.device ? a.device < b.device : a.id < b.id;
  }
};

/// Writes `s.str()`.
std::ostream& operator<<(std::ostream& os, Stream s);

/// Whether `d` has streams and events (sim and CUDA devices; not the CPU,
/// whose work runs on the calling thread).
bool has_streams(Device d);

/// The default stream of `d`.
constexpr Stream default_stream(Device d) { return {d, 0}; }

/// A stream of `d`'s pool, handed out round-robin; throws
/// std::invalid_argument for a device without streams.
Stream stream_from_pool(Device d);

/// This thread's current stream of `d` (its default stream until set).
Stream current_stream(Device d);

/// Makes `s` this thread's current stream of `s.device`. Prefer StreamGuard.
void set_current_stream(Stream s);

/// This thread's current streams that are not their device's default, one
/// per device: what another thread needs to act as this one would.
std::vector<Stream> thread_current_streams();

/// Blocks the calling thread until all work enqueued on `s` so far has run;
/// rethrows the first error a kernel on `s` raised.
void synchronize(Stream s);

/// True when all work enqueued on `s` so far has run.
bool query(Stream s);

} // namespace actorgrad

template <>
struct std::hash<actorgrad::Stream> {
  std::size_t operator()(actorgrad::Stream s) const noexcept {
    return std::hash<actorgrad::Device>{}(s.device) * 31 + s.id;
  }
};
