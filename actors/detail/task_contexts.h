#pragma once
/// @file task_contexts.h
/// The TaskContexts one actor makes, and the worker monitors they need. Internal.

#include <memory>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>

#include "actorgrad/actors/detail/engine_actor.h"
#include "actorgrad/actors/detail/task_context.h"
#include "actorgrad/actors/detail/worker_registry.h"
#include "actorgrad/actors/observer.h"
#include "actorgrad/libengine/engine/graph_task_base.h"

namespace actorgrad::detail {

/// Makes the contexts of the tasks one actor coordinates across devices:
/// keeps the last one and hands it out again while it would be equal (Note
/// [Reused task contexts]), and monitors each worker a context names once
/// (Note [Monitors per actor]). A caller's travel with its mailbox when
/// that is parked (CallerMailbox::contexts).
class TaskContexts {
public:
  /// The context of `task`, coordinated by `self`: the kept one if it would
  /// equal a new one, else a new one (kept for the next task unless
  /// `observer` is set: an observed task's context is never reused). Reads
  /// the task's workers from `workers` (throws naming the served devices).
  std::shared_ptr<TaskContext> make(const GraphTaskBase& task,
                                    std::shared_ptr<EngineObserver>&& observer, EngineActor& self,
                                    WorkerRegistry& workers);
  /// `worker` died: its monitor went with it, and the kept context may name it.
  void worker_down(const caf::actor_addr& worker);
  /// Drops the monitors `self` holds (a caller mailbox that is destroyed,
  /// not parked: a CAF monitor outlives its monitoring actor).
  void demonitor_all(EngineActor& self);

private:
  /// Monitors `worker` from `self` unless it does already.
  void monitor(EngineActor& self, const caf::actor& worker);

  /// The workers monitored (Note [Monitors per actor]).
  std::vector<caf::actor_addr> monitored_;
  /// The context last made for an unobserved task, or null.
  std::shared_ptr<TaskContext> last_;
};

} // namespace actorgrad::detail
