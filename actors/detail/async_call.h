#pragma once
/// @file async_call.h
/// The async coordinator: an actor that runs one backward call and reports
/// its outcome (to a future, or as a reply to a request). Internal.

#include <exception>
#include <future>
#include <memory>
#include <type_traits>
#include <utility>

#include <caf/blocking_actor.hpp>

#include "actorgrad/actors/detail/engine_core.h"
#include "actorgrad/actors/detail/foreign_thread.h"
#include "actorgrad/actors/detail/runner.h"
#include "actorgrad/libengine/engine/call_args.h"
#include "actorgrad/libengine/engine/graph_task.h"

namespace actorgrad::detail {

/// Spawns a coordinator actor for `call` and calls `done(error, gradients)`
/// once: with a null error and the captured gradients when the call
/// completed, else with the error (of its arguments: on the calling thread;
/// of its nodes: on the coordinator). `done` must not throw.
template <class Done>
void spawn_call(Executor* engine, const std::shared_ptr<EngineCore>& core, BackwardCall call,
                Done done) {
  std::shared_ptr<std::pair<std::shared_ptr<GraphTask>, ReadyTask>> created;
  try {
    created = std::make_shared<std::pair<std::shared_ptr<GraphTask>, ReadyTask>>(
      GraphTask::create(call.roots, std::move(call.root_grads), call.options, call.outputs, 0));
  } catch (...) {
    done(std::current_exception(), variable_list{});
    return;
  }
  created->first->executor = engine;
  ForeignThreadSpawn spawn_here; // see Note [CAF's thread-local logger]
  core->system.spawn([core, created, done](caf::blocking_actor* self) {
    // Take the task out of the captured holder: the actor keeps this
    // function (and its captures) until it is destroyed, and the task's
    // context holds the actor, so a task left here would never be freed.
    std::shared_ptr<GraphTask> task = std::move(created->first);
    ReadyTask first = std::move(created->second);
    variable_list grads;
    try {
      Runner runner(*core, self, ObservedActor::Role::async_coordinator, ReadyQueue{});
      runner.coordinate(task, std::move(first));
      grads = task->finish();
    } catch (...) {
      done(std::current_exception(), variable_list{});
      return;
    }
    done(std::exception_ptr{}, std::move(grads));
  });
}

/// Spawns a coordinator actor for `call` and fulfils the future with
/// `finish(captured gradients)`: errors of the call, from its arguments to
/// its nodes and `finish`, arrive through the future.
template <class R, class Finish>
std::future<R> run_async(Executor* engine, const std::shared_ptr<EngineCore>& core,
                         BackwardCall call, Finish finish) {
  auto promise = std::make_shared<std::promise<R>>();
  auto result = promise->get_future();
  spawn_call(engine, core, std::move(call),
             [promise, finish](std::exception_ptr error, variable_list grads) {
               try {
                 if (error)
                   std::rethrow_exception(error);
                 if constexpr (std::is_void_v<R>) {
                   finish(std::move(grads));
                   promise->set_value();
                 } else {
                   promise->set_value(finish(std::move(grads)));
                 }
               } catch (...) {
                 promise->set_exception(std::current_exception());
               }
             });
  return result;
}

} // namespace actorgrad::detail
