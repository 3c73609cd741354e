#include "actors/engine.h"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/detail/engine_core.h"
#include "actors/detail/reentrant_pool.h"
#include "actors/detail/task_runner.h"
#include "actors/messages.h"
#include "libengine/engine/call_args.h"

namespace actorgrad {

namespace {

std::unique_ptr<caf::actor_system_config> make_system_config(const EngineConfig& config) {
  auto cfg = std::make_unique<caf::actor_system_config>();
  cfg->set("scheduler.max-threads", config.scheduler_threads);
  return cfg;
}

int reentrant_depth_here() {
  GraphTask* parent = current_graph_task();
  return parent ? parent->reentrant_depth + 1 : 0;
}

} // namespace

Engine::Engine(EngineConfig config)
  : own_config_(make_system_config(config)),
    own_system_(std::make_unique<caf::actor_system>(*own_config_)),
    core_(std::make_shared<detail::EngineCore>(*own_system_, std::move(config))) {
  spawn_actors();
}

Engine::Engine(caf::actor_system& system, EngineConfig config)
  : core_(std::make_shared<detail::EngineCore>(system, std::move(config))) {
  spawn_actors();
}

void Engine::spawn_actors() {
  for (std::size_t i = 0; i < core_->num_workers; ++i)
    core_->replace_worker(core_->workers[i], nullptr);
  core_->pool = core_->system.spawn<detail::ReentrantPool>(core_);
}

Engine::~Engine() {
  core_->shutting_down.store(true);
  {
    caf::scoped_actor self{core_->system, true};
    for (std::size_t i = 0; i < core_->num_workers; ++i) {
      caf::actor w = *core_->workers[i].handle.load();
      caf::anon_send<caf::message_priority::high>(w, msg::Shutdown{});
      self->wait_for(w);
    }
    caf::anon_send<caf::message_priority::high>(core_->pool, msg::Shutdown{});
    self->wait_for(core_->pool);
  }
  // The actors hold the core and the core holds their handles: drop the
  // handles now, while the actor system that owns them still exists.
  for (std::size_t i = 0; i < core_->num_workers; ++i)
    core_->workers[i].handle.store(nullptr);
  core_->pool = caf::actor{};
  core_.reset();
  own_system_.reset(); // waits for every actor it still runs
}

variable_list Engine::execute(const edge_list& roots, variable_list root_grads,
                              const ExecuteOptions& options, const edge_list& outputs) {
  auto [task, first] =
    GraphTask::create(roots, std::move(root_grads), options, outputs, reentrant_depth_here());
  task->executor = this;
  // A call made inside a node (reentrant backward) is coordinated by the
  // actor running that node, which keeps serving its own heap meanwhile.
  auto* runner = detail::TaskRunner::current();
  if (runner && &runner->core() == core_.get()) {
    runner->coordinate(task, std::move(first));
  } else {
    detail::TaskRunner caller(*core_, nullptr, std::nullopt);
    caller.coordinate(task, std::move(first));
  }
  return task->finish();
}

namespace {

// Spawns a coordinator actor for `call` and fulfils the future with
// `finish(captured gradients)`: errors of the call, from its arguments to
// its nodes, arrive through the future.
template <class R, class Finish>
std::future<R> run_async(Executor* engine, const std::shared_ptr<detail::EngineCore>& core,
                         BackwardCall call, Finish finish) {
  auto promise = std::make_shared<std::promise<R>>();
  auto result = promise->get_future();
  auto complete = [promise, finish](const std::shared_ptr<GraphTask>& task) {
    if constexpr (std::is_void_v<R>) {
      finish(task->finish());
      promise->set_value();
    } else {
      promise->set_value(finish(task->finish()));
    }
  };
  try {
    auto created = std::make_shared<std::pair<std::shared_ptr<GraphTask>, NodeTask>>(
      GraphTask::create(call.roots, std::move(call.root_grads), call.options, call.outputs, 0));
    created->first->executor = engine;
    core->system.spawn([core, created, promise, complete](caf::blocking_actor* self) {
      // Take the task out of the captured holder: the actor keeps this
      // function (and its captures) until it is destroyed, and the task's
      // context holds the actor, so a task left here would never be freed.
      std::shared_ptr<GraphTask> task = std::move(created->first);
      NodeTask first = std::move(created->second);
      try {
        detail::TaskRunner runner(*core, self, std::nullopt);
        runner.coordinate(task, std::move(first));
        complete(task);
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
    });
  } catch (...) {
    promise->set_exception(std::current_exception());
  }
  return result;
}

} // namespace

std::future<variable_list> Engine::execute_async(edge_list roots, variable_list root_grads,
                                                 ExecuteOptions options, edge_list outputs) {
  BackwardCall call{std::move(roots), std::move(root_grads), options, std::move(outputs)};
  return run_async<variable_list>(this, core_, std::move(call), [](variable_list v) { return v; });
}

std::future<void> Engine::backward_async(const variable_list& tensors,
                                         const variable_list& grad_tensors,
                                         std::optional<bool> retain_graph, bool create_graph,
                                         const variable_list& inputs) {
  auto call = make_backward_call(tensors, grad_tensors, retain_graph, create_graph, inputs);
  return run_async<void>(this, core_, std::move(call), [](const variable_list&) {});
}

std::future<variable_list> Engine::grad_async(const variable_list& outputs,
                                              const variable_list& inputs,
                                              const variable_list& grad_outputs,
                                              std::optional<bool> retain_graph, bool create_graph,
                                              bool allow_unused) {
  auto call = make_grad_call(outputs, inputs, grad_outputs, retain_graph, create_graph);
  return run_async<variable_list>(this, core_, std::move(call), [inputs, allow_unused](variable_list v) {
    return check_grad_results(std::move(v), inputs, allow_unused);
  });
}

caf::actor_system& Engine::system() { return core_->system; }
const EngineConfig& Engine::config() const { return core_->config; }
caf::actor Engine::worker(Device device) const { return core_->worker(device); }

void Engine::post(Device device, std::function<void()> job) {
  caf::anon_send(core_->worker(device), msg::Job{std::move(job)});
}

EngineStats Engine::stats() const {
  return {core_->max_reentrant_frames.load(), core_->handoffs.load(), core_->pool_workers.load()};
}

void Engine::start_recording() {
  core_->recording.store(std::make_shared<trace::Recorder>(), std::memory_order_release);
}

trace::Trace Engine::stop_recording() {
  auto recorder = core_->recording.exchange(nullptr, std::memory_order_acq_rel);
  return recorder ? recorder->snapshot() : trace::Trace{};
}

} // namespace actorgrad
