#include "actorgrad/actors/detail/task_contexts.h"

#include <algorithm>
#include <utility>

#include <caf/actor_cast.hpp>

namespace actorgrad::detail {

// Note [Monitors per actor]
// A coordinator monitors the workers of its task, so that a dead worker
// fails the task instead of hanging it. An actor monitors each worker once
// (TaskContexts::monitored_) and keeps the monitor until the worker's down
// message erases it or the actor ends; frames that end do not demonitor.
// Two reasons:
// CAF 0.17.6's demonitor removes *every* monitor an actor holds on another
// (monitorable_actor::detach drops all matching attachables), so a nested
// call (coordinated by the same actor as its parent) that demonitored at
// its end would silently drop its parent's monitor, and a worker dying
// later would hang the parent; and a monitor and a demonitor per call cost
// about 1,000 instructions. A down message for a worker no frame uses only
// erases it. A monitor outlives its monitoring actor in CAF (the worker
// keeps the attachable until it dies), so a caller mailbox that is
// destroyed rather than parked demonitors first (CallerMailboxLease::release).

// Note [Reused task contexts]
// A TaskContext is read-only once made (every actor of the task reads it
// through executor_data), and consecutive calls of one actor mostly have
// the same one: the same coordinator and device workers. So an actor keeps
// the last context it made and hands it to the next task whose context
// would equal it, instead of allocating one (and its workers list) per
// call: about 400 instructions of a 2-node call rooted on a device. Equal
// is checked on every call: the same coordinator and devices, each of
// their workers alive. Only a terminated worker is ever replaced (is_dead
// in worker_registry.h), so a live handle is still its slot's current one,
// known without loading the slot (an atomic shared_ptr); a worker that
// died gives a new context, never a dead handle. Unobserved calls only: a
// kept context must not keep an observer alive after the engine dropped
// it. A caller's context names its mailbox as the coordinator, so it
// travels with the mailbox when that is parked (CallerMailbox::contexts).

std::shared_ptr<TaskContext> TaskContexts::make(const GraphTaskBase& task,
                                                std::shared_ptr<EngineObserver>&& observer,
                                                EngineActor& self, WorkerRegistry& workers) {
  const DeviceList& devices = task.devices();
  const TaskContext* last = last_.get();
  const bool comparable = !observer && last &&
                          caf::actor_cast<caf::abstract_actor*>(last->coordinator) == &self &&
                          last->workers.size() == devices.size();
  auto same_and_alive = [](Device d, const std::pair<Device, caf::actor>& w) {
    return w.first == d && !is_dead(w.second);
  };
  if (comparable &&
      std::equal(devices.begin(), devices.end(), last->workers.begin(), same_and_alive))
    return last_;
  auto coordinator = caf::actor_cast<caf::actor>(&self);
  // Each worker handle is read once: the one monitored is the one kept. A
  // worker `last` holds was monitored when `last` was made, by this actor
  // (`last` names it as the coordinator), and a monitor is only dropped
  // when its worker dies (Note [Monitors per actor]).
  std::shared_ptr<TaskContext> ctx; // made at the first difference from `last`
  for (std::size_t i = 0; i < devices.size(); ++i) {
    caf::actor w = workers.worker(devices[i]); // throws naming the served devices
    if (!ctx && comparable && last->workers[i].first == devices[i] && last->workers[i].second == w)
      continue;
    if (w != coordinator)
      monitor(self, w);
    if (!ctx) {
      ctx = std::make_shared<TaskContext>();
      ctx->workers.reserve(devices.size());
      if (i > 0) // the first i equal `last`'s
        ctx->workers.assign(last->workers.begin(), last->workers.begin() + i);
    }
    ctx->workers.emplace_back(devices[i], std::move(w));
  }
  if (!ctx && comparable)
    return last_;
  if (!ctx)
    ctx = std::make_shared<TaskContext>();
  ctx->coordinator = std::move(coordinator);
  if (observer)
    ctx->observer = std::move(observer);
  else
    last_ = ctx;
  return ctx;
}

void TaskContexts::monitor(EngineActor& self, const caf::actor& worker) {
  const caf::actor_addr addr = worker.address();
  if (std::find(monitored_.begin(), monitored_.end(), addr) != monitored_.end())
    return;
  monitored_.push_back(addr);
  self.monitor(worker);
}

void TaskContexts::worker_down(const caf::actor_addr& worker) {
  std::erase(monitored_, worker); // the monitor is gone with the worker
  last_.reset();                  // it may hold the dead worker (Note [Reused task contexts])
}

void TaskContexts::demonitor_all(EngineActor& self) {
  for (const caf::actor_addr& worker : monitored_) // Note [Monitors per actor]
    self.demonitor(worker);
  monitored_.clear();
}

} // namespace actorgrad::detail
