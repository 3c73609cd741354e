#pragma once
/// @file messages.h
/// Every message the actor engine sends, in one place.
///
/// Where they are sent:   TaskRunner::deliver, TaskRunner::finish_task,
///                        Engine::start_on_owner, Engine::~Engine.
/// Where they are handled: TaskRunner::handle (task_runner.cpp).
///
/// These messages stay inside one process and carry shared_ptrs to engine
/// state, so they are declared with CAF_ALLOW_UNSAFE_MESSAGE_TYPE (CAF 0.17's
/// way to send a type without serialization; 0.17 has no type-id lists).
/// Messages that cross processes are separate, serializable types.

#include <cstdint>
#include <memory>

#include <caf/allowed_unsafe_message_type.hpp>

#include "libengine/autograd/edge.h"
#include "libengine/engine/graph_task.h"
#include "libengine/engine/node_task.h"

namespace actorgrad::msg {

/// A gradient for input `next.input_nr` of `next.function`, sent by the
/// actor that produced it to the actor that owns that node. Counted in the
/// task's outstanding_tasks from send to handling.
struct Grad {
  std::shared_ptr<GraphTask> task;
  Edge next;
  Tensor grad;
};

/// A ready NodeTask handed to its owner (the first task of a GraphTask whose
/// root node lives on a device). Counted like a ready task.
struct Task {
  NodeTask task;
};

/// Tells a coordinator that one of its GraphTasks reached zero outstanding
/// work on another actor (PyTorch's wake-up NodeTask). Handling it is a
/// no-op: the waiting loop re-checks its exit condition after every message.
struct WakeUp {
  std::uint64_t task_id;
};

/// Stops a DeviceWorker (sent with high priority; ranks first in the heap).
struct Shutdown {};

} // namespace actorgrad::msg

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Grad)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Task)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::WakeUp)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Shutdown)
