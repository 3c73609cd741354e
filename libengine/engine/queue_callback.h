#pragma once
/// @file queue_callback.h
/// Running code when the backward call of the running node completes.

#include <functional>

namespace actorgrad {

/// `Variable._execution_engine.queue_callback`: runs `fn` when the backward
/// call whose node is running on this thread completes. Throws outside one.
void queue_callback(std::function<void()> fn);

} // namespace actorgrad
