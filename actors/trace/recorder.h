#pragma once
/// @file recorder.h
/// The engine's own profiler of message flow (DESIGN.md section 2,
/// "Profiling message flow"): Debian's CAF has no actor profiler.
///
/// How it is used: Engine::start_recording() makes a Recorder; every
/// GraphTask started from then on keeps it in its TaskContext, and each
/// actor that runs part of such a task appends events to its own
/// EventBuffer of that Recorder. Engine::stop_recording() takes a snapshot
/// (Trace). Tasks that were not started while recording carry a null
/// recorder: the actors then pay one predictable branch per recording
/// site and nothing else.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "actors/trace/event.h"
#include "actors/trace/event_buffer.h"

namespace actorgrad::trace {

/// One recording. Thread-safe and lock-free: buffers are registered
/// through an atomic push list, message ids come from an atomic counter,
/// and snapshot() may run while actors keep appending.
class Recorder {
public:
  Recorder();
  /// Frees the buffers. The actors' references (TaskContext) keep a
  /// Recorder alive while they may still write to it.
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  /// A new buffer for the actor named `actor`, owned by the Recorder and
  /// valid for its lifetime. An actor opens one per Recorder and appends to
  /// it alone.
  EventBuffer& open_buffer(std::string actor);

  /// A fresh id that pairs a message's send with its receive (never 0).
  std::uint64_t next_message_id() { return next_message_id_.fetch_add(1, std::memory_order_relaxed); }

  /// Nanoseconds since this recording started, on the one monotonic clock
  /// every actor uses.
  std::int64_t now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                epoch_)
      .count();
  }

  /// Everything published so far: one Track per buffer, in the order the
  /// buffers were opened. May run while actors keep appending.
  Trace snapshot() const;

private:
  const std::chrono::steady_clock::time_point epoch_;
  std::atomic<std::uint64_t> next_message_id_{1};
  /// Most recently opened first.
  std::atomic<EventBuffer*> buffers_{nullptr};
};

} // namespace actorgrad::trace
