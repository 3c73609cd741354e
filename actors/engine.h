#pragma once
/// @file engine.h
/// The actor engine: an Executor whose GraphTasks and device workers are CAF actors.

#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>

#include "actorgrad/actors/engine_config.h"
#include "actorgrad/actors/engine_stats.h"
#include "actorgrad/actors/observer.h"
#include "actorgrad/actors/trace/event.h"
#include "actorgrad/actors/trace/recording_options.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/executor.h"

namespace caf {
class actor;
class actor_system;
class actor_system_config;
} // namespace caf

namespace actorgrad {

namespace detail {
struct EngineCore;
struct ReadyTask; // internal (libengine/engine/detail/ready_task.h)
} // namespace detail
namespace trace {
class Recorder;
}

/// Runs backward passes on actors (DESIGN.md section 2), for actorgrad's own
/// graphs (execute) and for any graph type of the scheduler (run; see Note
/// [Graph interface] in libengine/engine/detail/graph_interface.h).
///
/// - A synchronous call (execute, or the public API with this engine as the
///   default executor) is coordinated by the caller's thread, which runs the
///   CPU nodes, as in PyTorch. It gets a mailbox (a CAF scoped actor) only
///   when the graph crosses to a device.
/// - Each configured device has one DeviceWorker actor shared by all calls.
/// - With EngineConfig::cpu_workers > 1 the CPU nodes of a CPU-only call
///   run on its caller and the engine's CPU workers together.
/// - backward / grad: the public API's calls on this engine.
/// - backward_async / grad_async / execute_async run on a pooled coordinator
///   actor (one per call in flight, reused; no thread started per call) and
///   return a future.
/// - request_actor() answers backward and grad requests sent by message
///   (for event-based actors, which must not block).
///
/// Recording: `start_recording()` ... `stop_recording()` returns the
/// message flow (trace::Trace) of every backward call started in between,
/// for tools/trace (Chrome trace, summary, HTML report). Off by default.
///
/// Thread-safe: any number of threads may call it at once.
class Engine final : public Executor {
public:
  /// Owns an actor system with explicit scheduler settings. Throws
  /// std::invalid_argument naming a bad setting of `config`.
  explicit Engine(EngineConfig config = {});
  /// Embeds in the application's actor system (which must outlive the Engine).
  explicit Engine(caf::actor_system& system, EngineConfig config = {});
  /// Stops the device workers (shutdown ranks first in their heaps) and
  /// waits for them; an owned actor system waits for every actor. Call only
  /// when no backward pass is running; any thread may, also while threads
  /// that used the engine live on (see Note [CAF's thread-local logger]).
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  variable_list execute(const edge_list& roots, variable_list root_grads,
                        const ExecuteOptions& options, const edge_list& outputs) override;

  /// Runs `task` (of any graph type, built by BasicGraphTask<G>::create)
  /// from `first` to completion, synchronously: the caller's thread
  /// coordinates it and runs its CPU nodes; inside a node of this engine
  /// (a reentrant call) the actor running that node does. The caller then
  /// reads the results (BasicGraphTask<G>::finish).
  void run(const std::shared_ptr<GraphTaskBase>& task, detail::ReadyTask&& first);

  /// Hands `root`, a root of `task` that came after it started
  /// (BasicGraphTask<G>::later_root), to the task's coordinator, by
  /// message. Call only once the task's on_coordinated was called; any
  /// thread (Note [Roots that arrive later]).
  void add_root(const GraphTaskBase& task, detail::ReadyTask&& root);
  /// Fails `task` (a task that takes later roots, coordinated already) with
  /// `error` if it has none yet, and wakes its coordinator, which stops
  /// waiting for the roots still to come. Any thread.
  void fail(GraphTaskBase& task, std::exception_ptr error);

  /// Runs `job` on a pooled coordinator actor, for code outside the engine
  /// whose task waits for roots from outside it (a distributed backward's
  /// part in a process: Note [Jobs that wait outside the engine] in
  /// actors/detail/async_call.h): never on this thread, never waiting for a
  /// coordinator (one is started past max_async_coordinators when all are
  /// busy). A call of run() that `job` makes is coordinated by that actor.
  /// Called once: with null to run, or with the error that kept it from
  /// running (no thread could be started; the engine is being destroyed).
  /// `job` must not throw.
  void run_on_coordinator(std::function<void(std::exception_ptr)> job);

  /// Like execute, on a pooled coordinator actor.
  std::future<variable_list> execute_async(edge_list roots, variable_list root_grads,
                                           ExecuteOptions options, edge_list outputs);

  /// `actorgrad::backward(tensors, options, *this)`: accumulates the
  /// gradients of `tensors` into the leaves' `.grad` (only `options.inputs`'
  /// when given), e.g. `engine.backward({loss}, {.retain_graph = true})`.
  void backward(const variable_list& tensors, const BackwardOptions& options = {});

  /// `actorgrad::grad(outputs, inputs, options, *this)`: the gradients of
  /// `outputs` with respect to `inputs`, e.g. `engine.grad({y}, {x})`.
  variable_list grad(const variable_list& outputs, const variable_list& inputs,
                     const GradOptions& options = {});

  /// `backward` on a pooled coordinator actor. Argument errors are thrown
  /// here; errors of nodes arrive through the future.
  std::future<void> backward_async(const variable_list& tensors,
                                   const BackwardOptions& options = {});

  /// `grad` on a pooled coordinator actor (errors as backward_async).
  std::future<variable_list> grad_async(const variable_list& outputs, const variable_list& inputs,
                                        const GradOptions& options = {});

  /// The actor that answers backward and grad requests sent by message
  /// (msg::BackwardRequest / msg::GradRequest in actors/requests.h), from
  /// any actor, event-based included, of this or another actor system:
  /// `self->request(engine.request_actor(), timeout, msg::GradRequest{{y}, {x}})
  ///    .then([](msg::GradResponse& r) {...}, [](caf::error& e) {...})`.
  /// Each call runs on a pooled coordinator actor of its own; the requester's
  /// thread is never blocked. The answer is a response message, or a
  /// caf::error carrying the engine's message (msg::error_text); a pass
  /// longer than the request's timeout answers sec::request_timeout and its
  /// late answer is dropped. Requests still queued when the engine is
  /// destroyed are answered sec::request_receiver_down; destroy it only once
  /// the calls already running are answered (as for backward_async).
  caf::actor request_actor() const;

  /// The actor system the engine's actors live in.
  caf::actor_system& system();
  const EngineConfig& config() const;
  /// The current DeviceWorker of `device` (throws if not served).
  caf::actor worker(Device device) const;
  /// Runs `job` on the DeviceWorker of `device` (between its node tasks).
  /// The job must not throw: report failures through what it captures.
  void post(Device device, std::function<void()> job);
  /// Counters of reentrant execution since the engine started.
  EngineStats stats() const;

  /// Installs `observer` for the calls started from now on (null: none),
  /// in place of the one installed before (EngineConfig::observer or an
  /// earlier set_observer); calls already running keep the observers they
  /// started with. Observers added (add_observer) and a recording
  /// (start_recording) go on beside it. The observer calls (set_observer,
  /// add_observer, remove_observer, start_recording, stop_recording) must
  /// not race each other: make them from one thread at a time.
  void set_observer(std::shared_ptr<EngineObserver> observer);
  /// Adds `observer` (not null: std::invalid_argument) for the calls
  /// started from now on, beside the others: every observer is told every
  /// event, in the order installed, added, recorder (see
  /// detail::ObserverList for the id a message carries).
  void add_observer(std::shared_ptr<EngineObserver> observer);
  /// Removes an observer that add_observer added, for the calls started
  /// from now on; false if it was not added.
  bool remove_observer(const EngineObserver* observer);

  /// Records every backward call started from now on (sync or async, and
  /// the reentrant calls they make): per message sent and received and per
  /// node made ready, fed, started and finished, on each actor that runs a
  /// part of it (actors/trace/recorder.h, installed as the observer).
  /// Starts a new recording when one is in progress (the calls already
  /// started keep the old one). `options`: keep only the last passes, or
  /// warn when the recording grows large (trace/recording_options.h).
  void start_recording(trace::RecordingOptions options = {});
  /// The recording in progress (null when none), valid until
  /// stop_recording; for its counters (Recorder::events_held). Same thread
  /// rule as the observer calls.
  const trace::Recorder* recording() const;
  /// The observer the calls starting now get (null for none, the only one,
  /// or all of them as one): for code outside the engine's actors that
  /// reports to it (the distributed agent, actors/remote/detail/agent.cpp). Any
  /// thread.
  std::shared_ptr<EngineObserver> observer() const;
  /// Stops recording and returns what the calls
  /// started while recording have recorded so far (all of it once they
  /// returned), after waiting (up to 10 s) for the device work they
  /// launched to run, so that their stream tracks are whole. Empty when not
  /// recording.
  trace::Trace stop_recording();

private:
  void spawn_actors();

  std::unique_ptr<caf::actor_system_config> own_config_;
  std::unique_ptr<caf::actor_system> own_system_;
  std::shared_ptr<detail::EngineCore> core_;
};

} // namespace actorgrad
