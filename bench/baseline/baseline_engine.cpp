#include "bench/baseline/baseline_engine.h"

#include <optional>
#include <stdexcept>

#include "actorgrad/device/guards.h"
#include "actorgrad/libengine/engine/detail/graph_task.h"

namespace actorgrad::bench {

// Note [Baseline reentrant calls]
// As PyTorch 1.13's engine.cpp: a backward called inside a node (the thread
// has a worker_device: the caller's CPU, a device thread, or a pool thread)
// creates a GraphTask of depth total_depth + 1 whose CPU work goes to the
// calling thread's local_ready_queue, and whose owner is that thread's
// worker_device. Below max_recursion_depth nested calls on this thread it
// runs thread_main(task) nested, serving the same queue until the task
// completes. At the limit the task is queued for the reentrant pool
// (add_thread_pool_task): an idle pool thread (one is started when none is
// idle) takes the owner's identity (worker_device, local_ready_queue,
// total_depth) and runs thread_main(task) on the owner's queue, while the
// calling thread blocks on the task's completion (PyTorch's
// future_result_->wait(): here the task mutex and `future_done`). A pool
// thread has the owner's worker_device, so completing the task pushes no
// wake-up task: the notify on `future_done` is what wakes the caller.

namespace {

/// What PyTorch keeps in its GraphTask beyond actorgrad's shared state:
/// the task mutex, the owner's CPU ready queue, the future (completed flag
/// and the condition the caller waits on) and the owner device.
struct BaselineTaskData {
  std::mutex mutex;
  std::condition_variable future_done;
  std::shared_ptr<ReadyQueue> cpu_queue;
  std::atomic<bool> completed{false};
  Device owner;
};

BaselineTaskData& data_of(const detail::GraphTask& t) {
  return *static_cast<BaselineTaskData*>(t.executor_data.get());
}

/// PyTorch's mark_as_completed_and_run_post_processing + markCompleted
/// (post-processing itself is GraphTask::finish, on the caller). Returns
/// true for the one call that completed the task.
bool mark_as_completed(BaselineTaskData& data) {
  std::lock_guard<std::mutex> lock(data.mutex);
  if (data.completed.exchange(true, std::memory_order_acq_rel))
    return false;
  data.future_done.notify_all();
  return true;
}

/// PyTorch's thread-local `local_ready_queue`: the caller's CPU queue, a
/// device thread's device queue, a pool thread's current owner's queue.
thread_local std::shared_ptr<ReadyQueue> local_ready_queue;
/// PyTorch's worker_device: empty (NO_DEVICE) on a thread that is not
/// running a backward; set on device threads, on a caller while it runs a
/// backward, and on a pool thread to the owner of the task it serves.
thread_local std::optional<Device> worker_device;
/// Nested reentrant thread_main calls on this thread (PyTorch's current_depth).
thread_local int current_depth = 0;
/// Reentrant depth of the task this thread serves (PyTorch's total_depth).
thread_local int total_depth = 0;

void raise_max(std::atomic<int>& max, int value) {
  int seen = max.load(std::memory_order_relaxed);
  while (value > seen && !max.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

} // namespace

// -- ReadyQueue ----------------------------------------------------------------

void ReadyQueue::push(detail::ReadyTask item, bool increment_outstanding) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (increment_outstanding && item.graph_task)
      item.graph_task->hold();
    heap_.push(std::move(item));
  }
  not_empty_.notify_one();
}

void ReadyQueue::push_shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    heap_.push(detail::ReadyTask::make_shutdown());
  }
  not_empty_.notify_one();
}

detail::ReadyTask ReadyQueue::pop() {
  std::unique_lock<std::mutex> lock(mutex_);
  not_empty_.wait(lock, [this] { return !heap_.empty(); });
  // As PyTorch: move the top out (the heap does not look at it again before pop).
  detail::ReadyTask task = std::move(const_cast<detail::ReadyTask&>(heap_.top()));
  heap_.pop();
  return task;
}

bool ReadyQueue::empty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return heap_.empty();
}

// -- BaselineEngine ------------------------------------------------------------

BaselineEngine::BaselineEngine(std::vector<Device> devices, int max_recursion_depth)
  : max_recursion_depth_(max_recursion_depth) {
  devices_.reserve(devices.size());
  for (Device d : devices) {
    if (d.is_cpu())
      throw std::invalid_argument("BaselineEngine: the CPU is served by the calling thread");
    devices_.push_back({d, std::make_shared<ReadyQueue>(), {}});
  }
  for (auto& dt : devices_) {
    dt.thread = std::thread([this, q = dt.queue, d = dt.device] {
      DeviceGuard current(d); // PyTorch's thread_init: set_device(device)
      worker_device = d;
      local_ready_queue = q;
      thread_main(nullptr);
    });
  }
}

BaselineEngine::~BaselineEngine() {
  for (auto& dt : devices_)
    dt.queue->push_shutdown();
  for (auto& dt : devices_)
    dt.thread.join();
  {
    std::lock_guard<std::mutex> lock(pool_.mutex);
    pool_.stop = true;
  }
  pool_.work.notify_all();
  for (auto& t : pool_.threads) // no task is running: every pool thread is idle
    t.join();
}

std::size_t BaselineEngine::pool_threads() const {
  std::lock_guard<std::mutex> lock(pool_.mutex);
  return pool_.threads.size();
}

const std::shared_ptr<ReadyQueue>&
BaselineEngine::queue_for(const std::shared_ptr<ReadyQueue>& cpu_queue, Device d) const {
  if (d.is_cpu())
    return cpu_queue;
  for (const auto& dt : devices_)
    if (dt.device == d)
      return dt.queue;
  throw std::invalid_argument("BaselineEngine: device " + d.str() + " is not served");
}

variable_list BaselineEngine::execute(const edge_list& roots, variable_list root_grads,
                                      const ExecuteOptions& options, const edge_list& outputs) {
  // init_local_ready_queue: the caller's CPU queue, shared by its nested calls.
  if (!local_ready_queue)
    local_ready_queue = std::make_shared<ReadyQueue>();
  const bool reentrant = worker_device.has_value();
  auto [task, first] = detail::GraphTask::create(roots, std::move(root_grads), options, outputs,
                                                 reentrant ? total_depth + 1 : 0);
  for (Device d : task->devices())
    (void)queue_for(nullptr, d); // refuse unserved devices before anything runs
  task->executor = this;         // a backward inside one of its nodes comes back here
  auto data = std::make_shared<BaselineTaskData>();
  data->cpu_queue = local_ready_queue;
  task->executor_data = data;

  execute_with_graph_task(task, std::move(first));
  { // PyTorch's `fut->wait()`: returns at once unless the task was handed off
    std::unique_lock<std::mutex> lock(data->mutex);
    data->future_done.wait(lock, [&] { return data->completed.load(std::memory_order_acquire); });
  }
  return task->finish();
}

void BaselineEngine::execute_with_graph_task(const std::shared_ptr<detail::GraphTask>& task,
                                             detail::ReadyTask&& first) {
  BaselineTaskData& data = data_of(*task);
  std::unique_lock<std::mutex> lock(data.mutex);
  const auto& queue = queue_for(data.cpu_queue, task->device_of(first.node.get()));
  if (!worker_device) {
    // A plain call from a thread outside the engine: it drives its task.
    worker_device = Device::cpu();
    data.owner = *worker_device;
    queue->push(std::move(first));
    lock.unlock();
    thread_main(task);
    worker_device.reset();
    return;
  }
  // A reentrant call: see Note [Baseline reentrant calls].
  data.owner = *worker_device;
  queue->push(std::move(first));
  if (current_depth >= max_recursion_depth_) {
    add_thread_pool_task(task);
    return;
  }
  ++total_depth;
  ++current_depth;
  raise_max(max_frames_, current_depth);
  lock.unlock();
  thread_main(task);
  --current_depth;
  --total_depth;
}

void BaselineEngine::evaluate(detail::GraphTask& task, detail::ReadyTask& t) {
  variable_list grads = task.evaluate(t);
  if (grads.empty())
    return;
  BaselineTaskData& data = data_of(task);
  const Node& fn = detail::GraphTask::node_of(t);
  // PyTorch: `std::lock_guard<std::mutex> lock(graph_task->mutex_);` around
  // the dependency update, the not_ready_ buffers and the queue pushes.
  std::lock_guard<std::mutex> lock(data.mutex);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Edge& next = fn.next_edge(i);
    if (!next.is_valid())
      continue;
    const auto source = detail::ActorgradGraph::local_source(fn, grads[i]);
    if (auto ready = task.accept(t.graph_task, next, std::move(grads[i]), source))
      queue_for(data.cpu_queue, next.function->device())->push(std::move(*ready));
  }
}

void BaselineEngine::thread_main(const std::shared_ptr<detail::GraphTask>& task) {
  while (!task || !data_of(*task).completed.load(std::memory_order_acquire)) {
    std::shared_ptr<detail::GraphTask> local_task;
    {
      detail::ReadyTask t = local_ready_queue->pop();
      if (t.is_shutdown())
        break;
      if (t.is_wake_up()) // look at the exit condition again
        continue;
      local_task = std::static_pointer_cast<detail::GraphTask>(t.graph_task);
      if (!local_task->has_error()) {
        try {
          evaluate(*local_task, t);
        } catch (...) {
          local_task->set_error(std::current_exception());
        }
      }
    }
    // The ready task (and its inputs) is gone before the count drops, as in PyTorch.
    if (local_task->release()) {
      BaselineTaskData& data = data_of(*local_task);
      // The owner may be asleep in pop(): wake it (not needed when this
      // thread is the owner, or serves the owner's queue for it).
      if (mark_as_completed(data) && *worker_device != data.owner)
        queue_for(data.cpu_queue, data.owner)
          ->push(detail::ReadyTask::make_wake_up(local_task->reentrant_depth), false);
    }
  }
}

void BaselineEngine::add_thread_pool_task(const std::weak_ptr<detail::GraphTask>& task) {
  handoffs_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(pool_.mutex);
    // Tasks queued by other threads may already be waiting for the idle
    // workers: start one more thread unless an idle one is left for this.
    const bool create_thread = pool_.num_workers <= pool_.graphtasks_queue.size();
    pool_.graphtasks_queue.push(task);
    // PyTorch starts (and detaches) the thread after unlocking; this one is
    // kept for joining, so it is started under the lock that guards `threads`.
    if (create_thread)
      pool_.threads.emplace_back([this] { reentrant_thread_init(); });
  }
  // Works for a new thread too: wait() tests the predicate before waiting.
  pool_.work.notify_one();
}

void BaselineEngine::reentrant_thread_init() {
  for (;;) {
    std::unique_lock<std::mutex> lock(pool_.mutex);
    ++pool_.num_workers;
    pool_.work.wait(lock, [this] { return pool_.stop || !pool_.graphtasks_queue.empty(); });
    --pool_.num_workers;
    if (pool_.stop)
      return;
    std::weak_ptr<detail::GraphTask> weak = std::move(pool_.graphtasks_queue.front());
    pool_.graphtasks_queue.pop();
    lock.unlock();
    std::shared_ptr<detail::GraphTask> task = weak.lock();
    if (!task) // the caller is gone: nothing to run
      continue;
    BaselineTaskData& data = data_of(*task);
    worker_device = data.owner; // PyTorch's set_device(graph_task->owner_)
    local_ready_queue = queue_for(data.cpu_queue, data.owner);
    total_depth = task->reentrant_depth;
    thread_main(task);
  }
}

} // namespace actorgrad::bench
