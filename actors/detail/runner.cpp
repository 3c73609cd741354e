// Over 300 lines on purpose: the dispatch loop, the handling of every
// message it drains and the Notes on completion, errors and monitors that
// explain both are one unit; split, a reader would lose the invariants
// (Note [Completion without a lock]) that tie them together.
#include "actorgrad/actors/detail/runner.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <caf/sec.hpp>
#include <caf/system_messages.hpp>

#include "actorgrad/actors/detail/cpu_lanes.h"
#include "actorgrad/actors/detail/fresh_stack.h"
#include "actorgrad/actors/detail/message_type.h"
#include "actorgrad/actors/detail/post.h"
#include "actorgrad/actors/detail/stack_guard.h"
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
// Note [Monitors per actor]
// A coordinator monitors the workers of its task, so that a dead worker
// fails the task instead of hanging it. An actor monitors each worker once
// (monitored_) and keeps the monitor until the worker's down message erases
// it or the actor ends; frames that end do not demonitor. Two reasons:
// CAF 0.17.6's demonitor removes *every* monitor an actor holds on another
// (monitorable_actor::detach drops all matching attachables), so a nested
// call (coordinated by the same actor as its parent) that demonitored at
// its end would silently drop its parent's monitor, and a worker dying
// later would hang the parent; and a monitor and a demonitor per call cost
// about 1,000 instructions. A down message for a worker no frame uses only
// erases it. A monitor outlives its monitoring actor in CAF (the worker
// keeps the attachable until it dies), so a caller mailbox that is
// destroyed rather than parked demonitors first (release_mailbox).

namespace {
thread_local Runner* current_runner = nullptr;
} // namespace

Runner::Runner(EngineCore& core, EngineActor* self, ObservedActor::Role role, ReadyQueue&& queue)
  : core_(core),
    self_(self),
    actor_(role, queue.device, self ? self->id() : 0),
    queue_(std::move(queue)),
    lanes_(core.config.cpu_workers > 1),
    prev_current_(current_runner) {
  Dispatch::queue_ = queue_.id;
  Dispatch::device_ = queue_.device;
  current_runner = this;
}

// Note [Parked caller mailbox]
// A caller thread has no mailbox until a call of it crosses devices (Note
// [CPU calls on a caller]); then its Runner needs one, and a fresh CAF
// blocking actor costs about 2,000 instructions to create and destroy, and
// 1,000 more to monitor its workers: a fifth of a 2-node call rooted on
// another device. So the Runner of calls that ended cleanly parks its
// mailbox, with its monitors, in EngineCore::idle_caller_mailbox
// (compare-exchange from null), and the next caller Runner that needs one
// takes it (exchange with null): one owner at a time, whatever its thread.
// Clean means nothing of the calls it coordinated can still arrive: every
// task's outstanding count reached zero, so no Grad or Task message is in
// flight to it (Note [Completion without a lock]). A WakeUp may still come
// late, and a down message of a worker that died meanwhile; a later Runner
// ignores the first (it names a task id none of its frames has) and
// handles the second as its own (a frame that uses the dead worker fails).
// After an aborted frame (a dead worker: that task's messages may still be
// in flight) or a call that threw, the mailbox is destroyed with its Runner
// instead, as it is when the slot is taken (another thread's mailbox is
// parked). ~Engine destroys the parked one while the actor system still
// exists.

Runner::~Runner() {
  current_runner = prev_current_;
  if (own_mailbox_)
    release_mailbox();
}

void Runner::release_mailbox() {
  own_mailbox_->monitored = std::move(monitored_);
  own_mailbox_->last_context = std::move(last_context_);
  if (mailbox_reusable_ && core_.park_caller_mailbox(own_mailbox_))
    return;
  for (const caf::actor_addr& worker : own_mailbox_->monitored) // Note [Monitors per actor]
    self_->demonitor(worker);
}

Runner* Runner::current() { return current_runner; }

EngineActor& Runner::mailbox() {
  if (!self_) {
    own_mailbox_ = core_.take_caller_mailbox(); // Note [Parked caller mailbox]
    if (own_mailbox_) {
      monitored_ = std::move(own_mailbox_->monitored);
      last_context_ = std::move(own_mailbox_->last_context);
    } else {
      own_mailbox_ = std::make_unique<CallerMailbox>(core_.system);
    }
    self_ = own_mailbox_->actor();
  }
  return *self_;
}

// Note [Reused task contexts]
// A TaskContext is read-only once made (every actor of the task reads it
// through executor_data), and consecutive calls of one actor mostly have
// the same one: the same coordinator and device workers. So an actor keeps
// the last context it made and hands it to the next task whose context
// would equal it, instead of allocating one (and its workers list) per
// call: about 400 instructions of a 2-node call rooted on a device. Equal
// is checked on every call: the same coordinator and devices, each of
// their workers alive. Only a terminated worker is ever replaced (is_dead
// in engine_core.h), so a live handle is still its slot's current one,
// known without loading the slot (an atomic shared_ptr); a worker that
// died gives a new context, never a dead handle. Unobserved calls only: a
// kept context must not keep an observer alive after the engine dropped
// it. A caller's context names its mailbox as the coordinator, so it
// travels with the mailbox when that is parked (CallerMailbox).

std::shared_ptr<TaskContext> Runner::make_context(const GraphTaskBase& task,
                                                  std::shared_ptr<EngineObserver> observer) {
  if (task.devices().empty() && !task.spread() && !self_) {
    auto ctx = std::make_shared<TaskContext>();
    ctx->observer = std::move(observer);
    return ctx; // CPU only, on a caller: every node runs here, no message is sent
  }
  EngineActor& self = mailbox();
  const DeviceList& devices = task.devices();
  const TaskContext* last = last_context_.get();
  const bool comparable =
    !observer && last && caf::actor_cast<caf::abstract_actor*>(last->coordinator) == &self &&
    last->workers.size() == devices.size();
  auto same_and_alive = [](Device d, const std::pair<Device, caf::actor>& w) {
    return w.first == d && !is_dead(w.second);
  };
  if (comparable &&
      std::equal(devices.begin(), devices.end(), last->workers.begin(), same_and_alive))
    return last_context_;
  auto coordinator = caf::actor_cast<caf::actor>(&self);
  // Each worker handle is read once: the one monitored is the one kept. A
  // worker `last` holds was monitored when `last` was made, by this actor
  // (`last` names it as the coordinator), and a monitor is only dropped
  // when its worker dies (Note [Monitors per actor]).
  std::shared_ptr<TaskContext> ctx; // made at the first difference from `last`
  for (std::size_t i = 0; i < devices.size(); ++i) {
    caf::actor w = core_.worker(devices[i]); // throws naming the served devices
    if (!ctx && comparable && last->workers[i].first == devices[i] && last->workers[i].second == w)
      continue;
    if (w != coordinator)
      monitor(w);
    if (!ctx) {
      ctx = std::make_shared<TaskContext>();
      ctx->workers.reserve(devices.size());
      if (i > 0) // the first i equal `last`'s
        ctx->workers.assign(last->workers.begin(), last->workers.begin() + i);
    }
    ctx->workers.emplace_back(devices[i], std::move(w));
  }
  if (!ctx && comparable)
    return last_context_;
  if (!ctx)
    ctx = std::make_shared<TaskContext>();
  ctx->coordinator = std::move(coordinator);
  if (observer)
    ctx->observer = std::move(observer);
  else
    last_context_ = ctx;
  return ctx;
}

void Runner::monitor(const caf::actor& worker) {
  const caf::actor_addr addr = worker.address();
  if (std::find(monitored_.begin(), monitored_.end(), addr) != monitored_.end())
    return;
  monitored_.push_back(addr);
  self_->monitor(worker);
}

void Runner::coordinate(const std::shared_ptr<GraphTaskBase>& task, ReadyTask&& first) {
  const bool reentrant = current_graph_task() != nullptr;
  // Note [A fresh stack past the depth limit]
  const bool fresh_stack =
    reentrant && (reentrant_frames_ >= core_.config.max_recursion_depth || stack_is_short());
  const int outer_frames = fresh_stack ? std::exchange(reentrant_frames_, 0) : reentrant_frames_;
  if (reentrant)
    core_.note_reentrant_frames(++reentrant_frames_);
  try {
    if (fresh_stack) {
      core_.fresh_stacks.fetch_add(1, std::memory_order_relaxed);
      if (auto observer = core_.observer.load(std::memory_order_acquire)) [[unlikely]]
        observer->fresh_stack(actor_, *task);
      auto here = [&] { coordinate_here(task, std::move(first)); };
      on_fresh_stack(here);
    } else {
      coordinate_here(task, std::move(first));
    }
  } catch (...) {
    reentrant_frames_ = outer_frames;
    mailbox_reusable_ = false;
    throw;
  }
  reentrant_frames_ = outer_frames;
}

void Runner::coordinate_here(const std::shared_ptr<GraphTaskBase>& task, ReadyTask&& first) {
  task->cpu_queue = queue_.id;
  auto observer = core_.observer.load(std::memory_order_acquire);
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
  if (serves_nothing_else() && task->devices().empty() && !observer) {
    if (!lanes_) {
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
      ready(std::move(t));
    }
    await_frame(task);
    return;
  }
  if (lanes_ && task->devices().empty()) // Note [Parallel CPU nodes] in cpu_lanes.h
    task->spread_cpu_nodes();
  const TaskContext& ctx = start(task, std::move(observer));
  task->hold(); // the first task
  const Device root_device = task->device_of(first.node.get());
  if (owns(task->cpu_queue, root_device)) {
    if (ctx.observer) [[unlikely]]
      ctx.observer->node_ready(actor_, *task, task->describe(first.node.get()));
    queue_.heap.push(std::move(first));
  } else {
    msg::Task m{std::move(first)};
    if (ctx.observer) [[unlikely]]
      m.trace = ctx.observer->message_sent(actor_, *task, trace::MessageKind::task,
                                            task->describe(m.task.node.get()), 0);
    post(ctx.worker(root_device), std::move(m));
  }
  await_frame(task);
}

const TaskContext& Runner::start(const std::shared_ptr<GraphTaskBase>& task,
                                 std::shared_ptr<EngineObserver> observer) {
  auto ctx = make_context(*task, std::move(observer));
  task->executor_data = ctx;
  if (ctx->observer) [[unlikely]]
    ctx->observer->task_started(actor_, *task);
  return *ctx;
}

void Runner::await_frame(const std::shared_ptr<GraphTaskBase>& task) {
  frames_.push_back({task.get()});
  const std::size_t frame = frames_.size() - 1;
  dispatch_until([&] { return !task->outstanding() || frames_[frame].aborted; });
  frames_.pop_back();
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
    if (lanes_ && queue_.heap.size() > 1)
      share_ready_work(core_, self_, actor_, queue_.heap); // Note [Parallel CPU nodes]
    ReadyTask t = queue_.heap.pop();
    if (lanes_ && queue_.heap.empty() && !t.is_shutdown() && t.graph_task->spread()) {
      self_->set_idle(true); // hungry: Note [Parallel CPU nodes] in cpu_lanes.h
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
    if (const TaskContext& ctx = context_of(task); ctx.observer) [[unlikely]] {
      run_observed(t, *ctx.observer);
    } else {
      try {
        task.run(t, *this);
      } catch (...) {
        task.set_error(current_exception_or_unwind()); // Note [A thread that exits inside a node] (errors.h)
      }
    }
  }
  t.node.reset(); // the node goes before the count drops
  finish_one(t.graph_task);
}

namespace {

/// Passes the device work a running node launches to the task's observer
/// (Note [Stream tracks] in actors/trace/recorder.h).
class NodeLaunches final : public LaunchObserver {
public:
  NodeLaunches(EngineObserver& observer, const ObservedActor& actor, const GraphTaskBase& task,
               const NodeInfo& node)
    : observer_(observer), actor_(actor), task_(task), node_(node) {}

  DeviceRun launched(const DeviceLaunch& work) override {
    return observer_.work_launched(actor_, task_, node_, work);
  }

private:
  EngineObserver& observer_;
  const ObservedActor& actor_;
  const GraphTaskBase& task_;
  const NodeInfo& node_;
};

} // namespace

void Runner::run_observed(ReadyTask& t, EngineObserver& observer) {
  GraphTaskBase& task = *t.graph_task;
  // The node's span covers its run and the delivery of its outputs, so the
  // messages it sends start inside it.
  const NodeInfo info = task.describe(t.node.get());
  observer.node_started(actor_, task, info);
  // Note [Feeds of nested calls]
  // wants_feeds_ belongs to the Runner, not to a task, and a node may make
  // a nested call that this Runner coordinates while the node runs. So the
  // flag is put back as it was, not cleared (a nested observed node must
  // not silence its caller's deliveries), and fed() asks the task for its
  // observer (a nested call started without one sees the flag set too).
  const bool outer_wants_feeds = std::exchange(wants_feeds_, true);
  NodeLaunches launches(observer, actor_, task, info);
  ScopedLaunchObserver launches_here(&launches);
  try {
    task.run(t, *this);
  } catch (...) {
    const std::exception_ptr error = current_exception_or_unwind(); // Note [A thread that exits inside a node]
    task.set_error(error);
    observer.error(actor_, task, error);
  }
  wants_feeds_ = outer_wants_feeds;
  observer.node_finished(actor_, task, info);
}

void Runner::ready(ReadyTask&& t) {
  GraphTaskBase& task = *t.graph_task;
  if (const TaskContext& ctx = context_of(task); ctx.observer) [[unlikely]]
    ctx.observer->node_ready(actor_, task, task.describe(t.node.get()));
  task.hold();
  queue_.heap.push(std::move(t));
  if (hungry_) [[unlikely]] { // fed by its own node: Note [Parallel CPU nodes] in cpu_lanes.h
    self_->set_idle(false);
    hungry_ = false;
  }
}

void Runner::fed(const GraphTaskBase& task, const void* node, std::uint32_t input_nr) {
  if (const TaskContext& ctx = context_of(task); ctx.observer) // Note [Feeds of nested calls]
    ctx.observer->node_fed(actor_, task, task.describe(node), input_nr);
}

void Runner::send(const std::shared_ptr<GraphTaskBase>& task, SentGrad&& g) {
  task->hold();
  const TaskContext& ctx = context_of(*task);
  msg::Grad m{task, std::move(g)};
  if (ctx.observer) [[unlikely]]
    m.trace = ctx.observer->message_sent(actor_, *task, trace::MessageKind::grad,
                                         task->describe(m.grad.node.get()), m.grad.input_nr);
  post(ctx.owner_of(m.grad.owner), std::move(m));
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
  msg::WakeUp m{task->id};
  m.trace = ctx.observer->message_sent(actor_, *task, trace::MessageKind::wake_up, {}, 0);
  post(ctx.coordinator, std::move(m));
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
    self_->set_idle(true); // Note [Parallel CPU nodes] in cpu_lanes.h
  const auto spin = lanes_ ? std::max(core_.config.spin_before_block, core_.config.cpu_worker_spin)
                          : core_.config.spin_before_block;
  if (spin.count() > 0) {
    const auto until = std::chrono::steady_clock::now() + spin;
    while (self_->mailbox().empty() && !done() && std::chrono::steady_clock::now() < until)
      cpu_relax();
  }
  self_->await_mail_or(done); // Note [Wake-up without a message]
  if (lanes_)
    self_->set_idle(false);
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
    const TaskContext& ctx = context_of(task);
    if (ctx.observer) [[unlikely]]
      ctx.observer->message_received(actor_, task, trace::MessageKind::grad,
                                     task.describe(m.grad.node.get()), m.trace, m.grad.input_nr);
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
    GraphTaskBase& task = *m.task.graph_task;
    const TaskContext& ctx = context_of(task);
    const void* node = m.task.node.get();
    if (ctx.observer) [[unlikely]]
      ctx.observer->message_received(actor_, task, trace::MessageKind::task, task.describe(node),
                                     m.trace, 0);
    if (ctx.observer) [[unlikely]]
      ctx.observer->node_ready(actor_, task, task.describe(node));
    queue_.heap.push(std::move(m.task)); // already counted by its sender
  } else if (type.is<msg::WakeUp>()) {
    // Nothing to do: the waiting loop re-checks its task's count. Observed
    // only while the task is still coordinated here (see Note [Recording]
    // in actors/trace/recorder.h).
    const auto& m = content.get_as<msg::WakeUp>(0);
    if (m.trace != 0) [[unlikely]]
      for (const auto& frame : frames_)
        if (frame.task->id == m.task_id)
          if (const auto& obs = context_of(*frame.task).observer)
            obs->message_received(actor_, *frame.task, trace::MessageKind::wake_up, {}, m.trace, 0);
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
        frame.task->set_error(std::make_exception_ptr(EngineError(
          "the device worker of " + actor_.device.str() + " stopped (" +
          core_.system.render(m.reason) + ") while GraphTask " + std::to_string(frame.task->id) +
          " was running on it")));
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
    const std::string what = actor_.name() + " received a message of unknown type " +
                             type.name() + " (engine actors take those of actors/messages.h)";
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
      mailbox_reusable_ = false; // Note [Parked caller mailbox]
    }
  }
  std::erase(monitored_, source); // the monitor is gone with the worker
  last_context_.reset();           // it may hold the dead worker (Note [Reused task contexts])
}

} // namespace actorgrad::detail
