#pragma once
/// @file task_context.h
/// What the actors running one GraphTask need to know about each other. Internal.

#include <utility>
#include <vector>

#include <caf/actor.hpp>

#include "actors/trace/recorder.h"
#include "device/device.h"
#include "libengine/engine/graph_task.h"

namespace actorgrad::detail {

class TaskRunner;

/// Stored in GraphTask::executor_data before the first task runs; read-only after.
struct TaskContext {
  /// The actor that coordinates the task and runs its CPU nodes (empty
  /// handle for a caller that needs no mailbox: a CPU-only task).
  caf::actor coordinator;
  /// Identity of the ready queue that runs the task's CPU nodes: the
  /// coordinator's, or (after a depth handoff) the queue of the actor that
  /// made the reentrant call, now served by a pool worker. Compared, never
  /// dereferenced.
  const void* coordinator_queue = nullptr;
  /// Snapshot of the workers of the task's devices.
  std::vector<std::pair<Device, caf::actor>> workers;
  /// The recording this task's actors append to, or null (the switch: every
  /// recording site is one `if (ctx.recorder) [[unlikely]]`).
  std::shared_ptr<trace::Recorder> recorder;

  /// The actor that owns the nodes of device `d`: the coordinator for the
  /// CPU, else that device's worker.
  const caf::actor& owner_of(Device d) const { return d.is_cpu() ? coordinator : worker(d); }

  /// Worker handle of `d` (the task's devices are checked at start).
  const caf::actor& worker(Device d) const {
    for (const auto& [dev, handle] : workers)
      if (dev == d)
        return handle;
    return coordinator; // unreachable: checked when the task starts
  }
};

/// The context of a task run by the actor engine.
inline TaskContext& context_of(const GraphTask& task) {
  return *static_cast<TaskContext*>(task.executor_data.get());
}

} // namespace actorgrad::detail
