#include "actorgrad/actors/detail/cpu_lanes.h"

#include <boost/container/small_vector.hpp>

#include "actorgrad/actors/detail/observation.h"
#include "actorgrad/actors/detail/post.h"
#include "actorgrad/actors/detail/task_context.h"
#include "actorgrad/actors/messages.h"

namespace actorgrad::detail {

namespace {

EngineActor* engine_actor(const caf::actor& a) {
  return static_cast<EngineActor*>(caf::actor_cast<caf::abstract_actor*>(a));
}

} // namespace

void share_ready_work(EngineCore& core, const EngineActor* self, const ObservedActor& actor,
                      ReadyHeap& heap) {
  if (heap.top().is_shutdown() || !heap.top().graph_task->spread())
    return;
  const std::shared_ptr<GraphTaskBase> task = heap.top().graph_task;
  const TaskContext& ctx = context_of(*task);
  // Claim at most one idle lane per task this lane does not keep.
  const std::size_t most = heap.size() - 1;
  boost::container::small_vector<caf::actor, 8> idle;
  const auto claim = [&](const caf::actor& lane) {
    if (idle.size() < most && engine_actor(lane) != self && engine_actor(lane)->claim_idle())
      idle.push_back(lane);
  };
  claim(ctx.coordinator);
  for (const caf::actor& worker : core.cpu_workers)
    claim(worker);
  if (idle.empty())
    return;
  // Each claimed lane gets as many as this one keeps; tasks of other calls
  // (a nested call's, another caller's on a shared worker) stop the share.
  const std::size_t give = heap.size() * idle.size() / (idle.size() + 1);
  std::size_t given = 0;
  while (given < give && heap.top().graph_task == task) {
    msg::Task m{heap.pop()}; // counted when it was pushed
    if (ctx.observer) [[unlikely]]
      observe_sent(*ctx.observer, actor, *task, m);
    post(idle[given % idle.size()], std::move(m));
    ++given;
  }
  for (std::size_t i = given; i < idle.size(); ++i)
    engine_actor(idle[i])->set_idle(true); // claimed for nothing: idle again
  core.counters.cpu_tasks_shared.fetch_add(given, std::memory_order_relaxed);
}

} // namespace actorgrad::detail
