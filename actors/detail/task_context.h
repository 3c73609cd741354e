#pragma once
/// @file task_context.h
/// What the actors running one GraphTask need to know about each other. Internal.

#include <memory>
#include <utility>
#include <vector>

#include <caf/actor.hpp>

#include "actorgrad/actors/observer.h"
#include "actorgrad/device/device.h"
#include "actorgrad/libengine/engine/graph_task_base.h"

namespace actorgrad::detail {

/// Stored in GraphTaskBase::executor_data before the first task runs;
/// read-only after.
struct TaskContext {
  /// The actor that coordinates the task and runs its CPU nodes (empty
  /// handle for a caller that needs no mailbox: a CPU-only task).
  caf::actor coordinator;
  /// Snapshot of the workers of the task's devices.
  std::vector<std::pair<Device, caf::actor>> workers;
  /// The engine's observers when the task started (one, or all of them as
  /// an ObserverList), or null: the switch every observation place tests
  /// once (observer_of in observation.h).
  std::shared_ptr<EngineObserver> observer;

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
inline TaskContext& context_of(const GraphTaskBase& task) {
  return *static_cast<TaskContext*>(task.executor_data.get());
}

} // namespace actorgrad::detail
