#pragma once
/// @file launch_observer.h
/// Seeing the device work a thread launches and when its stream runs it,
/// for a profiler (the engine's recorder shows it as stream tracks).

#include <chrono>
#include <cstdint>
#include <functional>

#include "actorgrad/device/stream.h"

namespace actorgrad {

/// What an item of device work is.
enum class DeviceWork : std::uint8_t {
  none,   ///< not device work
  kernel, ///< a kernel
  copy,   ///< a copy between buffers (and devices)
  wait,   ///< a stream waits for an event of another stream
  record, ///< an event is recorded: it completes when the stream reaches it
};

/// `kernel`, `copy`, `wait`, `record` (`none` for none).
const char* device_work_name(DeviceWork w);
/// Inverse of device_work_name.
DeviceWork parse_device_work(const char* name);

/// One item of device work as its launcher sees it.
struct DeviceLaunch {
  DeviceWork kind = DeviceWork::kernel;
  /// The kernel's name (a string literal: it is kept as a pointer).
  const char* op = "";
  /// The stream it goes to (for a wait, the stream that waits).
  Stream stream;
  /// For a wait, the stream waited for; for a record, the stream recorded.
  Stream source;
  /// For a wait or a record: the event's point on `source` (its work numbered
  /// from 1 in enqueue order); it completes when that item has run.
  std::uint64_t point = 0;
};

/// When a stream ran an item: both on std::chrono::steady_clock.
using DeviceRun =
  std::function<void(std::uint64_t point, std::chrono::steady_clock::time_point start,
                     std::chrono::steady_clock::time_point end)>;

/// Told about the device work launched from one thread while it is that
/// thread's observer (ScopedLaunchObserver). The engine installs one while a
/// node of a recorded backward runs.
class LaunchObserver {
public:
  virtual ~LaunchObserver() = default;
  /// The calling thread is about to enqueue `work`. Returns what the stream
  /// calls once the item ran, with its point (empty: nothing to call; a wait
  /// that is already satisfied or a record is never called back).
  virtual DeviceRun launched(const DeviceLaunch& work) = 0;
};

/// The calling thread's launch observer, or null (the common case: one
/// thread-local load).
LaunchObserver* launch_observer();

/// Makes `observer` the calling thread's launch observer for the scope's
/// lifetime (restoring the previous one after).
class ScopedLaunchObserver {
public:
  explicit ScopedLaunchObserver(LaunchObserver* observer);
  ~ScopedLaunchObserver();
  ScopedLaunchObserver(const ScopedLaunchObserver&) = delete;
  ScopedLaunchObserver& operator=(const ScopedLaunchObserver&) = delete;

private:
  LaunchObserver* previous_;
};

} // namespace actorgrad
