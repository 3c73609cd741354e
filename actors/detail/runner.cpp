// Over 300 lines on purpose: the dispatch loop, the handling of every
// message it drains and the Notes on completion and errors that explain
// both are one unit; split, a reader would lose the invariants (Note
// [Completion without a lock]) that tie them together. What only an
// observed task runs is in runner_observed.cpp.
#include "actorgrad/actors/detail/runner.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <caf/sec.hpp>
#include <caf/system_messages.hpp>

#include "actorgrad/actors/detail/cpu_lanes.h"
#include "actorgrad/actors/detail/fresh_stack.h"
#include "actorgrad/actors/detail/message_type.h"
#include "actorgrad/actors/detail/observation.h"
#include "actorgrad/actors/detail/post.h"
#include "actorgrad/actors/detail/stack_guard.h"
#include "actorgrad/libengine/engine/detail/current_exception_or_unwind.h"
#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/engine/errors.h"

namespace actorgrad::detail {

// Note [Completion without a lock]
// A GraphTask's outstanding count (GraphTaskBase::hold/release) counts its
// ready tasks (in any actor's heap or in a msg::Task) plus its msg::Grad
// messages in flight. An actor holds *before* it pushes a task or sends a
// message and releases only *after* it finished the task or handled the
// message, having first held whatever that produced. So the count can only
// reach zero when no work of the task is left anywhere. The actor whose
// release reaches zero wakes the coordinator (Note [Wake-up without a
// message]), unless it serves the coordinator's queue, whose loop checks
// the count after every message and task.
//
// Note [A node passes its hold on]
// Counting each ready task on its own costs two read-modify-writes of the
// count (a hold when the task is pushed, a release when it ran), and in a
// call spread over CPU lanes (Note [Parallel CPU nodes] in cpu_lanes.h)
// the count's cache line moves between the lanes' cores at each: a chain of
// nodes on one lane paid that per node. So the tasks that a finished node's
// routing makes ready on its own actor are counted once, when its routing
// ends (Dispatch::routing/routed): the finished node's own hold passes to
// one of them and the others are held together; a node that made none
// releases its hold as before. This keeps the rule above: until routed(),
// the finished node still holds the count, and the tasks pushed meanwhile
// sit in this actor's heap, which nothing else pops and which this actor
// does not pop while it routes (routing runs no node, so no nested call
// runs a loop in between). A gradient sent to another actor is held before
// it is sent, as before: its receiver may handle it at once. So is a fork's
// task that goes to another lane (Note [Lanes that stay] in cpu_lanes.h):
// the finished node keeps its hold then, since the other lanes could end
// the call before this one lets go of the node (Runner::run), and the
// caller's graph would lose its last node on a worker after the call.
//
// Note [Wake-up without a message]
// A coordinator whose task's last work ran on another actor sleeps until
// that actor's release takes the count to zero. A msg::WakeUp told it, and
// that cost what any message costs: a mailbox element allocated on one
// thread and freed on the other, CAF's enqueue and dequeue, a handler that
// does nothing (about 450 instructions of a 2-node call rooted on a device:
// bench/HISTORY.md, "A coordinator woken without a message"). Now the
// releasing actor rings the coordinator's doorbell (EngineActor::wake), and
// the coordinator's wait for mail (EngineActor::await_mail_or in
// await_message) also ends once its frame is done. The race is the
// doorbell's (Note [Doorbell]), with the count in place of the mailbox: the
// ringer's decrement and the sleeper's read of the count after announcing
// its sleep are sequentially consistent (Note [Outstanding work memory
// order]), so either the sleeper sees zero or the ringer sees it asleep and
// wakes it. The ringer holds the task, whose context holds a strong handle
// to the coordinator, so the actor is alive. A ring that finds the
// coordinator busy costs a load; one that reaches it while it waits for
// something else (a later call: its mailbox is parked and reused) only
// makes it check its condition and sleep again.
// With an observer the WakeUp is still sent, so that a trace shows who
// woke the coordinator; one that arrives after its task was done is
// harmless.
//
// Note [Errors]
// The first error wins (GraphTaskBase::set_error). Afterwards every actor
// still drains the task's tasks and messages, without running nodes, so the
// count reaches zero and nothing of the task is left behind in any heap.
// Only a dead worker ends the wait early: its share of the count is lost,
// and the coordinator, which monitors the workers of its task, fails the
// task when it sees the worker's down message.
//
namespace {
thread_local Runner* current_runner = nullptr;

/// Whether `t` is a node of a spread call (Note [Parallel CPU nodes] in
/// cpu_lanes.h).
bool of_spread_call(const ReadyTask& t) { return !t.is_shutdown() && t.graph_task->spread(); }
} // namespace

Runner::Runner(EngineCore& core, EngineActor* self, ObservedActor::Role role, ReadyQueue&& queue)
  : core_(core), self_(self), mailbox_lease_(core.idle_caller_mailbox, core.system),
    actor_(role, queue.device, self ? self->id() : 0), queue_(std::move(queue)),
    lanes_(core.config.cpu_workers > 1), prev_current_(current_runner) {
  Dispatch::queue_ = queue_.id;
  Dispatch::device_ = queue_.device;
  current_runner = this;
}

Runner::~Runner() {
  current_runner = prev_current_;
  if (mailbox_lease_.held())
    mailbox_lease_.release(std::move(contexts_)); // Note [Parked caller mailbox]
}

Runner* Runner::current() { return current_runner; }

EngineActor& Runner::mailbox() {
  if (!self_)
    self_ = &mailbox_lease_.take(contexts_); // Note [Parked caller mailbox]
  return *self_;
}

std::shared_ptr<TaskContext> Runner::make_context(const GraphTaskBase& task,
                                                  std::shared_ptr<EngineObserver> observer) {
  if (task.devices().empty() && !task.spread() && !self_ && !task.takes_later_roots()) {
    auto ctx = std::make_shared<TaskContext>();
    ctx->observer = std::move(observer);
    return ctx; // CPU only, on a caller: every node runs here, no message is sent
  }
  EngineActor& self = mailbox();
  return contexts_.make(task, std::move(observer), self, core_.workers);
}

void Runner::push_ready(ReadyTask&& t) {
  const GraphTaskBase& task = *t.graph_task;
  if (EngineObserver* observer = observer_of(task)) [[unlikely]]
    observer->node_ready(actor_, task, task.describe(t.node.get()));
  queue_.heap.push(std::move(t));
}

void Runner::coordinate(const std::shared_ptr<GraphTaskBase>& task, ReadyTask&& first) {
  const bool reentrant = current_graph_task() != nullptr;
  // Note [A fresh stack past the depth limit]
  const bool fresh_stack =
    reentrant && (reentrant_frames_ >= core_.config.max_recursion_depth || stack_is_short());
  const int outer_frames = fresh_stack ? std::exchange(reentrant_frames_, 0) : reentrant_frames_;
  if (reentrant)
    core_.counters.note_reentrant_frames(++reentrant_frames_);
  try {
    if (fresh_stack) {
      core_.counters.fresh_stacks.fetch_add(1, std::memory_order_relaxed);
      if (auto observer = core_.observers.current()) [[unlikely]]
        observer->fresh_stack(actor_, *task);
      auto here = [&] { coordinate_here(task, std::move(first)); };
      on_fresh_stack(here);
    } else {
      coordinate_here(task, std::move(first));
    }
  } catch (...) {
    reentrant_frames_ = outer_frames;
    mailbox_lease_.spoil(); // Note [Parked caller mailbox]
    throw;
  }
  reentrant_frames_ = outer_frames;
}

void Runner::coordinate_here(const std::shared_ptr<GraphTaskBase>& task, ReadyTask&& first) {
  task->cpu_queue = queue_.id;
  auto observer = core_.observers.current();
  // Note [Parallel CPU nodes], Note [Nested calls stay on one lane], Note
  // [Nodes that need their call's thread] (cpu_lanes.h)
  const bool spreads =
    lanes_ && task->devices().empty() && task->reentrant_depth == 0 && task->may_spread();
  // Note [CPU calls on a caller]
  // A task whose every node is a CPU node, coordinated by an actor that serves
  // nothing else meanwhile, sends no message and needs none: no worker takes
  // part, so none can die. Such an actor is a caller thread (with or without a
  // mailbox) or an async coordinator, with no frame open (nested in nothing
  // that waits for messages)
  // and nothing queued (a straggler routed here between calls may have queued
  // a node of an aborted task; then the call takes the loop, which serves it).
  // The dispatch loop would only count, heap and re-check work that never
  // leaves this thread, so the task runs straight through run_all_here (the
  // one-thread executors' loop, same ready order and error rule). Whatever
  // reaches the mailbox meanwhile waits for the next loop or the coordinator's
  // own receive: a straggler of an earlier call, which no later call needs, or
  // a Shutdown, which stops its owner only after the call anyway (Note
  // [Shutdown during a frame]). Not a device worker: its queue holds the nodes
  // of other callers' tasks, which must not wait for this one. Unobserved
  // only: an observer sees
  // every node through the loop. A reentrant call made by one of its nodes
  // still comes back here (coordinate), and one that crosses devices takes the
  // loop (creating a caller's mailbox first). Meanwhile this task's ready
  // nodes wait in run_all_here's heap, not in the thread's queue, where the
  // nested loop could have run them while it waited for a worker: an order the
  // ready order leaves open, since a nested call never waits for its parent's
  // nodes. Such a task gets no TaskContext either: nothing on this path reads
  // one. A caller's top-level call of this kind does not even make a Runner
  // (Note [A top-level CPU call needs no Runner] in engine.cpp).
  // With CPU workers, such a call runs here the same way until it branches
  // (Note [Spreading a call where it branches] in cpu_lanes.h); then it
  // spreads, from the ready tasks it has.
  if (serves_nothing_else() && task->devices().empty() && !observer && !task->takes_later_roots()) {
    if (!spreads) {
      task->run_all_here(std::move(first));
      return;
    }
    ReadyHeap branched;
    if (task->run_here_until_branched(std::move(first), branched, core_.config.cpu_spread_branch))
      return;
    task->spread_cpu_nodes();
    start(task, nullptr);
    while (!branched.empty()) {
      ReadyTask t = branched.pop();
      t.graph_task = task; // run_all_here's tasks hold no task
      task->hold();
      forked_.push_back(std::move(t));
    }
    place_forked(core_.config.cpu_keep_lanes); // Note [Lanes that stay] in cpu_lanes.h
    await_frame(task);
    return;
  }
  if (spreads)
    task->spread_cpu_nodes();
  const TaskContext& ctx = start(task, std::move(observer));
  task->hold(); // the first task
  const Device root_device = task->device_of(first.node.get());
  if (owns(task->cpu_queue, root_device))
    push_ready(std::move(first));
  else
    post_message(ctx, *task, ctx.worker(root_device), msg::Task{std::move(first)});
  await_frame(task);
}

const TaskContext& Runner::start(const std::shared_ptr<GraphTaskBase>& task,
                                 std::shared_ptr<EngineObserver> observer) {
  auto ctx = make_context(*task, std::move(observer));
  task->executor_data = ctx;
  if (ctx->observer) [[unlikely]]
    ctx->observer->task_started(actor_, *task);
  if (task->on_coordinated) [[unlikely]] // Note [Roots that arrive later]
    task->on_coordinated();
  return *ctx;
}

void Runner::await_frame(const std::shared_ptr<GraphTaskBase>& task) {
  frames_.push_back({task.get()});
  const std::size_t frame = frames_.size() - 1;
  {
    struct CloseFrame { // also when the loop throws: no stale frame stays open
      decltype(frames_)& frames;
      ~CloseFrame() { frames.pop_back(); }
    } close{frames_};
    // A task that takes later roots and failed stops waiting for the roots
    // its error keeps from coming (Note [Roots that arrive later]).
    dispatch_until([&] {
      return !task->outstanding() || frames_[frame].aborted ||
             (task->takes_later_roots() && task->stranded());
    });
  }
  if (const TaskContext& ctx = context_of(*task); ctx.observer) [[unlikely]]
    ctx.observer->task_finished(actor_, *task);
}

void Runner::serve() {
  dispatch_until([] { return false; });
}

template <class Done>
void Runner::dispatch_until(Done done) {
  while (!stop_ && !done()) {
    if (shutdown_pending_ && frames_.empty())
      stop_ = true;
    drain_mailbox();
    if (stop_)
      return; // an exit message: not one more node
    if (queue_.heap.empty()) {
      if (!done())
        await_message(done); // the rest of the work is on other actors
      continue;
    }
    if (lanes_ && queue_.heap.size() > 1 && of_spread_call(queue_.heap.top()))
      share_ready_work(core_, self_, actor_, queue_.heap, cpu_lane(*queue_.heap.top().graph_task));
    ReadyTask t = queue_.heap.pop();
    if (lanes_ && queue_.heap.empty() && of_spread_call(t)) {
      self_->set_idle(EngineActor::Want::hungry); // Note [Parallel CPU nodes] in cpu_lanes.h
      hungry_ = true;
    }
    if (t.is_shutdown()) {
      // Note [Shutdown during a frame]
      // A Shutdown waits until this actor coordinates nothing.
      if (frames_.empty())
        stop_ = true;
      else
        shutdown_pending_ = true;
      continue;
    }
    run(std::move(t));
  }
}

void Runner::run(ReadyTask&& t) {
  GraphTaskBase& task = *t.graph_task;
  if (!task.has_error()) {
    if (task.spread() && task.set_last_lane(t, cpu_lane(task))) [[unlikely]]
      core_.counters.cpu_nodes_moved.fetch_add(1, std::memory_order_relaxed);
    if (EngineObserver* observer = observer_of(task)) [[unlikely]] {
      run_observed(t, *observer);
    } else {
      try {
        task.run(t, *this);
      } catch (...) {
        task.set_error(current_exception_or_unwind()); // Note [A thread that exits inside a node]
      }
    }
  }
  t.node.reset();                          // the node goes before the count drops
  if (!std::exchange(hold_passed_, false)) // Note [A node passes its hold on]
    finish_one(t.graph_task);
}

void Runner::ready(ReadyTask&& t) {
  if (t.graph_task.get() == routing_) {
    ++routed_ready_; // counted in routed(): Note [A node passes its hold on]
    if (routing_->spread()) [[unlikely]] {
      forked_.push_back(std::move(t)); // placed in routed(): Note [Lanes that stay]
      return;
    }
  } else {
    t.graph_task->hold();
  }
  keep_ready(std::move(t));
}

void Runner::keep_ready(ReadyTask&& t) {
  push_ready(std::move(t));
  if (hungry_) [[unlikely]] { // fed by its own node: Note [Parallel CPU nodes] in cpu_lanes.h
    self_->set_idle(EngineActor::Want::none);
    hungry_ = false;
  }
}

void Runner::place_forked(bool fork) {
  for (ReadyTask& t : forked_)
    if (!fork || !send_to_last_lane(core_, actor_, t, cpu_lane(*t.graph_task)))
      keep_ready(std::move(t));
  forked_.clear();
}

unsigned Runner::cpu_lane(const GraphTaskBase& task) {
  if (task.cpu_queue == queue_.id)
    return 0; // its coordinator
  if (worker_lane_ == 0)
    worker_lane_ = lane_of_worker(core_, self_);
  return worker_lane_;
}

void Runner::routing(const ReadyTask& t) {
  routing_ = t.graph_task.get();
  routed_ready_ = 0;
}

void Runner::routed() {
  // A fork's tasks may go to other lanes: Note [A node passes its hold on]
  const bool fork = forked_.size() > 1 && core_.config.cpu_keep_lanes;
  hold_passed_ = routed_ready_ > 0 && !fork;
  if (const std::int64_t more = routed_ready_ - hold_passed_; more > 0)
    routing_->hold(more);
  routing_ = nullptr;
  if (!forked_.empty()) [[unlikely]]
    place_forked(fork); // counted above: another lane may finish them at once
}

void Runner::send(const std::shared_ptr<GraphTaskBase>& task, SentGrad&& g) {
  task->hold();
  const TaskContext& ctx = context_of(*task);
  const Device owner = g.owner;
  post_message(ctx, *task, ctx.owner_of(owner), msg::Grad{task, std::move(g)});
}

template <class Message>
void Runner::post_message(const TaskContext& ctx, const GraphTaskBase& task, const caf::actor& to,
                          Message&& m) {
  if (ctx.observer) [[unlikely]]
    observe_sent(*ctx.observer, actor_, task, m);
  post(to, std::forward<Message>(m));
}

template <class Message>
void Runner::note_received(const GraphTaskBase& task, const Message& m) {
  if (EngineObserver* observer = observer_of(task)) [[unlikely]]
    observe_received(*observer, actor_, task, m);
}

void Runner::finish_one(const std::shared_ptr<GraphTaskBase>& task) {
  if (!task->release())
    return;
  if (task->cpu_queue == queue_.id)
    return; // the coordinator's own loop sees the count
  const TaskContext& ctx = context_of(*task);
  if (!ctx.observer) [[likely]] {
    // A coordinator is a Runner's own actor, an EngineActor; there is none
    // for a CPU-only call whose nodes all run on its queue.
    if (auto* coordinator = caf::actor_cast<caf::abstract_actor*>(ctx.coordinator))
      static_cast<EngineActor*>(coordinator)->wake(); // Note [Wake-up without a message]
    return;
  }
  post_message(ctx, *task, ctx.coordinator, msg::WakeUp{task->id});
}

void Runner::drain_mailbox() {
  if (!self_)
    return;
  while (!stop_ && !self_->mailbox().empty()) {
    auto element = self_->dequeue();
    handle(*element);
  }
}

namespace {

/// Tells the core this is a spin loop (fewer wasted cycles, no memory-order
/// mis-speculation on exit).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

} // namespace

// Note [Spinning before blocking]
// A hop between devices, and the end of a call whose nodes ran on a
// worker, each wake a thread asleep on its mailbox's doorbell (Note
// [Waking an actor without a lock] in engine_actor.h). On the lent GPU
// machines (Firecracker VMs, bench/HISTORY.md, "First run on a GPU") such
// a wake-up took 10-60 µs, far more than the node it waited for. With
// EngineConfig::spin_before_block set, a thread that runs out of work
// first polls its own mailbox for that long: a message that comes
// meanwhile is taken without the sleep and the wake-up (and its sender
// finds the doorbell awake, so it skips the futex call). Only the
// mailbox's owner reads it here, as drain_mailbox does. In an engine with
// CPU workers every actor polls at least EngineConfig::cpu_worker_spin
// (Note [Parallel CPU nodes] in cpu_lanes.h).
template <class Done>
void Runner::await_message(Done done) {
  if (!self_)
    throw EngineError("internal: a coordinator without a mailbox waits for messages");
  if (lanes_)
    self_->set_idle(EngineActor::Want::waiting); // Note [Parallel CPU nodes] in cpu_lanes.h
  const auto spin = lanes_ ? std::max(core_.config.spin_before_block, core_.config.cpu_worker_spin)
                           : core_.config.spin_before_block;
  if (spin.count() > 0) {
    const auto until = std::chrono::steady_clock::now() + spin;
    while (self_->mailbox().empty() && !done() && std::chrono::steady_clock::now() < until)
      cpu_relax();
  }
  self_->await_mail_or(done); // Note [Wake-up without a message]
  if (lanes_)
    self_->set_idle(EngineActor::Want::none);
  hungry_ = false;
  if (self_->mailbox().empty())
    return; // done, woken without a message
  auto element = self_->dequeue();
  handle(*element);
}

void Runner::handle(caf::mailbox_element& element) {
  auto& content = element.content();
  // The types are tried in the order of their frequency: one a node (Grad),
  // one a call that crosses threads (Task), then the rare ones (a WakeUp
  // only for an observed task); a type that does not match costs a name
  // compare (MessageType).
  const MessageType type(content);
  if (type.is<msg::Grad>()) {
    auto& m = content.get_mutable_as<msg::Grad>(0);
    GraphTaskBase& task = *m.task;
    note_received(task, m);
    if (!task.has_error()) {
      try {
        task.accept_sent(m.grad, *this);
      } catch (...) {
        task.set_error(std::current_exception());
      }
    }
    finish_one(m.task);
  } else if (type.is<msg::Task>()) {
    auto& m = content.get_mutable_as<msg::Task>(0);
    note_received(*m.task.graph_task, m);
    push_ready(std::move(m.task)); // already counted by its sender
  } else if (type.is<msg::WakeUp>()) {
    // Nothing to do: the waiting loop re-checks its task's count. Observed
    // only while the task is still coordinated here (see Note [Recording]
    // in actors/trace/recorder.h).
    const auto& m = content.get_as<msg::WakeUp>(0);
    if (m.trace != 0) [[unlikely]]
      for (const auto& frame : frames_)
        if (frame.task->id == m.task_id)
          note_received(*frame.task, m);
  } else if (type.is<msg::Job>()) {
    content.get_mutable_as<msg::Job>(0).fn(); // exceptions are the job's to report
  } else if (type.is<msg::Shutdown>()) {
    queue_.heap.push(ReadyTask::make_shutdown());
  } else if (type.is<caf::down_msg>()) {
    const auto& m = content.get_as<caf::down_msg>(0);
    on_worker_down(m.source, m.reason);
  } else if (type.is<caf::exit_msg>()) {
    const auto& m = content.get_as<caf::exit_msg>(0);
    if (actor_.role == ObservedActor::Role::device_worker) { // asked to exit: stops at once
      self_->fail_state(m.reason);
      stop_ = true;
      // Calls this worker coordinates (reentrant calls made by its nodes)
      // end with it: they fail naming it, as their other actors would see.
      for (auto& frame : frames_) {
        frame.task->set_error(std::make_exception_ptr(
          EngineError("the device worker of " + actor_.device.str() + " stopped (" +
                      core_.system.render(m.reason) + ") while GraphTask " +
                      std::to_string(frame.task->id) + " was running on it")));
        frame.aborted = true;
      }
    }
  } else {
    // A type no engine actor handles: a sender with the wrong handle, or a
    // message added without its handler. Dropped, it would hide the bug and
    // strand whatever waits on it, so it fails loudly, naming the type. A
    // DeviceWorker (Engine::worker hands out its handle) stops as on an exit
    // message: its exit reason and the passes it coordinates name the type,
    // the passes that use it fail so (Runner::on_worker_down), and the engine
    // replaces it. Any other actor's mailbox is the engine's own: the call
    // it coordinates throws.
    const std::string what = actor_.name() + " received a message of unknown type " + type.name() +
                             " (engine actors take those of actors/messages.h)";
    if (actor_.role != ObservedActor::Role::device_worker)
      throw EngineError(what);
    self_->fail_state(caf::make_error(caf::sec::unexpected_message, what));
    stop_ = true;
    for (auto& frame : frames_) {
      frame.task->set_error(std::make_exception_ptr(EngineError(what)));
      frame.aborted = true;
    }
  }
}

void Runner::on_worker_down(const caf::actor_addr& source, const caf::error& reason) {
  for (auto& frame : frames_) {
    const TaskContext& ctx = context_of(*frame.task);
    for (const auto& [device, worker] : ctx.workers) {
      if (worker.address() != source)
        continue;
      frame.task->set_error(std::make_exception_ptr(EngineError(
        "the device worker of " + device.str() + " stopped (" + core_.system.render(reason) +
        ") while GraphTask " + std::to_string(frame.task->id) + " was running on it")));
      frame.aborted = true;
      mailbox_lease_.spoil(); // Note [Parked caller mailbox]
    }
  }
  contexts_.worker_down(source);
}

} // namespace actorgrad::detail
