#include "bench/baseline/baseline_engine.h"

#include <atomic>
#include <stdexcept>

#include "libengine/engine/evaluate.h"
#include "libengine/engine/graph_task.h"

namespace actorgrad::bench {

namespace {

/// What PyTorch keeps in its GraphTask beyond actorgrad's shared state:
/// the task mutex, the owner's CPU ready queue, the completed flag (PyTorch's
/// future_completed_) and the owner device.
struct BaselineTaskData {
  std::mutex mutex;
  std::shared_ptr<ReadyQueue> cpu_queue;
  std::atomic<bool> completed{false};
  Device owner;
};

BaselineTaskData& data_of(const GraphTask& t) {
  return *static_cast<BaselineTaskData*>(t.executor_data.get());
}

/// PyTorch's thread-local `local_ready_queue` of a thread that calls backward.
thread_local std::shared_ptr<ReadyQueue> local_ready_queue;
/// Depth of nested thread_main calls on this thread (PyTorch's current_depth).
thread_local int current_depth = 0;
/// Set on the device threads (PyTorch's worker_device); cpu elsewhere.
thread_local bool is_device_thread = false;

} // namespace

// -- ReadyQueue ----------------------------------------------------------------

void ReadyQueue::push(NodeTask item, bool increment_outstanding) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (increment_outstanding && item.graph_task)
      item.graph_task->outstanding_tasks.fetch_add(1, std::memory_order_relaxed);
    heap_.push(std::move(item));
  }
  not_empty_.notify_one();
}

void ReadyQueue::push_shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    heap_.push(NodeTask::make_shutdown());
  }
  not_empty_.notify_one();
}

NodeTask ReadyQueue::pop() {
  std::unique_lock<std::mutex> lock(mutex_);
  not_empty_.wait(lock, [this] { return !heap_.empty(); });
  return heap_.pop();
}

bool ReadyQueue::empty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return heap_.empty();
}

// -- BaselineEngine ------------------------------------------------------------

BaselineEngine::BaselineEngine(std::vector<Device> devices) {
  devices_.reserve(devices.size());
  for (Device d : devices) {
    if (d.is_cpu())
      throw std::invalid_argument("BaselineEngine: the CPU is served by the calling thread");
    devices_.push_back({d, std::make_shared<ReadyQueue>(), {}});
  }
  for (auto& dt : devices_) {
    dt.thread = std::thread([this, q = dt.queue, d = dt.device] {
      is_device_thread = true;
      thread_main(nullptr, q, d);
    });
  }
}

BaselineEngine::~BaselineEngine() {
  for (auto& dt : devices_)
    dt.queue->push_shutdown();
  for (auto& dt : devices_)
    dt.thread.join();
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
  GraphTask* parent = current_graph_task();
  const int depth = parent ? parent->reentrant_depth + 1 : 0;
  if (parent && is_device_thread)
    throw std::runtime_error("BaselineEngine: reentrant backward on a device thread is not ported");
  auto [task, first] = GraphTask::create(roots, std::move(root_grads), options, outputs, depth);
  for (Device d : task->devices())
    (void)queue_for(nullptr, d); // refuse unserved devices before anything runs

  // init_local_ready_queue: the caller's CPU queue, shared by its nested calls.
  if (!local_ready_queue)
    local_ready_queue = std::make_shared<ReadyQueue>();
  auto data = std::make_shared<BaselineTaskData>();
  data->cpu_queue = local_ready_queue;
  data->owner = Device::cpu();
  task->executor_data = data;

  // execute_with_graph_task: push the root (outstanding 1), then serve the
  // CPU queue on this thread until the task completes.
  const auto& root_queue = queue_for(local_ready_queue, first.fn->device());
  root_queue->push(std::move(first));
  ++current_depth;
  thread_main(task, local_ready_queue, Device::cpu());
  --current_depth;
  return task->finish();
}

void BaselineEngine::evaluate(const std::shared_ptr<GraphTask>& task, NodeTask& t) {
  variable_list grads = evaluate_function(*task, *t.fn, std::move(t.inputs));
  if (grads.empty())
    return;
  BaselineTaskData& data = data_of(*task);
  // PyTorch: `std::lock_guard<std::mutex> lock(graph_task->mutex_);` around
  // the dependency update, the not_ready_ buffers and the queue pushes.
  std::lock_guard<std::mutex> lock(data.mutex);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Edge& next = t.fn->next_edge(i);
    if (!next.is_valid())
      continue;
    if (auto ready = task->accept(next, std::move(grads[i])))
      queue_for(data.cpu_queue, ready->fn->device())->push(std::move(*ready));
  }
}

void BaselineEngine::thread_main(const std::shared_ptr<GraphTask>& task,
                                 const std::shared_ptr<ReadyQueue>& queue, Device worker_device) {
  while (!task || !data_of(*task).completed.load(std::memory_order_acquire)) {
    std::shared_ptr<GraphTask> local_task;
    {
      NodeTask t = queue->pop();
      if (t.shutdown)
        break;
      if (!t.graph_task) // wake-up task: look at the exit condition again
        continue;
      local_task = std::move(t.graph_task);
      if (t.fn && !local_task->has_error()) {
        try {
          evaluate(local_task, t);
        } catch (...) {
          local_task->set_error(std::current_exception());
        }
      }
    }
    // The NodeTask (and its inputs) is gone before the count drops, as in PyTorch.
    if (local_task->outstanding_tasks.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      BaselineTaskData& data = data_of(*local_task);
      // mark_as_completed_and_run_post_processing (post-processing is done
      // by GraphTask::finish on the caller).
      if (!data.completed.exchange(true, std::memory_order_acq_rel) &&
          worker_device != data.owner)
        data.cpu_queue->push(NodeTask::wake_up(local_task->reentrant_depth), false);
    }
  }
}

} // namespace actorgrad::bench
