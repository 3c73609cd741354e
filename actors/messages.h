#pragma once
/// @file messages.h
/// Every message the actor engine sends, in one place.
///
/// Where they are sent:    TaskRunner::{coordinate, deliver, finish_one,
///                         coordinate_in_pool, serve_handoff}, ReentrantPool,
///                         Engine::~Engine.
/// Where they are handled: TaskRunner::handle and TaskRunner::coordinate_in_pool
///                         (task_runner.cpp), ReentrantPool/PoolWorker::act
///                         (reentrant_pool.cpp).
///
/// These messages stay inside one process and carry shared_ptrs to engine
/// state, so they are declared with CAF_ALLOW_UNSAFE_MESSAGE_TYPE (CAF 0.17's
/// way to send a type without serialization; 0.17 has no type-id lists).
/// Messages that cross processes are separate, serializable types.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <caf/actor.hpp>
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
  /// The stream of the node that produced `grad` (devices with streams).
  std::optional<Stream> producer;
  /// Recorded on `producer` right after `grad` was produced: the receiver's
  /// accumulation stream waits for it (see Note [Accumulation streams]).
  Event ready{};
  /// Pairs the send and receive of this message in a recording (0: not recorded).
  std::uint64_t trace = 0;
};

/// A ready NodeTask handed to its owner (the first task of a GraphTask whose
/// root node lives on a device). Counted like a ready task.
struct Task {
  NodeTask task;
  /// Pairs the send and receive of this message in a recording (0: not recorded).
  std::uint64_t trace = 0;
};

/// Tells a coordinator that one of its GraphTasks reached zero outstanding
/// work on another actor (PyTorch's wake-up NodeTask). Handling it is a
/// no-op: the waiting loop re-checks its exit condition after every message.
struct WakeUp {
  std::uint64_t task_id;
  /// Pairs the send and receive of this message in a recording (0: not recorded).
  std::uint64_t trace = 0;
};

/// Work to run on a device's actor between node tasks (used for forward
/// passes scheduled on the device that owns their tensors). Runs when the
/// message is drained, in arrival order.
struct Job {
  std::function<void()> fn;
};

/// Stops a DeviceWorker, the ReentrantPool or a pool worker (sent with
/// high priority; ranks first in a worker's heap).
struct Shutdown {};

/// A reentrant call past max_recursion_depth: the calling actor hands its
/// whole ready queue (heap and identity) and the nested GraphTask to a pool
/// worker, which serves both until the nested task completes. Sent to the
/// ReentrantPool, which forwards it to an idle (or new) pool worker.
struct Handoff {
  std::shared_ptr<GraphTask> task;
  NodeTask first;
  ReadyHeap heap;
  /// Identity of the queue handed over (see TaskContext::coordinator_queue).
  const void* queue;
  /// The device whose nodes the queue holds, for a DeviceWorker's queue.
  std::optional<Device> worker_device;
  /// The actor waiting for its queue back.
  caf::actor requester;
};

/// A pool worker tells the requester it now serves its queue: from here on
/// the requester forwards what reaches its mailbox to `worker`.
struct Serving {
  caf::actor worker;
};

/// The queue goes back to the requester once the nested task completed.
struct HandBack {
  ReadyHeap heap;
};

/// A pool worker is free again (sent to the ReentrantPool).
struct Idle {
  caf::actor worker;
};

} // namespace actorgrad::msg

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Grad)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Task)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::WakeUp)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Shutdown)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Handoff)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Serving)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::HandBack)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Idle)
