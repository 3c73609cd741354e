#pragma once
/// @file async_call.h
/// The async coordinator: an actor that runs one backward call and fulfils
/// a future. Internal.

#include <future>
#include <memory>
#include <type_traits>
#include <utility>

#include <caf/blocking_actor.hpp>

#include "actors/detail/engine_core.h"
#include "actors/detail/foreign_thread.h"
#include "actors/detail/runner.h"
#include "libengine/engine/call_args.h"
#include "libengine/engine/graph_task.h"

namespace actorgrad::detail {

/// Spawns a coordinator actor for `call` and fulfils the future with
/// `finish(captured gradients)`: errors of the call, from its arguments to
/// its nodes, arrive through the future.
template <class R, class Finish>
std::future<R> run_async(Executor* engine, const std::shared_ptr<EngineCore>& core,
                         BackwardCall call, Finish finish) {
  auto promise = std::make_shared<std::promise<R>>();
  auto result = promise->get_future();
  try {
    auto created = std::make_shared<std::pair<std::shared_ptr<GraphTask>, ReadyTask>>(
      GraphTask::create(call.roots, std::move(call.root_grads), call.options, call.outputs, 0));
    created->first->executor = engine;
    ForeignThreadSpawn spawn_here; // see Note [CAF's thread-local logger]
    core->system.spawn([core, created, promise, finish](caf::blocking_actor* self) {
      // Take the task out of the captured holder: the actor keeps this
      // function (and its captures) until it is destroyed, and the task's
      // context holds the actor, so a task left here would never be freed.
      std::shared_ptr<GraphTask> task = std::move(created->first);
      ReadyTask first = std::move(created->second);
      try {
        Runner runner(*core, self, ObservedActor::Role::async_coordinator, ReadyQueue{});
        runner.coordinate(task, std::move(first));
        if constexpr (std::is_void_v<R>) {
          finish(task->finish());
          promise->set_value();
        } else {
          promise->set_value(finish(task->finish()));
        }
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
    });
  } catch (...) {
    promise->set_exception(std::current_exception());
  }
  return result;
}

} // namespace actorgrad::detail
