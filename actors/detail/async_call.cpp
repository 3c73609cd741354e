#include "actorgrad/actors/detail/async_call.h"

#include <tuple>

#include "actorgrad/actors/detail/coordinator_pool.h"
#include "actorgrad/actors/detail/post.h"
#include "actorgrad/libengine/engine/detail/current_exception_or_unwind.h"
#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/engine/detail/graph_task.h"

namespace actorgrad::detail {

namespace {

/// A coordinator `self` that finished a call or job parks itself (Note
/// [Idle coordinator slot]), unless calls wait in the pool (Note [Calls that
/// wait for a coordinator] in coordinator_pool.cpp): then it reports Idle.
void park_or_report_idle(EngineCore& core, const caf::actor& self) {
  caf::actor parked = self; // the slot's reference
  if (!core.idle_coordinator.park(parked) ||
      (core.calls_waiting.load() && core.idle_coordinator.unpark(self)))
    post(core.pool, msg::Idle{self});
}

} // namespace

void spawn_call(Executor* engine, const std::shared_ptr<EngineCore>& core, BackwardCall call,
                std::shared_ptr<CallDone> done) {
  caf::actor parked = core->idle_coordinator.take(); // Note [Idle coordinator slot]
  if (!parked && current_graph_task()) {             // Note [Async calls made inside a node]
    core->counters.async_calls_run_inline.fetch_add(1, std::memory_order_relaxed);
    run_here(engine, std::move(call), *done);
    return;
  }
  msg::AsyncCall m{std::move(call), CallerState::of_this_thread(), engine, std::move(done)};
  if (parked)
    static_cast<AsyncCoordinator*>(caf::actor_cast<caf::abstract_actor*>(parked))
      ->hand(std::move(m));
  else
    post(core->pool, std::move(m));
}

void spawn_job(const std::shared_ptr<EngineCore>& core, std::shared_ptr<CallDone> job) {
  msg::AsyncCall m{{}, {}, nullptr, std::move(job), /*job=*/true};
  if (caf::actor parked = core->idle_coordinator.take()) // Note [Idle coordinator slot]
    static_cast<AsyncCoordinator*>(caf::actor_cast<caf::abstract_actor*>(parked))
      ->hand(std::move(m));
  else
    post(core->pool, std::move(m));
}

void run_here(Executor* engine, BackwardCall&& call, CallDone& done) {
  std::exception_ptr error;
  variable_list grads;
  try {
    grads = engine->execute(call.roots, std::move(call.root_grads), call.options, call.outputs);
  } catch (...) {
    error = current_exception_or_unwind(); // Note [A thread that exits inside a node]
  }
  call = {};
  done(error, std::move(grads));
}

/// Runs the job in `call` (Note [Jobs that wait outside the engine]) and
/// parks its coordinator `self` again, or tells the pool that it is idle.
void run_job(Runner& runner, msg::AsyncCall&& call, const caf::actor& self) {
  (*call.done)(nullptr, {}); // must not throw (CallDone)
  call.done.reset();
  park_or_report_idle(runner.core(), self);
}

void run_call(Runner& runner, msg::AsyncCall&& call, const caf::actor& self) {
  if (call.job)
    return run_job(runner, std::move(call), self);
  std::exception_ptr error;
  variable_list grads;
  try {
    std::shared_ptr<GraphTask> task;
    ReadyTask first;
    {
      const CallerScope as_the_caller(call.caller); // Note [Async tasks made on their coordinator]
      BackwardCall& c = call.call;
      std::tie(task, first) =
        GraphTask::create(c.roots, std::move(c.root_grads), c.options, c.outputs, 0);
    }
    task->executor = call.engine;
    runner.coordinate(task, std::move(first));
    grads = task->finish();
  } catch (...) {
    error = current_exception_or_unwind(); // Note [A thread that exits inside a node]
  }
  call.call = {}; // its roots and inputs, released before `done` as the task is
  park_or_report_idle(runner.core(), self);
  (*call.done)(error, std::move(grads));
}

} // namespace actorgrad::detail
