#pragma once
/// @file event.h
/// Events: points in a stream that other streams and the host can wait for.

#include <memory>
#include <optional>

#include "actorgrad/device/stream.h"

namespace actorgrad {

struct EventState;

/// A marker recorded in a stream (PyTorch's c10::Event). Once recorded it
/// completes when all work enqueued on that stream before the record has
/// run. Copies share the recorded point. An event that was never recorded
/// is complete, and waiting for it does nothing (as in CUDA).
class Event {
public:
  Event() = default;

  /// Marks the current end of `s`; a later record moves the mark.
  void record(Stream s);
  /// An event recorded on `s` now.
  static Event recorded_on(Stream s);

  /// Makes work enqueued on `s` from now on wait until this event completes
  /// (cudaStreamWaitEvent); the host does not block.
  void block(Stream s) const;
  /// True when the event completed (or was never recorded).
  bool query() const;
  /// Blocks the host until the event completes.
  void synchronize() const;

  bool recorded() const { return state_ != nullptr; }
  /// The stream it was recorded on.
  std::optional<Stream> stream() const;

private:
  std::shared_ptr<const EventState> state_;
  Stream stream_;
};

} // namespace actorgrad
