#pragma once
/// @file baseline_engine.h
/// The benchmark baseline: a faithful port of PyTorch's engine design
/// (torch/csrc/autograd/engine.cpp, 1.13) running actorgrad's own Nodes and
/// GraphTask state. Lives in bench/ only: it exists to be measured against.
///
/// - ReadyQueue: a ReadyOrder heap of NodeTasks guarded by a std::mutex and
///   a std::condition_variable (PyTorch's ReadyQueue::push/pop).
/// - GraphTask: actorgrad's GraphTask (dependencies, InputBuffers, exec
///   info, atomic outstanding count); `accept` (PyTorch's dependency
///   decrement + not_ready_ InputBuffer add) is called under a per-task
///   std::mutex, as PyTorch holds graph_task->mutex_ in evaluate_function.
/// - The caller thread runs thread_main on its thread-local CPU ready queue
///   until the task completes; one thread per device runs thread_main on the
///   device's queue forever; a device thread that completes a task pushes a
///   wake-up NodeTask to the owner's CPU queue.
/// - Reentrant calls (backward inside a node) nest thread_main on the same
///   thread with depth + 1. The thread-pool hand-off past
///   max_recursion_depth is not ported (the benchmarks do not go that deep).

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "device/device.h"
#include "libengine/engine/executor.h"
#include "libengine/engine/node_task.h"

namespace actorgrad::bench {

/// PyTorch's ReadyQueue.
class ReadyQueue {
public:
  /// Pushes `item`; increments its GraphTask's outstanding count first when
  /// `increment_outstanding` (PyTorch's incrementOutstandingTasks).
  void push(NodeTask item, bool increment_outstanding = true);
  void push_shutdown();
  /// Blocks until a task is ready and returns the one that runs next.
  NodeTask pop();
  bool empty() const;

private:
  mutable std::mutex mutex_;
  std::condition_variable not_empty_;
  ReadyHeap heap_;
};

class BaselineEngine final : public Executor {
public:
  /// One thread per entry of `devices` (each a non-CPU device).
  explicit BaselineEngine(std::vector<Device> devices = {});
  ~BaselineEngine() override;
  BaselineEngine(const BaselineEngine&) = delete;
  BaselineEngine& operator=(const BaselineEngine&) = delete;

  variable_list execute(const edge_list& roots, variable_list root_grads,
                        const ExecuteOptions& options, const edge_list& outputs) override;

private:
  struct DeviceThread {
    Device device;
    std::shared_ptr<ReadyQueue> queue;
    std::thread thread;
  };
  friend struct BaselineAccess;

  const std::shared_ptr<ReadyQueue>& queue_for(const std::shared_ptr<ReadyQueue>& cpu_queue,
                                               Device d) const;
  /// PyTorch's Engine::thread_main: `task` null for a device thread (runs
  /// until shutdown), else runs until `task` completes.
  void thread_main(const std::shared_ptr<GraphTask>& task, const std::shared_ptr<ReadyQueue>& queue,
                   Device worker_device);
  void evaluate(const std::shared_ptr<GraphTask>& task, NodeTask& t);

  std::vector<DeviceThread> devices_;
};

} // namespace actorgrad::bench
