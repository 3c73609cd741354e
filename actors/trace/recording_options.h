#pragma once
/// @file recording_options.h
/// How Engine::start_recording records (actors/trace/recorder.h).

#include <cstddef>
#include <cstdint>
#include <functional>

namespace actorgrad::trace {

/// Options of a recording.
struct RecordingOptions {
  /// Keep only the events of the last `keep_passes` top-level backward
  /// calls (with the reentrant calls they made); older ones are dropped
  /// from memory as new ones finish, so a long program's recording stays
  /// bounded (Note [Keeping the last passes] in recorder.h: with calls on
  /// several threads, every call from the oldest of the last N or the
  /// oldest still running on). 0: keep every pass.
  std::size_t keep_passes = 0;
  /// With keep_passes 0: `on_large` is called once, on the actor whose
  /// event made the recording's event memory reach `warn_bytes` (0:
  /// never), with the top-level passes finished by then and the bytes held.
  std::size_t warn_bytes = 0;
  std::function<void(std::uint64_t passes, std::size_t bytes)> on_large;

  /// Keeps the last `passes` passes (0: all).
  static RecordingOptions last(std::size_t passes) {
    RecordingOptions o;
    o.keep_passes = passes;
    return o;
  }
};

} // namespace actorgrad::trace
