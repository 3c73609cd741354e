#include "actorgrad/actors/detail/cpu_lanes.h"

#include <algorithm>
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

/// Hands ready task `t` (counted when it was made ready) of the call whose
/// context is `ctx` to lane `to`, in a msg::Task; `actor` is the sender as
/// observers see it.
void hand_over(const TaskContext& ctx, const ObservedActor& actor, ReadyTask&& t,
               const caf::actor& to) {
  msg::Task m{std::move(t)};
  if (ctx.observer) [[unlikely]]
    observe_sent(*ctx.observer, actor, *m.task.graph_task, m);
  post(to, std::move(m));
}

} // namespace

void share_ready_work(EngineCore& core, const EngineActor* self, const ObservedActor& actor,
                      ReadyHeap& heap, unsigned lane) {
  const std::shared_ptr<GraphTaskBase> task = heap.top().graph_task;
  const TaskContext& ctx = context_of(*task);
  // Most nodes find every other lane busy: look before sorting the heap.
  const auto wants_work = [&](const caf::actor& other) {
    const EngineActor* a = engine_actor(other);
    return a != self && a->wants_work();
  };
  if (!wants_work(ctx.coordinator) &&
      std::none_of(core.cpu_workers.begin(), core.cpu_workers.end(), wants_work))
    return;
  // The call's tasks on top of the heap, in the ready order; tasks of other
  // calls (a nested call's, another caller's on a shared worker) stop the
  // share. Leaf accumulators (the largest sequence_nr: libtorch's
  // AccumulateGrad) stay: they run next and take a microsecond, less than
  // a hand-over. So do the nodes that need their call's thread (Note
  // [Nodes that need their call's thread]). A task that this lane ran
  // last time (Note [Lanes that stay]) goes only to a lane that waits with
  // nothing to run, when no other task can.
  boost::container::small_vector<ReadyTask, 16> mine;
  while (!heap.empty() && heap.top().graph_task == task)
    mine.push_back(heap.pop());
  std::size_t first = 0;
  while (first < mine.size() &&
         mine[first].key.sequence_nr == std::numeric_limits<std::uint64_t>::max())
    ++first;
  // Each task's class, found once: it stays, it may go to any lane that
  // wants work, or only to one that waits (this lane ran it last time).
  enum class Goes : std::uint8_t { nowhere, anywhere, to_waiting_lane };
  boost::container::small_vector<Goes, 16> goes(mine.size(), Goes::nowhere);
  std::size_t free = 0;
  std::size_t placed = 0;
  for (std::size_t i = first; i < mine.size(); ++i) {
    if (task->runs_on_coordinator(mine[i]))
      continue;
    const bool placed_here = core.config.cpu_keep_lanes && task->last_lane(mine[i]) == lane + 1;
    goes[i] = placed_here ? Goes::to_waiting_lane : Goes::anywhere;
    ++(placed_here ? placed : free);
  }
  const bool give_placed = free == 0;
  const Goes given_kind = give_placed ? Goes::to_waiting_lane : Goes::anywhere;
  const std::size_t movable = give_placed ? placed : free;
  // Claim at most one lane fewer than the tasks to give, so that each lane
  // claimed gets one (give below): a lane claimed for nothing would have
  // to be told it wants work again, and by then it may have gone from
  // hungry to waiting, which that would undo.
  const std::size_t most = movable > 0 ? movable - 1 : 0;
  const EngineActor::Want least =
    give_placed ? EngineActor::Want::waiting : EngineActor::Want::hungry;
  boost::container::small_vector<caf::actor, 8> idle;
  const auto claim = [&](const caf::actor& other) {
    EngineActor* a = engine_actor(other);
    if (idle.size() < most && a != self && a->claim_idle(least))
      idle.push_back(other);
  };
  claim(ctx.coordinator);
  for (const caf::actor& worker : core.cpu_workers)
    claim(worker);
  // Each claimed lane gets as many of the movable tasks as this one keeps
  // (k lanes of at most movable - 1: at least one each), from the top: the
  // ready order puts the branches it would start next first, and keeps the
  // path they came from (an ensemble's sum of losses) here.
  const std::size_t give = movable * idle.size() / (idle.size() + 1);
  std::size_t given = 0;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (given == give || goes[i] != given_kind) {
      heap.push(std::move(mine[i]));
      continue;
    }
    hand_over(ctx, actor, std::move(mine[i]), idle[given++ % idle.size()]);
  }
  core.counters.cpu_tasks_shared.fetch_add(given, std::memory_order_relaxed);
}

bool send_to_last_lane(EngineCore& core, const ObservedActor& actor, ReadyTask& t, unsigned lane) {
  GraphTaskBase& task = *t.graph_task;
  const unsigned last = task.last_lane(t);
  if (last == 0 || last - 1 == lane || last - 1 > core.cpu_workers.size() ||
      task.runs_on_coordinator(t))
    return false;
  const TaskContext& ctx = context_of(task);
  hand_over(ctx, actor, std::move(t), last == 1 ? ctx.coordinator : core.cpu_workers[last - 2]);
  core.counters.cpu_tasks_shared.fetch_add(1, std::memory_order_relaxed);
  return true;
}

unsigned lane_of_worker(const EngineCore& core, const EngineActor* self) {
  for (std::size_t i = 0; i < core.cpu_workers.size(); ++i)
    if (engine_actor(core.cpu_workers[i]) == self)
      return static_cast<unsigned>(i + 1);
  return 0;
}

} // namespace actorgrad::detail
