#pragma once
/// @file task_runner.h
/// The loop every engine actor runs: drain the mailbox into the ready heap,
/// run the top task, drain again. Internal.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/blocking_actor.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/detail/engine_core.h"
#include "actors/detail/task_context.h"
#include "actors/messages.h"
#include "libengine/engine/node_task.h"

namespace actorgrad::detail {

/// The scheduling state of one actor: its ready queue (a heap of the tasks
/// of every GraphTask it runs nodes for) and its mailbox. Used by a
/// DeviceWorker (for its whole life), by the caller of a synchronous
/// backward (for the call), by the actor of an asynchronous backward, and
/// by a pool worker serving a handed-off queue.
///
/// Note [Priority mailbox]
/// CAF 0.17 mailboxes are FIFO with two priorities; the ready order
/// (ReadyOrder: shutdown, wake-ups, depth, sequence_nr) lives here instead:
/// every waiting message is moved from the mailbox into the heap (or
/// handled) before the next task is chosen, so a task that arrives later
/// but ranks higher runs first.
class TaskRunner {
public:
  /// `self` is the actor this runner serves; null for a caller thread that
  /// has no mailbox yet (one is created when a task crosses devices).
  /// `worker_device` is set for a DeviceWorker.
  TaskRunner(EngineCore& core, caf::blocking_actor* self, std::optional<Device> worker_device);
  ~TaskRunner();
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  /// The runner serving the calling thread, or null.
  static TaskRunner* current();

  EngineCore& core() const { return core_; }

  /// Coordinates `task` from this actor: starts `first` on its owner, runs
  /// the task's CPU nodes here and serves this actor's heap and mailbox
  /// (other tasks' work included) until the task has no outstanding work or
  /// a worker it uses died. Reentrant: a node run inside may call it again;
  /// past max_recursion_depth nested calls on this thread the task and the
  /// whole queue go to a pool worker (coordinate_in_pool).
  void coordinate(const std::shared_ptr<GraphTask>& task, NodeTask&& first);

  /// A DeviceWorker's life: serves until Shutdown or an exit message.
  void serve();

  /// A pool worker's job: adopt the queue in `h`, coordinate its task, then
  /// hand the queue back to the requester.
  void serve_handoff(msg::Handoff&& h);

  /// Handles a message that reached an idle pool worker (it belonged to a
  /// queue this worker no longer serves: routed on to its owner).
  void handle(caf::mailbox_element& element);

  /// A GraphTask this runner coordinates (several when calls nest).
  struct Frame {
    GraphTask* task;
    bool aborted = false;
  };
  /// Storage a caller's runner leaves to the next one on its thread (see
  /// Note [Caller scratch reuse] in task_runner.cpp).
  struct Scratch {
    ReadyHeap heap;
    std::vector<Frame> frames;
  };

private:
  void ensure_mailbox();
  std::shared_ptr<TaskContext> make_context(const GraphTask& task);
  bool owned_here(const TaskContext& ctx, Device d) const;
  void coordinate_here(const std::shared_ptr<GraphTask>& task, NodeTask&& first);
  void coordinate_in_pool(const std::shared_ptr<GraphTask>& task, NodeTask&& first);

  void run_task(NodeTask&& t);
  void deliver(const std::shared_ptr<GraphTask>& task, const TaskContext& ctx, const Node& from,
               const Edge& next, Tensor&& grad);
  void accept_local(const std::shared_ptr<GraphTask>& task, const Edge& next, Tensor&& grad,
                    const std::optional<Stream>& producer, const Event* ready = nullptr);
  void finish_one(const std::shared_ptr<GraphTask>& task);

  /// Moves every waiting message into the heap (or handles it).
  void drain_mailbox();
  /// Blocks for one message and handles it.
  void await_message();
  void on_worker_down(const caf::actor_addr& source, const caf::error& reason);

  // -- recording (actors/trace/recorder.h); called only when ctx.recorder is
  // set. Cold: kept out of line so that the hot paths stay as they were.
  /// Appends an event about `node` (null for none) of `task` to this
  /// actor's buffer in ctx.recorder.
  [[gnu::cold]] void record(const TaskContext& ctx, trace::EventKind kind, const GraphTask& task,
              const Node* node, trace::MessageKind message = trace::MessageKind::none,
              std::uint64_t message_id = 0, std::uint32_t input_nr = 0);
  /// Records the send of a message under a fresh id and returns the id.
  [[gnu::cold]] std::uint64_t record_send(const TaskContext& ctx, trace::MessageKind message,
                            const GraphTask& task, const Node* node, std::uint32_t input_nr = 0);
  /// Records the receipt of a WakeUp while its task is still coordinated here.
  [[gnu::cold]] void record_wake_up(const msg::WakeUp& m);
  /// The name of this actor's track: "caller <thread id>", "sim:0 worker",
  /// "pool worker <actor id>" or "async coordinator <actor id>".
  std::string actor_name() const;

  EngineCore& core_;
  caf::blocking_actor* self_;
  std::optional<caf::scoped_actor> own_mailbox_;
  /// Identity of the queue this runner serves (itself, or an adopted one).
  const void* queue_;
  std::optional<Device> worker_device_;
  Device device_; ///< where this actor runs nodes (cpu for a coordinator)
  ReadyHeap heap_;
  std::vector<Frame> frames_;
  /// Reentrant coordinate calls now nested on this thread.
  int reentrant_frames_ = 0;
  bool stop_ = false;
  TaskRunner* prev_current_;
  /// A synchronous caller's runner (no actor, no device): reuses scratch.
  const bool caller_;
  /// The recording this actor last wrote to (compared by owner, so a new
  /// recording gets a new buffer) and this actor's buffer in it.
  std::weak_ptr<trace::Recorder> trace_recorder_;
  trace::EventBuffer* trace_buffer_ = nullptr;
};

} // namespace actorgrad::detail
