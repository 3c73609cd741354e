#include "actorgrad/actors/detail/cpu_lanes.h"

#include <cstdint>
#include <limits>

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
    EngineActor* a = engine_actor(lane);
    if (idle.size() < most && a != self && a->claim_idle())
      idle.push_back(lane);
  };
  claim(ctx.coordinator);
  for (const caf::actor& worker : core.cpu_workers)
    claim(worker);
  if (idle.empty())
    return;
  // The call's tasks on top of the heap, in the ready order; tasks of other
  // calls (a nested call's, another caller's on a shared worker) stop the
  // share. Leaf accumulators (the largest sequence_nr: libtorch's
  // AccumulateGrad) stay: they run next and take a microsecond, less than
  // a hand-over. So do the nodes that need their call's thread (Note
  // [Nodes that need their call's thread]). Each claimed lane gets as
  // many of the others as this one keeps, from the top: the ready order
  // puts the branches it would start next first, and keeps the path they
  // came from (an ensemble's sum of losses) here.
  boost::container::small_vector<ReadyTask, 16> mine;
  while (!heap.empty() && heap.top().graph_task == task)
    mine.push_back(heap.pop());
  std::size_t first = 0;
  while (first < mine.size() &&
         mine[first].key.sequence_nr == std::numeric_limits<std::uint64_t>::max())
    ++first;
  const auto stays = [&](std::size_t i) { return i < first || task->runs_on_coordinator(mine[i]); };
  std::size_t movable = 0;
  for (std::size_t i = 0; i < mine.size(); ++i)
    movable += !stays(i);
  const std::size_t give = movable * idle.size() / (idle.size() + 1);
  std::size_t given = 0;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (given == give || stays(i)) {
      heap.push(std::move(mine[i]));
      continue;
    }
    msg::Task m{std::move(mine[i])}; // counted when it was pushed
    if (ctx.observer) [[unlikely]]
      observe_sent(*ctx.observer, actor, *task, m);
    post(idle[given++ % idle.size()], std::move(m));
  }
  for (std::size_t i = given; i < idle.size(); ++i)
    engine_actor(idle[i])->set_idle(true); // claimed for nothing: idle again
  core.counters.cpu_tasks_shared.fetch_add(given, std::memory_order_relaxed);
}

} // namespace actorgrad::detail
