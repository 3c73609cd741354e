#include "actors/detail/task_runner.h"

#include <unistd.h>

#include <caf/send.hpp>
#include <caf/system_messages.hpp>

#include "actors/detail/device_worker.h"
#include "actors/detail/reentrant_pool.h"

#include "libengine/engine/errors.h"
#include "libengine/engine/evaluate.h"

namespace actorgrad::detail {

// Note [Completion without a lock]
// GraphTask::outstanding_tasks counts the task's ready NodeTasks (in any
// actor's heap or in a msg::Task) plus its msg::Grad messages in flight.
// An actor increments it *before* it pushes a task or sends a message and
// decrements it only *after* it finished the task or handled the message,
// having first counted whatever that produced. So the count can only reach
// zero when no work of the task is left anywhere. The actor whose decrement
// reaches zero tells the coordinator with a msg::WakeUp, unless it serves
// the coordinator's queue, whose loop checks the count after every message
// and task. A WakeUp that arrives after its task was done is harmless.
//
// Note [Errors]
// The first error wins (GraphTask::set_error). Afterwards every actor still
// drains the task's tasks and messages, without running nodes, so the count
// reaches zero and nothing of the task is left behind in any heap. Only a
// dead worker ends the wait early: its share of the count is lost, and the
// coordinator, which monitors the workers of its task, fails the task when
// it sees the worker's down message.
//
// Note [Reentrant backward and the depth handoff]
// A node that calls backward runs inside run_task, inside this actor's
// loop. The nested GraphTask is coordinated by the same runner, with the
// same heap and mailbox (coordinate is simply called again): the nested
// loop keeps serving everything this actor owns, other tasks included,
// and the nested task's tasks run first because they are deeper. Each such
// frame costs stack, so after max_recursion_depth nested frames on one
// thread the runner hands its whole queue (heap + identity, `queue_`) and
// the nested task to a pool worker and waits. While it waits, every message
// that reaches its mailbox is forwarded to that worker, which owns the
// queue meanwhile; down messages are handled here, because the frames they
// abort are here. When the nested task completes, the pool worker drains
// its mailbox into the heap and hands the queue back (msg::HandBack); a
// message forwarded after that final drain reaches the pool worker when it
// no longer serves the queue, and is routed back by ownership (handle()
// re-delivers whatever is not owned by the queue it serves). Message order
// between two actors is FIFO, so Serving precedes HandBack and the
// requester never loses track of who holds its queue.

// Note [Caller scratch reuse]
// A synchronous backward builds a TaskRunner on the caller's thread for the
// call only. Its ready heap and frame stack would start empty every call
// and regrow (for a graph whose heap holds w tasks: log2(w) reallocations
// moving every NodeTask, and a vector of w * sizeof(NodeTask) bytes, large
// enough to make glibc consolidate its fast bins). So a caller runner takes
// the storage the previous one on this thread left behind (empty, with its
// capacity), as PyTorch's thread-local local_ready_queue keeps its heap
// between calls. Only this thread touches it: no synchronization.

namespace {
thread_local TaskRunner* current_runner = nullptr;
thread_local TaskRunner::Scratch spare_caller_scratch;

void raise_max(std::atomic<int>& max, int value) {
  int seen = max.load(std::memory_order_relaxed);
  while (value > seen && !max.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}
} // namespace

TaskRunner::TaskRunner(EngineCore& core, caf::blocking_actor* self,
                       std::optional<Device> worker_device)
  : core_(core),
    self_(self),
    queue_(this),
    worker_device_(worker_device),
    device_(worker_device.value_or(Device::cpu())),
    prev_current_(current_runner),
    caller_(!self && !worker_device) {
  if (caller_) {
    heap_ = std::move(spare_caller_scratch.heap);
    frames_ = std::move(spare_caller_scratch.frames);
  }
  current_runner = this;
}

TaskRunner::~TaskRunner() {
  current_runner = prev_current_;
  if (caller_ && heap_.empty() && frames_.empty()) { // see Note [Caller scratch reuse]
    spare_caller_scratch.heap = std::move(heap_);
    spare_caller_scratch.frames = std::move(frames_);
  }
}

TaskRunner* TaskRunner::current() { return current_runner; }

void TaskRunner::ensure_mailbox() {
  if (self_)
    return;
  own_mailbox_.emplace(core_.system, true);
  self_ = own_mailbox_->ptr();
}

std::shared_ptr<TaskContext> TaskRunner::make_context(const GraphTask& task) {
  auto ctx = std::make_shared<TaskContext>();
  ctx->coordinator_queue = queue_;
  ctx->recorder = core_.recording.load(std::memory_order_acquire);
  if (task.devices().empty() && !worker_device_)
    return ctx; // CPU only, on a caller: every node runs here, no message is sent
  ensure_mailbox();
  ctx->coordinator = caf::actor_cast<caf::actor>(self_);
  for (Device d : task.devices()) {
    caf::actor w = core_.worker(d); // throws naming the served devices
    if (w != ctx->coordinator)
      self_->monitor(w);
    ctx->workers.emplace_back(d, std::move(w));
  }
  return ctx;
}

bool TaskRunner::owned_here(const TaskContext& ctx, Device d) const {
  return d.is_cpu() ? ctx.coordinator_queue == queue_ : (worker_device_ && *worker_device_ == d);
}

void TaskRunner::coordinate(const std::shared_ptr<GraphTask>& task, NodeTask&& first) {
  const bool reentrant = current_graph_task() != nullptr;
  if (reentrant && reentrant_frames_ >= core_.config.max_recursion_depth) {
    coordinate_in_pool(task, std::move(first));
    return;
  }
  if (reentrant) {
    ++reentrant_frames_;
    raise_max(core_.max_reentrant_frames, reentrant_frames_);
  }
  try {
    coordinate_here(task, std::move(first));
  } catch (...) {
    reentrant_frames_ -= reentrant ? 1 : 0;
    throw;
  }
  reentrant_frames_ -= reentrant ? 1 : 0;
}

void TaskRunner::coordinate_here(const std::shared_ptr<GraphTask>& task, NodeTask&& first) {
  auto ctx = make_context(*task);
  task->executor_data = ctx;
  task->outstanding_tasks.store(1, std::memory_order_relaxed);
  Device root_device = first.fn->device();
  if (owned_here(*ctx, root_device)) {
    if (ctx->recorder) [[unlikely]]
      record(*ctx, trace::EventKind::ready, *task, first.fn.get());
    heap_.push(std::move(first));
  } else {
    msg::Task m{std::move(first)};
    if (ctx->recorder) [[unlikely]]
      m.trace = record_send(*ctx, trace::MessageKind::task, *task, m.task.fn.get());
    caf::anon_send(ctx->worker(root_device), std::move(m));
  }

  frames_.push_back({task.get()});
  const std::size_t frame = frames_.size() - 1;
  auto waiting = [&] {
    return task->outstanding_tasks.load(std::memory_order_acquire) != 0 && !frames_[frame].aborted;
  };
  while (waiting()) {
    drain_mailbox();
    if (!heap_.empty())
      run_task(heap_.pop());
    else if (waiting())
      await_message(); // the rest of the task is on other actors
  }
  frames_.pop_back();
  for (const auto& [device, worker] : ctx->workers)
    if (worker != ctx->coordinator)
      self_->demonitor(worker);
}

void TaskRunner::coordinate_in_pool(const std::shared_ptr<GraphTask>& task, NodeTask&& first) {
  ensure_mailbox();
  core_.handoffs.fetch_add(1, std::memory_order_relaxed);
  caf::anon_send(core_.pool, msg::Handoff{task, std::move(first), std::move(heap_), queue_,
                                          worker_device_, caf::actor_cast<caf::actor>(self_)});
  heap_ = ReadyHeap{};
  caf::actor server;
  std::vector<caf::mailbox_element_ptr> early; // arrived before Serving
  for (;;) {
    auto element = self_->dequeue();
    auto& content = element->content();
    if (content.match_elements<msg::HandBack>()) {
      heap_ = std::move(content.get_mutable_as<msg::HandBack>(0).heap);
      return;
    }
    if (content.match_elements<msg::Serving>()) {
      server = content.get_as<msg::Serving>(0).worker;
      for (auto& e : early)
        server->enqueue(std::move(e), nullptr);
      early.clear();
    } else if (content.match_elements<caf::down_msg>() || content.match_elements<caf::exit_msg>()) {
      handle(*element);
    } else if (server) {
      server->enqueue(std::move(element), nullptr);
    } else {
      early.push_back(std::move(element));
    }
  }
}

void TaskRunner::serve() {
  while (!stop_) {
    drain_mailbox();
    if (stop_) // an exit message: not one more node
      return;
    if (heap_.empty()) {
      await_message();
      continue;
    }
    NodeTask t = heap_.pop();
    if (t.shutdown)
      return;
    run_task(std::move(t));
  }
}

void TaskRunner::serve_handoff(msg::Handoff&& h) {
  queue_ = h.queue;
  worker_device_ = h.worker_device;
  device_ = h.worker_device.value_or(Device::cpu());
  heap_ = std::move(h.heap);
  caf::anon_send(h.requester, msg::Serving{caf::actor_cast<caf::actor>(self_)});
  // The handed-off call is a reentrant frame on this thread too, so no
  // thread ever holds more than max_recursion_depth of them.
  reentrant_frames_ = 1;
  raise_max(core_.max_reentrant_frames, reentrant_frames_);
  try {
    coordinate_here(h.task, std::move(h.first));
  } catch (...) { // e.g. a device the engine does not serve: the requester rethrows it
    h.task->set_error(std::current_exception());
  }
  reentrant_frames_ = 0;
  drain_mailbox(); // what the requester forwarded so far belongs in its heap
  caf::anon_send(h.requester, msg::HandBack{std::move(heap_)});
  heap_ = ReadyHeap{};
  queue_ = this;
  worker_device_.reset();
}

void TaskRunner::run_task(NodeTask&& t) {
  if (!t.fn) // wake-up task: only makes a waiting loop look again
    return;
  const std::shared_ptr<GraphTask>& task = t.graph_task;
  if (!task->has_error()) {
    const TaskContext& ctx = context_of(*task);
    // The node's slice in a recording spans its run and the delivery of
    // its outputs, so the messages it sends start inside it.
    if (ctx.recorder) [[unlikely]]
      record(ctx, trace::EventKind::node_start, *task, t.fn.get());
    try {
      if (core_.config.on_node_start)
        core_.config.on_node_start(device_, *task, *t.fn);
      variable_list grads = evaluate_function(*task, *t.fn, std::move(t.inputs));
      for (std::size_t i = 0; i < grads.size(); ++i) {
        const Edge& next = t.fn->next_edge(i);
        if (next.is_valid())
          deliver(task, ctx, *t.fn, next, std::move(grads[i]));
      }
    } catch (...) {
      task->set_error(std::current_exception());
    }
    if (ctx.recorder) [[unlikely]]
      record(ctx, trace::EventKind::node_end, *task, t.fn.get());
  }
  finish_one(task);
}

void TaskRunner::deliver(const std::shared_ptr<GraphTask>& task, const TaskContext& ctx,
                         const Node& from, const Edge& next, Tensor&& grad) {
  // A node pruned by selective execution (see GraphTask::in_graph) leads to
  // no requested input: its gradient is dropped where it is produced.
  if (task->selective() && !task->in_graph(next.function.get()))
    return;
  Device owner = next.function->device();
  if (owned_here(ctx, owner)) {
    if (ctx.recorder) [[unlikely]]
      record(ctx, trace::EventKind::input, *task, next.function.get(), trace::MessageKind::none,
             0, next.input_nr);
    accept_local(task, next, std::move(grad), from.stream());
    return;
  }
  task->outstanding_tasks.fetch_add(1, std::memory_order_relaxed);
  msg::Grad m{task, next, std::move(grad), from.stream()};
  // The receiver orders its accumulation stream after this point of the
  // producer's stream, not after whatever the producer enqueued since.
  if (m.producer && m.grad.defined())
    m.ready.record(*m.producer);
  if (ctx.recorder) [[unlikely]]
    m.trace = record_send(ctx, trace::MessageKind::grad, *task, next.function.get(), next.input_nr);
  caf::anon_send(ctx.owner_of(owner), std::move(m));
}

void TaskRunner::accept_local(const std::shared_ptr<GraphTask>& task, const Edge& next,
                              Tensor&& grad, const std::optional<Stream>& producer,
                              const Event* ready_event) {
  if (auto ready = task->accept(next, std::move(grad), producer, ready_event)) {
    if (const TaskContext& ctx = context_of(*task); ctx.recorder) [[unlikely]]
      record(ctx, trace::EventKind::ready, *task, ready->fn.get());
    task->outstanding_tasks.fetch_add(1, std::memory_order_relaxed);
    heap_.push(std::move(*ready));
  }
}

void TaskRunner::finish_one(const std::shared_ptr<GraphTask>& task) {
  if (task->outstanding_tasks.fetch_sub(1, std::memory_order_acq_rel) != 1)
    return;
  const TaskContext& ctx = context_of(*task);
  if (ctx.coordinator_queue == queue_)
    return;
  msg::WakeUp m{task->id};
  if (ctx.recorder) [[unlikely]]
    m.trace = record_send(ctx, trace::MessageKind::wake_up, *task, nullptr);
  caf::anon_send(ctx.coordinator, std::move(m));
}

void TaskRunner::drain_mailbox() {
  if (!self_)
    return;
  while (!stop_ && !self_->mailbox().empty()) {
    auto element = self_->dequeue();
    handle(*element);
  }
}

void TaskRunner::await_message() {
  if (!self_)
    throw EngineError("internal: a coordinator without a mailbox waits for messages");
  auto element = self_->dequeue();
  handle(*element);
}

void TaskRunner::handle(caf::mailbox_element& element) {
  auto& content = element.content();
  if (content.match_elements<msg::Grad>()) {
    auto& m = content.get_mutable_as<msg::Grad>(0);
    const TaskContext& ctx = context_of(*m.task);
    if (ctx.recorder) [[unlikely]]
      record(ctx, trace::EventKind::receive, *m.task, m.next.function.get(),
             trace::MessageKind::grad, m.trace, m.next.input_nr);
    Device owner = m.next.function->device();
    if (!owned_here(ctx, owner)) { // see Note [Reentrant backward and the depth handoff]
      if (ctx.recorder) [[unlikely]]
        m.trace = record_send(ctx, trace::MessageKind::grad, *m.task, m.next.function.get(),
                              m.next.input_nr);
      caf::anon_send(ctx.owner_of(owner), std::move(m));
      return;
    }
    if (!m.task->has_error()) {
      try {
        accept_local(m.task, m.next, std::move(m.grad), m.producer, &m.ready);
      } catch (...) {
        m.task->set_error(std::current_exception());
      }
    }
    finish_one(m.task);
  } else if (content.match_elements<msg::Task>()) {
    auto& m = content.get_mutable_as<msg::Task>(0);
    const GraphTask& task = *m.task.graph_task;
    const TaskContext& ctx = context_of(task);
    if (ctx.recorder) [[unlikely]]
      record(ctx, trace::EventKind::receive, task, m.task.fn.get(), trace::MessageKind::task,
             m.trace);
    Device owner = m.task.fn->device();
    if (!owned_here(ctx, owner)) {
      if (ctx.recorder) [[unlikely]]
        m.trace = record_send(ctx, trace::MessageKind::task, task, m.task.fn.get());
      caf::anon_send(ctx.owner_of(owner), std::move(m));
    } else {
      if (ctx.recorder) [[unlikely]]
        record(ctx, trace::EventKind::ready, task, m.task.fn.get());
      heap_.push(std::move(m.task));
    }
  } else if (content.match_elements<msg::Job>()) {
    content.get_mutable_as<msg::Job>(0).fn(); // exceptions are the job's to report
  } else if (content.match_elements<msg::WakeUp>()) {
    // nothing to do: the waiting loop re-checks its task's count
    if (const auto& m = content.get_as<msg::WakeUp>(0); m.trace != 0) [[unlikely]]
      record_wake_up(m);
  } else if (content.match_elements<msg::Shutdown>()) {
    heap_.push(NodeTask::make_shutdown());
  } else if (content.match_elements<caf::down_msg>()) {
    const auto& m = content.get_as<caf::down_msg>(0);
    on_worker_down(m.source, m.reason);
  } else if (content.match_elements<caf::exit_msg>()) {
    const auto& m = content.get_as<caf::exit_msg>(0);
    if (worker_device_) { // a worker asked to exit stops at once
      self_->fail_state(m.reason);
      stop_ = true;
    }
  }
}

void TaskRunner::on_worker_down(const caf::actor_addr& source, const caf::error& reason) {
  for (auto& frame : frames_) {
    const TaskContext& ctx = context_of(*frame.task);
    for (const auto& [device, worker] : ctx.workers) {
      if (worker.address() != source)
        continue;
      frame.task->set_error(std::make_exception_ptr(EngineError(
        "the device worker of " + device.str() + " stopped (" + core_.system.render(reason) +
        ") while GraphTask " + std::to_string(frame.task->id) + " was running on it")));
      frame.aborted = true;
    }
  }
}

// Note [Recording]
// Each actor appends to its own EventBuffer of the task's Recorder (opened
// on its first event for that recording), so recording takes no lock and
// no actor writes to another's buffer. A WakeUp is not counted in
// outstanding_tasks: its coordinator may see the count reach zero and
// return before the WakeUp arrives, and a WakeUp that arrives after its
// task left this actor's frames is not recorded as received.

void TaskRunner::record(const TaskContext& ctx, trace::EventKind kind, const GraphTask& task,
                        const Node* node, trace::MessageKind message, std::uint64_t message_id,
                        std::uint32_t input_nr) {
  const auto& recorder = ctx.recorder;
  if (trace_recorder_.owner_before(recorder) || recorder.owner_before(trace_recorder_)) {
    trace_recorder_ = recorder;
    trace_buffer_ = &recorder->open_buffer(actor_name());
  }
  trace::Event e;
  e.ts_ns = recorder->now();
  e.kind = kind;
  e.message = message;
  e.graph_task = task.id;
  e.message_id = message_id;
  if (node) {
    e.node = node->name();
    e.sequence_nr = node->sequence_nr();
  }
  e.depth = task.reentrant_depth;
  e.device = node ? node->device() : device_;
  e.input_nr = input_nr;
  trace_buffer_->append(std::move(e));
}

std::uint64_t TaskRunner::record_send(const TaskContext& ctx, trace::MessageKind message,
                                      const GraphTask& task, const Node* node,
                                      std::uint32_t input_nr) {
  const std::uint64_t id = ctx.recorder->next_message_id();
  record(ctx, trace::EventKind::send, task, node, message, id, input_nr);
  return id;
}

void TaskRunner::record_wake_up(const msg::WakeUp& m) {
  for (const auto& frame : frames_) {
    if (frame.task->id != m.task_id)
      continue;
    const TaskContext& ctx = context_of(*frame.task);
    if (ctx.recorder)
      record(ctx, trace::EventKind::receive, *frame.task, nullptr, trace::MessageKind::wake_up,
             m.trace);
    return;
  }
}

std::string TaskRunner::actor_name() const {
  if (!self_ || own_mailbox_)
    return "caller " + std::to_string(::gettid());
  if (dynamic_cast<const DeviceWorker*>(self_))
    return device_.str() + " worker";
  if (dynamic_cast<const PoolWorker*>(self_))
    return "pool worker " + std::to_string(self_->id());
  return "async coordinator " + std::to_string(self_->id());
}

} // namespace actorgrad::detail
