#pragma once
/// @file baseline_engine.h
/// The benchmark baseline: a faithful port of PyTorch's engine design
/// (torch/csrc/autograd/engine.cpp, 1.13) running actorgrad's own Nodes and
/// GraphTask state. Lives in bench/ only: it exists to be measured against.
///
/// - ReadyQueue: a std::priority_queue of ReadyTasks under ReadyOrder guarded
///   by a std::mutex and a std::condition_variable (PyTorch's
///   ReadyQueue::push/pop).
/// - GraphTask: actorgrad's GraphTask (dependencies, InputBuffers, exec
///   info, atomic outstanding count); `accept` (PyTorch's dependency
///   decrement + not_ready_ InputBuffer add) is called under a per-task
///   std::mutex, as PyTorch holds graph_task->mutex_ in evaluate_function.
/// - The caller thread runs thread_main on its thread-local CPU ready queue
///   until the task completes; one thread per device runs thread_main on the
///   device's queue forever; a thread that completes a task it does not own
///   pushes a wake-up task to the owner's queue.
/// - Reentrant calls (backward inside a node, on the caller's thread or on a
///   device thread) nest thread_main on the same thread with depth + 1, up to
///   max_recursion_depth nested calls per thread; past that the GraphTask is
///   handed to a reentrant pool thread that serves the owner's queue while
///   the calling thread blocks on the task's completion (PyTorch's
///   add_thread_pool_task / reentrant_thread_init / future wait).

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "actorgrad/device/device.h"
#include "actorgrad/libengine/engine/detail/graph_task.h"
#include "actorgrad/libengine/engine/executor.h"

namespace actorgrad::bench {

/// PyTorch's ReadyQueue.
class ReadyQueue {
public:
  /// Pushes `item`; increments its GraphTask's outstanding count first when
  /// `increment_outstanding` (PyTorch's incrementOutstandingTasks).
  void push(detail::ReadyTask item, bool increment_outstanding = true);
  void push_shutdown();
  /// Blocks until a task is ready and returns the one that runs next.
  detail::ReadyTask pop();
  bool empty() const;

private:
  mutable std::mutex mutex_;
  std::condition_variable not_empty_;
  /// PyTorch's heap_: a std::priority_queue (not actorgrad's ReadyHeap, so
  /// that changes to the actor engine's heap leave the baseline as it is).
  std::priority_queue<detail::ReadyTask, std::vector<detail::ReadyTask>, detail::ReadyOrder> heap_;
};

class BaselineEngine final : public Executor {
public:
  /// PyTorch's MAX_DEPTH: nested reentrant calls on one thread.
  static constexpr int default_max_recursion_depth = 60;

  /// One thread per entry of `devices` (each a non-CPU device).
  explicit BaselineEngine(std::vector<Device> devices = {},
                          int max_recursion_depth = default_max_recursion_depth);
  ~BaselineEngine() override;
  BaselineEngine(const BaselineEngine&) = delete;
  BaselineEngine& operator=(const BaselineEngine&) = delete;

  variable_list execute(const edge_list& roots, variable_list root_grads,
                        const ExecuteOptions& options, const edge_list& outputs) override;

  /// GraphTasks handed to the reentrant pool so far.
  std::size_t handoffs() const { return handoffs_.load(std::memory_order_relaxed); }
  /// Reentrant pool threads started so far.
  std::size_t pool_threads() const;
  /// The most nested thread_main calls seen on one thread.
  int max_frames_per_thread() const { return max_frames_.load(std::memory_order_relaxed); }

private:
  struct DeviceThread {
    Device device;
    std::shared_ptr<ReadyQueue> queue;
    std::thread thread;
  };
  /// PyTorch's ThreadPoolShared: GraphTasks waiting for a reentrant pool
  /// thread, and the idle threads waiting for them on `work`.
  struct ThreadPoolShared {
    mutable std::mutex mutex;
    std::condition_variable work;
    std::queue<std::weak_ptr<detail::GraphTask>> graphtasks_queue;
    std::size_t num_workers = 0; ///< idle pool threads
    bool stop = false;           ///< set by ~BaselineEngine (PyTorch leaks its pool)
    std::vector<std::thread> threads;
  };

  const std::shared_ptr<ReadyQueue>& queue_for(const std::shared_ptr<ReadyQueue>& cpu_queue,
                                               Device d) const;
  /// PyTorch's execute_with_graph_task: push the root, then run it here
  /// (nested) or hand it to the reentrant pool.
  void execute_with_graph_task(const std::shared_ptr<detail::GraphTask>& task,
                               detail::ReadyTask&& first);
  /// PyTorch's Engine::thread_main: `task` null for a device thread (runs
  /// until shutdown), else runs until `task` completes.
  void thread_main(const std::shared_ptr<detail::GraphTask>& task);
  void evaluate(detail::GraphTask& task, detail::ReadyTask& t);
  void add_thread_pool_task(const std::weak_ptr<detail::GraphTask>& task);
  void reentrant_thread_init();

  const int max_recursion_depth_;
  std::vector<DeviceThread> devices_;
  ThreadPoolShared pool_;
  std::atomic<std::size_t> handoffs_{0};
  std::atomic<int> max_frames_{0};
};

} // namespace actorgrad::bench
