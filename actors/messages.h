#pragma once
/// @file messages.h
/// Every message the actor engine sends, in one place: the map of who talks
/// to whom. Internal: not installed, and no public header includes it; what
/// an application sends the engine (the requests and their answers) is
/// declared in actors/requests.h, whose table continues the one below.
///
/// | message   | sent by (file: function)                              | received by  | handled in (file: function)                 |
/// |-----------|-------------------------------------------------------|--------------|---------------------------------------------|
/// | Grad      | runner.cpp: Runner::send                              | coordinator, DeviceWorker (the owner of the consumer node) | runner.cpp: Runner::handle |
/// | Task      | runner.cpp: Runner::coordinate_here; cpu_lanes.cpp: share_ready_work (Note [Parallel CPU nodes]), send_to_last_lane (Note [Lanes that stay]); engine.cpp: Engine::add_root (Note [Roots that arrive later]) | DeviceWorker (of the root's device; of the CPU: a CPU worker), coordinator (an idle lane of a spread call, or the lane that ran the node last time; the task's, for a root that came later) | runner.cpp: Runner::handle |
/// | WakeUp    | runner.cpp: Runner::finish_one (only for a task with an observer; else a doorbell ring: Note [Wake-up without a message]) | coordinator (the task's) | runner.cpp: Runner::handle (a no-op: the loop re-checks) |
/// | Job       | engine.cpp: Engine::post                              | DeviceWorker | runner.cpp: Runner::handle |
/// | Shutdown  | engine.cpp: Engine::~Engine; worker_registry.cpp: WorkerRegistry::replace; coordinator_pool.cpp: CoordinatorPool::stop (idle coordinators, and all at Shutdown) | DeviceWorker, CoordinatorPool, AsyncCoordinator, request actor | runner.cpp: Runner::handle; coordinator_pool.cpp: CoordinatorPool::act, AsyncCoordinator::act; request_server.cpp: request_server |
/// | AsyncCall | async_call.cpp: spawn_call, spawn_job (when no coordinator is parked and the call is not made inside a node; a parked one is handed the call without a message: Note [A call handed to a parked coordinator]); coordinator_pool.cpp: CoordinatorPool::take_call, CoordinatorPool::became_idle (forward, to an idle or new coordinator) | CoordinatorPool, AsyncCoordinator (from the pool) | coordinator_pool.cpp: CoordinatorPool::act, AsyncCoordinator::act (run_call in async_call.cpp) |
/// | Idle      | async_call.cpp: run_call (when it cannot park, or calls wait: Note [Calls that wait for a coordinator]) | CoordinatorPool | coordinator_pool.cpp: CoordinatorPool::act (became_idle) |
///
/// The actors that receive them (an actor's handler: the function that
/// tells its messages apart):
///
/// | actor            | is (file: class)                     | handles messages in (file: function) |
/// |------------------|--------------------------------------|--------------------------------------|
/// | DeviceWorker     | device_worker.h: DeviceWorker (one per device; runs a Runner) | runner.cpp: Runner::handle |
/// | coordinator      | runner.h: Runner (whoever coordinates a GraphTask: the caller's thread with its CallerMailbox, an AsyncCoordinator, or a DeviceWorker whose node made a call) | runner.cpp: Runner::handle |
/// | CoordinatorPool  | coordinator_pool.h: CoordinatorPool  | coordinator_pool.cpp: CoordinatorPool::act |
/// | AsyncCoordinator | coordinator_pool.h: AsyncCoordinator | coordinator_pool.cpp: AsyncCoordinator::act |
/// | request actor    | request_server.cpp: RequestServer (Engine::request_actor()) | request_server.cpp: request_server |
/// | requester        | the application's actor              | the application |
///
/// tools/check_messages.py (ctest check_messages) reads both tables and
/// fails when they disagree with the code: a sender that does not send the
/// message through detail::post (or forward, respond), a send that is not
/// in the table, a handler that does not handle it, a receiver missing from
/// the actor table, or a send in actors/ made with CAF directly.
///
/// Every engine message is sent through detail::post (actors/detail/post.h),
/// which accepts only the types listed in `engine_messages` below, passed on
/// through detail::forward, and the answers to requests go through
/// detail::respond there.
///
/// CAF system messages the engine handles: `down_msg` (a monitored
/// DeviceWorker died; runner.cpp: Runner::handle) and `exit_msg` (a worker
/// asked to stop; runner.cpp: Runner::handle). CAF atoms the distributed
/// runtime sends to CAF's own actors: `caf::connect_atom` (to the
/// middleman; remote/runtime.cpp: Runtime::open_connection).
///
/// The distributed runtime (actors/remote/) has its own messages, serialized
/// across processes: they are declared in actors/remote/detail/protocol.h (between
/// processes) and actors/remote/detail/local_messages.h (inside one process), each
/// with a table like the ones above, sent through actors/remote/detail/send.h
/// (which lists them in `is_remote_message`); the same check covers them.
///
/// These messages stay inside one process and carry shared_ptrs to engine
/// state, so they are declared with CAF_ALLOW_UNSAFE_MESSAGE_TYPE (CAF 0.17's
/// way to send a type without serialization; 0.17 has no type-id lists).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>

#include <caf/error.hpp>
#include <caf/message.hpp>

#include "actorgrad/actors/detail/call_done.h"
#include "actorgrad/actors/detail/caller_state.h"
#include "actorgrad/actors/detail/message_size.h"
#include "actorgrad/actors/requests.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/detail/call_args.h"
#include "actorgrad/libengine/engine/detail/graph_task.h"
#include "actorgrad/libengine/engine/graph_task_base.h"

namespace actorgrad::msg {

/// A gradient for input `grad.input_nr` of `grad.node`, sent by the actor
/// that produced it to the actor that owns that node. Counted in the
/// task's outstanding work from send to handling.
struct Grad {
  std::shared_ptr<GraphTaskBase> task;
  detail::SentGrad grad;
  /// Pairs the send and receive of this message for an observer (0: none).
  std::uint64_t trace = 0;
};
static_assert(sizeof(Grad) == detail::per_node_message_size,
              "Note [Per-node messages share a heap size class]");

/// A ready task handed to its owner (the first task of a GraphTask whose
/// root node lives on a device). Counted like a ready task.
struct Task {
  detail::ReadyTask task;
  /// Pairs the send and receive of this message for an observer (0: none).
  std::uint64_t trace = 0;
  detail::SizeFill<sizeof(detail::ReadyTask) + sizeof(std::uint64_t)> fill{};
};
static_assert(sizeof(Task) == detail::per_node_message_size,
              "Note [Per-node messages share a heap size class]");

/// Tells a coordinator that one of its GraphTasks reached zero outstanding
/// work on another actor (PyTorch's wake-up NodeTask), when the task has an
/// observer; without one the coordinator is woken without a message (Note
/// [Wake-up without a message] in actors/detail/runner.cpp). Handling it is
/// a no-op: the waiting loop re-checks its exit condition after every message.
struct WakeUp {
  std::uint64_t task_id;
  /// Pairs the send and receive of this message for an observer (0: none).
  std::uint64_t trace = 0;
  detail::SizeFill<2 * sizeof(std::uint64_t)> fill{};
};
static_assert(sizeof(WakeUp) == detail::per_node_message_size,
              "Note [Per-node messages share a heap size class]");

/// Work to run on a device's actor between node tasks (used for forward
/// passes scheduled on the device that owns their tensors). Runs when the
/// message is drained, in arrival order.
struct Job {
  std::function<void()> fn;
};

/// Stops a DeviceWorker, the CoordinatorPool or an AsyncCoordinator (sent
/// with high priority; ranks first in a worker's heap).
struct Shutdown {};

/// An asynchronous call (backward_async, grad_async, execute_async, a
/// request): its coordinator makes the task of `call` on `engine` as the
/// caller's thread would have (Note [Async tasks made on their coordinator]
/// in actors/detail/caller_state.h), runs it, then calls `done(error,
/// captured gradients)` (actors/detail/async_call.h). Sent to the parked
/// async coordinator, else to the CoordinatorPool, which forwards it to an
/// idle (or new) one: no thread is started per call.
///
/// A job (Engine::run_on_coordinator) is an AsyncCall whose `done` is the
/// work itself: its coordinator calls it with no error to run it, the pool
/// with the error that kept it from starting; `call` is unused.
struct AsyncCall {
  detail::BackwardCall call;
  detail::CallerState caller;
  Executor* engine = nullptr;
  std::shared_ptr<detail::CallDone> done;
  /// A job (Note [Jobs that wait outside the engine] in async_call.h).
  bool job = false;
};

/// An AsyncCoordinator is free again (sent to the CoordinatorPool).
struct Idle {
  caf::actor coordinator;
};

/// Whether `M` is one of the messages a pass sends for its nodes, all of
/// one size (Note [Per-node messages share a heap size class]).
template <class M>
inline constexpr bool is_per_node_message =
  std::is_same_v<M, Grad> || std::is_same_v<M, Task> || std::is_same_v<M, WakeUp>;

/// Whether `M` is one of the engine's messages above.
template <class M>
inline constexpr bool is_engine_message =
  std::is_same_v<M, Grad> || std::is_same_v<M, Task> || std::is_same_v<M, WakeUp> ||
  std::is_same_v<M, Job> || std::is_same_v<M, Shutdown> || std::is_same_v<M, Idle> ||
  std::is_same_v<M, AsyncCall> || std::is_same_v<M, BackwardRequest> ||
  std::is_same_v<M, GradRequest> || std::is_same_v<M, BackwardResponse> ||
  std::is_same_v<M, GradResponse>;

} // namespace actorgrad::msg

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Grad)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Task)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::WakeUp)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Shutdown)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::Idle)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorgrad::msg::AsyncCall)
