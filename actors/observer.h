#pragma once
/// @file observer.h
/// Watching what the actor engine does: the observer interface.

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>

#include "actorgrad/actors/trace/event.h"
#include "actorgrad/device/device.h"
#include "actorgrad/device/launch_observer.h"
#include "actorgrad/libengine/engine/graph_task_base.h"

namespace actorgrad {

/// One of the engine's actors as an observer sees it.
class ObservedActor {
public:
  /// What the actor does.
  enum class Role : std::uint8_t { caller, device_worker, async_coordinator, agent, cpu_worker };

  ObservedActor(Role role, Device device, std::uint64_t actor_id)
    : role(role), device(device), actor_id(actor_id) {}

  const Role role;
  /// Where it runs nodes (cpu for a coordinator).
  Device device;
  /// The CAF actor id (0 for a caller without a mailbox).
  std::uint64_t actor_id;
  /// "caller <thread id>", "sim:0 worker", "async coordinator <actor id>",
  /// "distributed agent" or "cpu worker <actor id>" (computed on first use,
  /// on the actor's thread).
  const std::string& name() const;

  /// Scratch for one observer: lets it find its per-actor state (a trace
  /// buffer) without a lookup. Written only on the actor's own thread.
  struct Cache {
    std::uint64_t owner = 0;
    void* state = nullptr;
  };
  mutable Cache cache;

private:
  mutable std::string name_;
};

/// A message between the distributed agents of two processes
/// (actors/remote/detail/agent.h), as one of them saw it.
struct RemoteMessage {
  /// Sent by this process; false: received.
  bool sent = false;
  /// remote_grad (a gradient) or remote_ack (the reply to one).
  trace::MessageKind kind = trace::MessageKind::remote_grad;
  /// The same number on both processes (Note [Flows between processes] in
  /// actors/remote/detail/agent.cpp).
  std::uint64_t flow = 0;
  /// The local pass it belongs to, as trace::Event says (0: none).
  std::uint64_t graph_task = 0;
  /// The other process (its agent's name).
  std::string peer;
  /// When it was sent or received.
  std::chrono::steady_clock::time_point at;
};

/// Receives what the engine's actors do, as they do it. Any number per
/// engine (Engine::set_observer, Engine::add_observer; the recorder of
/// Engine::start_recording is one); each GraphTask keeps the observers
/// that were on when it started. Called on the actor's own thread, concurrently from several
/// actors: implementations must be thread-safe and cheap. With no observer
/// the engine pays one predictable branch per site.
class EngineObserver {
public:
  virtual ~EngineObserver() = default;

  /// `actor` starts coordinating `task` (sync call, async call, or a
  /// reentrant call).
  virtual void task_started(const ObservedActor& actor, const GraphTaskBase& task) {}
  /// ... and stops: the task completed, failed, or lost a worker.
  virtual void task_finished(const ObservedActor& actor, const GraphTaskBase& task) {}
  /// `node` entered `actor`'s ready heap.
  virtual void node_ready(const ObservedActor& actor, const GraphTaskBase& task,
                          const NodeInfo& node) {}
  /// A node running on `actor` fed input `input_nr` of `node`, owned by the
  /// same actor (no message).
  virtual void node_fed(const ObservedActor& actor, const GraphTaskBase& task, const NodeInfo& node,
                        std::uint32_t input_nr) {}
  virtual void node_started(const ObservedActor& actor, const GraphTaskBase& task,
                            const NodeInfo& node) {}
  /// The node ran and its outputs were delivered (or it threw).
  virtual void node_finished(const ObservedActor& actor, const GraphTaskBase& task,
                             const NodeInfo& node) {}
  /// `actor` sends a message about `node` (a Grad for its input `input_nr`,
  /// a Task, a WakeUp with no node). Returns an id that pairs the send with
  /// its receipt (0: none).
  virtual std::uint64_t message_sent(const ObservedActor& actor, const GraphTaskBase& task,
                                     trace::MessageKind kind, const NodeInfo& node,
                                     std::uint32_t input_nr) {
    return 0;
  }
  /// `actor` took a message from its mailbox (`id` as message_sent returned).
  virtual void message_received(const ObservedActor& actor, const GraphTaskBase& task,
                                trace::MessageKind kind, const NodeInfo& node, std::uint64_t id,
                                std::uint32_t input_nr) {}
  /// `actor`, running `node`, launches device work `work` (Note [Stream
  /// tracks] in actors/trace/recorder.h). Returns what the stream calls, on
  /// its own thread, once the item ran (empty: nothing).
  virtual DeviceRun work_launched(const ObservedActor& actor, const GraphTaskBase& task,
                                  const NodeInfo& node, const DeviceLaunch& work) {
    return {};
  }
  /// `actor` reached max_recursion_depth (or the end of its stack) and
  /// coordinates `task` on a fresh stack of its thread (Note [A fresh stack
  /// past the depth limit] in actors/detail/fresh_stack.h).
  virtual void fresh_stack(const ObservedActor& actor, const GraphTaskBase& task) {}
  /// A node of `task` failed on `actor` (the first error wins; later ones
  /// are reported too).
  virtual void error(const ObservedActor& actor, const GraphTaskBase& task, std::exception_ptr e) {}
  /// `actor`, a process's distributed agent, sent a message to another
  /// process or received one (actors/remote/detail/agent.cpp).
  virtual void remote_message(const ObservedActor& actor, const RemoteMessage& m) {}
};

} // namespace actorgrad
