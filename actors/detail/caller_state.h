#pragma once
/// @file caller_state.h
/// What creating a GraphTask reads of the calling thread, carried to the
/// thread that creates it for the caller. Internal.

#include <vector>

#include "actorgrad/device/stream.h"

namespace actorgrad::detail {

// Note [Async tasks made on their coordinator]
// An asynchronous call's GraphTask was made on the caller's thread and
// destroyed on its coordinator's, and glibc's thread caches work against
// that: the coordinator's fill up with the caller's blocks and it frees the
// rest through the arena, while the caller, which frees none, makes each
// block anew on malloc's slow path. The node table's and the input
// buffers' own caches (Note [Node table memory]) stayed with the
// coordinator for the same reason. So the caller sends the call's
// arguments and the coordinator makes the task, from the same thread that
// runs and destroys it. Creating a task reads two things of the thread it
// runs on: its current streams (stash: the end of the call makes them wait
// for the leaf streams) and anomaly mode. The caller takes them with
// CallerState::of_this_thread, and the coordinator creates the task inside
// a CallerScope that puts them in place.

/// The calling thread's state that GraphTask::create reads.
struct CallerState {
  /// The caller's current streams other than the defaults.
  std::vector<Stream> streams;
  /// The caller's anomaly mode.
  bool anomaly = false;

  /// This thread's.
  static CallerState of_this_thread();
};

/// Makes this thread look like the caller's, for a scope, to GraphTask::create:
/// its streams current and its anomaly mode; restores the thread's own after.
class CallerScope {
public:
  explicit CallerScope(const CallerState& caller);
  ~CallerScope();
  CallerScope(const CallerScope&) = delete;
  CallerScope& operator=(const CallerScope&) = delete;

private:
  CallerState own_;
};

} // namespace actorgrad::detail
