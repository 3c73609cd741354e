#pragma once
/// @file runner.h
/// The one dispatch loop every engine actor runs: drain the mailbox into the
/// ready heap, run the top task, repeat. Internal.

#include <memory>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>
#include <caf/mailbox_element.hpp>

#include "actorgrad/actors/detail/caller_mailbox_lease.h"
#include "actorgrad/actors/detail/engine_actor.h"
#include "actorgrad/actors/detail/engine_core.h"
#include "actorgrad/actors/detail/ready_queue.h"
#include "actorgrad/actors/detail/task_context.h"
#include "actorgrad/actors/detail/task_contexts.h"
#include "actorgrad/actors/messages.h"
#include "actorgrad/actors/observer.h"

namespace actorgrad::detail {

/// The dispatch loop of one actor and its scheduling state: its ready
/// queue, its mailbox and the GraphTasks it coordinates (frames); the
/// contexts it makes and the workers it monitors are its TaskContexts, a
/// caller's mailbox its CallerMailboxLease. Every role uses it: a
/// DeviceWorker (serve), the caller of a synchronous backward and the actor
/// of an asynchronous one (coordinate).
///
/// Note [Priority mailbox]
/// CAF 0.17 mailboxes are FIFO with two priorities; the ready order
/// (ReadyOrder: shutdown, depth, sequence_nr) lives here instead: every
/// waiting message is moved from the mailbox into the heap (or handled)
/// before the next task is chosen, so a task that arrives later but ranks
/// higher runs first.
class Runner final : public Dispatch {
public:
  /// `self` is the actor served; null for a caller thread that has no
  /// mailbox yet (one is created when a task crosses devices).
  Runner(EngineCore& core, EngineActor* self, ObservedActor::Role role, ReadyQueue&& queue);
  ~Runner() override;
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  /// The runner serving the calling thread, or null.
  static Runner* current();

  EngineCore& core() const { return core_; }
  const ObservedActor& actor() const { return actor_; }

  /// Coordinates `task` from this actor: starts `first` on its owner, runs
  /// the task's CPU nodes here and serves this actor's queue and mailbox
  /// (other tasks' work included) until the task has no outstanding work or
  /// a worker it uses died. Reentrant: a node run inside may call it again;
  /// past max_recursion_depth nested calls on one stack (or when the stack
  /// runs short) the call goes on a fresh stack of this thread (Note [A
  /// fresh stack past the depth limit] in fresh_stack.h).
  void coordinate(const std::shared_ptr<GraphTaskBase>& task, ReadyTask&& first);

  /// A DeviceWorker's life: serves until Shutdown or an exit message.
  void serve();

  /// Moves every waiting message into the heap (or handles it).
  void drain_mailbox();

  /// Handles one message taken from the mailbox.
  void handle(caf::mailbox_element& element);

  /// The queue, moved out (a caller's Runner leaves its heap's storage to the next).
  ReadyQueue take_queue() { return std::move(queue_); }
  /// The actor's mailbox (created for a caller on first need).
  EngineActor& mailbox();
  /// A Shutdown arrived while this actor coordinated a call (Note
  /// [Shutdown during a frame]), or waits on top of the heap, where the
  /// call's end left it: its owner stops once the call is over.
  bool shutdown_pending() const {
    return shutdown_pending_ || (!queue_.heap.empty() && queue_.heap.top().is_shutdown());
  }

  // -- Dispatch ---------------------------------------------------------------
  void ready(ReadyTask&& t) override;
  void send(const std::shared_ptr<GraphTaskBase>& task, SentGrad&& g) override;
  void fed(const GraphTaskBase& task, const void* node, std::uint32_t input_nr) override;
  void routing(const ReadyTask& t) override;
  void routed() override;

private:
  /// A GraphTask coordinated here (several when calls nest).
  struct Frame {
    GraphTaskBase* task;
    bool aborted = false;
  };

  /// The dispatch loop: until `done()` (checked before each step) or a stop.
  template <class Done>
  void dispatch_until(Done done);
  void run(ReadyTask&& t);
  /// run() with the observer told: the one place that tells it before and
  /// after a node (cold: kept off the unobserved path).
  [[gnu::cold]] void run_observed(ReadyTask& t, EngineObserver& observer);
  /// Puts `t` (counted already) in the ready heap: the one place that tells
  /// an observer a node is ready. Inlined into its callers (ready() runs
  /// once per node).
  [[gnu::always_inline]] inline void push_ready(ReadyTask&& t);
  /// push_ready for a task this lane runs, fed by its own node.
  void keep_ready(ReadyTask&& t);
  /// Places the tasks of a spread call that one node made ready (forked_),
  /// counted already: with `fork` (several of them, EngineConfig::
  /// cpu_keep_lanes), each goes to the lane that ran it last time (Note
  /// [Lanes that stay] in cpu_lanes.h); the others stay here.
  void place_forked(bool fork);
  /// This runner's CPU lane in spread task `task` (0: its coordinator).
  unsigned cpu_lane(const GraphTaskBase& task);
  /// Posts `m` (about `task`, whose context is `ctx`) to `to`: the one
  /// place that tells an observer of a message sent.
  template <class Message>
  void post_message(const TaskContext& ctx, const GraphTaskBase& task, const caf::actor& to,
                    Message&& m);
  /// Tells `task`'s observer, if any, of `m` taken from the mailbox.
  template <class Message>
  void note_received(const GraphTaskBase& task, const Message& m);
  void finish_one(const std::shared_ptr<GraphTaskBase>& task);
  /// No frame is open, nothing is queued, and no other caller's node can be
  /// queued here meanwhile: a caller (always, without a mailbox) or an async
  /// coordinator (Note [CPU calls on a caller]).
  bool serves_nothing_else() const {
    using Role = ObservedActor::Role;
    if (!self_)
      return true;
    return frames_.empty() && queue_.heap.empty() &&
           (actor_.role == Role::caller || actor_.role == Role::async_coordinator);
  }
  /// coordinate without the depth check.
  void coordinate_here(const std::shared_ptr<GraphTaskBase>& task, ReadyTask&& first);
  /// Gives `task` its context (with `observer`, if any) before its first
  /// ready task is queued.
  const TaskContext& start(const std::shared_ptr<GraphTaskBase>& task,
                           std::shared_ptr<EngineObserver> observer);
  /// Opens `task`'s frame and serves until the task is done or aborted.
  void await_frame(const std::shared_ptr<GraphTaskBase>& task);
  /// The context of `task`: a bare one for a CPU-only task on a caller
  /// without a mailbox, else one from contexts_.
  std::shared_ptr<TaskContext> make_context(const GraphTaskBase& task,
                                            std::shared_ptr<EngineObserver> observer);
  /// Handles the next message, or returns without one once `done()` holds.
  template <class Done>
  void await_message(Done done);
  void on_worker_down(const caf::actor_addr& source, const caf::error& reason);

  EngineCore& core_;
  EngineActor* self_;
  /// A caller's mailbox, taken from or parked in the core; holds none for
  /// an actor's own runner.
  CallerMailboxLease mailbox_lease_;
  ObservedActor actor_;
  ReadyQueue queue_;
  /// Open frames, innermost last; a caller's runner rarely holds more than
  /// one, so they are kept inline.
  boost::container::small_vector<Frame, 2> frames_;
  /// The contexts this actor made and the workers it monitors (Note
  /// [Reused task contexts]); a caller's come and go with its mailbox.
  TaskContexts contexts_;
  /// The engine has CPU workers: this runner shares ready work of spread
  /// calls and says when it waits with nothing to run (Note [Parallel CPU
  /// nodes] in cpu_lanes.h).
  const bool lanes_;
  /// This lane told the others it has no ready task left (set_idle) while
  /// it still runs one: the next one handed over waits in its mailbox when
  /// it is done (Note [Parallel CPU nodes] in cpu_lanes.h).
  bool hungry_ = false;
  /// The task whose finished node's outputs route now, the tasks of it that
  /// the routing made ready here so far (counted at its end), and whether
  /// the finished node's hold passed on to one of them (Note [A node passes
  /// its hold on] in runner.cpp).
  GraphTaskBase* routing_ = nullptr;
  std::int64_t routed_ready_ = 0;
  bool hold_passed_ = false;
  /// The tasks of a spread call the routing made ready so far, placed at
  /// its end (place_forked).
  boost::container::small_vector<ReadyTask, 4> forked_;
  /// This CPU worker's lane, found on first use (0: not yet, or no worker).
  unsigned worker_lane_ = 0;
  /// Reentrant coordinate calls nested on the stack this thread runs on.
  int reentrant_frames_ = 0;
  bool stop_ = false;
  /// A Shutdown popped while frames were open (a DeviceWorker whose node
  /// made a nested call): kept until they close.
  bool shutdown_pending_ = false;
  Runner* prev_current_;
};

} // namespace actorgrad::detail
