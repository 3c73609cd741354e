#pragma once
/// @file final_callback.h
/// One entry of a GraphTask's list of final callbacks. Internal.

#include <functional>

namespace actorgrad::detail {

/// A final callback (queue_callback) waiting for its GraphTask to finish.
/// Pushed lock-free by whichever actor runs the node that queues it.
struct FinalCallback {
  std::function<void()> fn;
  FinalCallback* next = nullptr;
};

} // namespace actorgrad::detail
