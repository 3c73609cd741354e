#include "actorgrad/actors/engine.h"

#include <optional>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "actorgrad/actors/detail/async_call.h"
#include "actorgrad/actors/detail/check_config.h"
#include "actorgrad/actors/detail/coordinator_pool.h"
#include "actorgrad/actors/detail/device_worker.h"
#include "actorgrad/actors/detail/engine_core.h"
#include "actorgrad/actors/detail/foreign_thread.h"
#include "actorgrad/actors/detail/post.h"
#include "actorgrad/actors/detail/request_server.h"
#include "actorgrad/actors/detail/runner.h"
#include "actorgrad/actors/trace/recorder.h"
#include "actorgrad/libengine/engine/detail/call_args.h"
#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/engine/detail/graph_task.h"

namespace actorgrad {

namespace {

std::unique_ptr<caf::actor_system_config> make_system_config(const EngineConfig& config) {
  detail::check_config(config); // before CAF sees scheduler_threads
  auto cfg = std::make_unique<caf::actor_system_config>();
  cfg->set("scheduler.max-threads", config.scheduler_threads);
  return cfg;
}

int reentrant_depth_here() {
  GraphTaskBase* parent = detail::current_graph_task();
  return parent ? parent->reentrant_depth + 1 : 0;
}

/// Reuses a caller's queue storage between its calls (see Note [Caller
/// scratch reuse]).
thread_local detail::ReadyHeap::Storage spare_caller_heap;

class CallerRunner;
/// The call without a Runner that runs on this thread, or null.
thread_local CallerRunner* runner_less_call = nullptr;

/// A caller thread's Runner for one call, made when first needed: at once
/// for a call that needs one, or by the first call that a node of a call
/// without one makes (Note [A top-level CPU call needs no Runner]), then
/// kept for that call's other nested calls. Its ready heap comes from
/// spare_caller_heap and goes back there (Note [Caller scratch reuse]).
class CallerRunner {
public:
  explicit CallerRunner(detail::EngineCore& core) : core_(core) {}
  CallerRunner(const CallerRunner&) = delete;
  CallerRunner& operator=(const CallerRunner&) = delete;
  ~CallerRunner() {
    if (runner_less_call == this)
      runner_less_call = nullptr;
    if (runner_)
      keep_heap_storage();
  }

  const detail::EngineCore& core() const { return core_; }

  detail::Runner& get() {
    if (!runner_)
      runner_.emplace(core_, nullptr, ObservedActor::Role::caller,
                      detail::ReadyQueue{detail::ReadyHeap(std::move(spare_caller_heap)),
                                         detail::new_queue_id(), Device::cpu()});
    return *runner_;
  }

  /// Runs `task` straight through on this thread; a call that one of its
  /// nodes makes gets the Runner from get().
  void run_without_runner(GraphTaskBase& task, detail::ReadyTask&& first) {
    runner_less_call = this;
    task.run_all_here(std::move(first));
  }

private:
  /// Leaves the Runner's empty heap's storage to the next caller Runner of
  /// this thread. Out of line: most calls have no Runner.
  [[gnu::noinline]] void keep_heap_storage() {
    if (detail::ReadyQueue q = runner_->take_queue(); q.heap.empty())
      spare_caller_heap = q.heap.take_storage();
  }

  detail::EngineCore& core_;
  std::optional<detail::Runner> runner_;
};

} // namespace

// Note [Caller scratch reuse]
// A synchronous backward that needs a Runner (not a top-level CPU call:
// below) builds one on the caller's thread for the call only. Its ready
// heap would start empty every call and regrow (for a graph whose heap
// holds w tasks: log2(w) reallocations moving every ReadyTask). So a
// caller's runner takes the heap storage the previous one on this thread
// left behind (empty, with its capacity), as PyTorch's thread-local
// local_ready_queue keeps its heap between calls. Only this thread touches
// it: no synchronization. It keeps the heap's vectors only (72 bytes of
// every thread's TLS block, against 304 for a whole ReadyHeap with its
// places for a few tasks).
//
// Note [A top-level CPU call needs no Runner]
// A call made while no GraphTask runs on this thread, whose every node is a
// CPU node and which no observer watches, would get a caller Runner only to
// run its task straight through run_all_here (Note [CPU calls on a caller]
// in runner.cpp), never using its queue, frames or mailbox. So Engine::run
// runs such a task itself: about 400 instructions less of a 2-node call.
// The first call that one of its nodes makes creates the Runner that the
// outer call would have had (CallerRunner), and the later ones use it, so
// nested calls cost what they did and the depth limit counts the same
// frames. Only when no Runner is current: the Runner made then is destroyed
// when the outer call ends, and the Runners of a thread must end in the
// reverse order of their making (each restores the one current before it).

Engine::Engine(EngineConfig config)
  : own_config_(make_system_config(config)),
    own_system_(std::make_unique<caf::actor_system>(*own_config_)),
    core_(std::make_shared<detail::EngineCore>(*own_system_, std::move(config))) {
  spawn_actors();
  // The system's constructor left its logger on this thread too (see Note
  // [CAF's thread-local logger]): drop it, so any thread may destroy the engine.
  detail::ForeignThreadSpawn::forget(*own_system_);
}

Engine::Engine(caf::actor_system& system, EngineConfig config)
  : core_((detail::check_config(config),
           std::make_shared<detail::EngineCore>(system, std::move(config)))) {
  spawn_actors();
}

void Engine::spawn_actors() {
  core_->start_workers();
  // Filled before any call can read it; a worker's own Runner reads the
  // config, not this list, which is still growing as the workers start.
  core_->cpu_workers.reserve(core_->config.cpu_workers - 1);
  for (std::size_t i = 1; i < core_->config.cpu_workers; ++i)
    core_->cpu_workers.push_back(core_->start<detail::DeviceWorker>(
      "actorgrad.cpu", core_, Device::cpu(), ObservedActor::Role::cpu_worker));
  core_->pool = core_->start<detail::CoordinatorPool>("actorgrad.pool", core_);
  core_->requests = detail::spawn_request_server(this, core_);
}

Engine::~Engine() {
  core_->workers.begin_shutdown();
  {
    detail::ForeignThreadSpawn spawn_here;
    caf::scoped_actor self{core_->system, true};
    for (const caf::actor& w : core_->workers.current()) {
      detail::post<caf::message_priority::high>(w, msg::Shutdown{});
      self->wait_for(w);
    }
    for (const caf::actor& w : core_->cpu_workers) {
      detail::post<caf::message_priority::high>(w, msg::Shutdown{});
      self->wait_for(w);
    }
    detail::post<caf::message_priority::high>(core_->pool, msg::Shutdown{});
    detail::post<caf::message_priority::high>(core_->requests, msg::Shutdown{});
    self->wait_for(core_->pool, core_->requests);
  }
  core_->threads.join_all(); // Note [Engine threads are joined]
  // The actors hold the core and the core holds their handles: drop the
  // handles (and a parked caller mailbox) now, while the actor system that
  // owns them still exists.
  core_->idle_caller_mailbox.take();
  core_->workers.clear();
  core_->cpu_workers.clear();
  core_->pool = caf::actor{};
  core_->requests = caf::actor{};
  core_.reset();
  own_system_.reset(); // waits for every actor it still runs
}

void Engine::run(const std::shared_ptr<GraphTaskBase>& task, detail::ReadyTask&& first) {
  task->executor = this;
  // A call made inside a node (reentrant backward) is coordinated by the
  // actor running that node, which keeps serving its own queue meanwhile.
  auto* runner = detail::Runner::current();
  if (runner && &runner->core() == core_.get()) {
    runner->coordinate(task, std::move(first));
    return;
  }
  if (!runner && runner_less_call && &runner_less_call->core() == core_.get()) {
    runner_less_call->get().coordinate(task, std::move(first));
    return;
  }
  CallerRunner caller(*core_);
  if (!detail::current_graph_task() && task->devices().empty() && core_->cpu_workers.empty() &&
      !core_->observers.current() && !task->takes_later_roots()) {
    // Note [A top-level CPU call needs no Runner]
    caller.run_without_runner(*task, std::move(first));
    return;
  }
  caller.get().coordinate(task, std::move(first));
}

variable_list Engine::execute(const edge_list& roots, variable_list root_grads,
                              const ExecuteOptions& options, const edge_list& outputs) {
  auto [task, first] = detail::GraphTask::create(roots, std::move(root_grads), options, outputs,
                                                 reentrant_depth_here());
  run(task, std::move(first));
  return task->finish();
}

void Engine::add_root(const GraphTaskBase& task, detail::ReadyTask&& root) {
  detail::post(detail::context_of(task).coordinator, msg::Task{std::move(root)});
}

void Engine::fail(GraphTaskBase& task, std::exception_ptr error) {
  task.set_error(std::move(error));
  // Its coordinator re-checks whether the task is stranded (Note [Roots
  // that arrive later]); a ring that finds it busy costs a load.
  if (auto* coordinator =
        caf::actor_cast<caf::abstract_actor*>(detail::context_of(task).coordinator))
    static_cast<detail::EngineActor*>(coordinator)->wake();
}

void Engine::run_on_coordinator(std::function<void(std::exception_ptr)> job) {
  detail::spawn_job(
    core_, detail::make_call_done([job = std::move(job)](std::exception_ptr error, variable_list) {
      job(std::move(error));
    }));
}

std::future<variable_list> Engine::execute_async(edge_list roots, variable_list root_grads,
                                                 ExecuteOptions options, edge_list outputs) {
  detail::BackwardCall call{std::move(roots), std::move(root_grads), options, std::move(outputs)};
  return detail::run_async<variable_list>(this, core_, std::move(call),
                                          [](variable_list v) { return v; });
}

void Engine::backward(const variable_list& tensors, const BackwardOptions& options) {
  actorgrad::backward(tensors, options, *this);
}

variable_list Engine::grad(const variable_list& outputs, const variable_list& inputs,
                           const GradOptions& options) {
  return actorgrad::grad(outputs, inputs, options, *this);
}

std::future<void> Engine::backward_async(const variable_list& tensors,
                                         const BackwardOptions& options) {
  auto call = detail::make_backward_call(tensors, options.grad_tensors, options.retain_graph,
                                         options.create_graph, options.inputs);
  return detail::run_async<void>(this, core_, std::move(call), [](const variable_list&) {});
}

std::future<variable_list> Engine::grad_async(const variable_list& outputs,
                                              const variable_list& inputs,
                                              const GradOptions& options) {
  auto call = detail::make_grad_call(outputs, inputs, options.grad_outputs, options.retain_graph,
                                     options.create_graph);
  return detail::run_async<variable_list>(
    this, core_, std::move(call), [inputs, allow_unused = options.allow_unused](variable_list v) {
      return detail::check_grad_results(std::move(v), inputs, allow_unused);
    });
}

caf::actor Engine::request_actor() const { return core_->requests; }

caf::actor_system& Engine::system() { return core_->system; }
const EngineConfig& Engine::config() const { return core_->config; }
caf::actor Engine::worker(Device device) const { return core_->worker(device); }

void Engine::post(Device device, std::function<void()> job) {
  detail::post(core_->worker(device), msg::Job{std::move(job)});
}

EngineStats Engine::stats() const { return core_->counters.read(); }

void Engine::set_observer(std::shared_ptr<EngineObserver> observer) {
  core_->observers.install(std::move(observer));
}

void Engine::add_observer(std::shared_ptr<EngineObserver> observer) {
  if (!observer)
    throw std::invalid_argument("Engine::add_observer: the observer is null");
  core_->observers.add(std::move(observer));
}

bool Engine::remove_observer(const EngineObserver* observer) {
  return core_->observers.remove(observer);
}

void Engine::start_recording(trace::RecordingOptions options) {
  core_->observers.set_recorder(std::make_shared<trace::Recorder>(std::move(options)));
}

const trace::Recorder* Engine::recording() const {
  return static_cast<const trace::Recorder*>(core_->observers.recorder().get());
}

std::shared_ptr<EngineObserver> Engine::observer() const { return core_->observers.current(); }

trace::Trace Engine::stop_recording() {
  auto recorder = std::static_pointer_cast<trace::Recorder>(core_->observers.recorder());
  core_->observers.set_recorder(nullptr);
  if (!recorder)
    return {};
  // The recorded calls' device work runs after they return (Note [Stream tracks]).
  recorder->wait_for_device_work(std::chrono::seconds(10));
  return recorder->snapshot();
}

} // namespace actorgrad
