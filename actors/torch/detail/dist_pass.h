#pragma once
/// @file dist_pass.h
/// The passes of distributed backward running in this process, by context,
/// and the gradients that arrive for them (Note [Distributed autograd on
/// actors] in dist_engine.cpp). Internal.

#include <torch/csrc/autograd/function.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "actorgrad/libengine/torch/torch_graph.h"

namespace actorgrad::torch::detail {

class BridgeEngine;

/// A context's pass in this process: listed from its first gradient (or
/// dist_autograd.backward) until its task ended. Its task takes the send
/// functions' gradients that come later as roots (Note [Roots that arrive
/// later]); one that comes before the task's coordinator is known waits on
/// a lock-free stack, which the coordinator empties when it starts.
class Pass {
public:
  explicit Pass(BridgeEngine& bridge) : bridge_(bridge) {}
  ~Pass();
  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;

  BridgeEngine& bridge() const { return bridge_; }
  /// The pass's task: set (once, by the thread that listed the pass) before
  /// it runs and before any other thread reads it.
  const std::shared_ptr<TorchGraphTask>& task() const { return task_; }
  /// Sets the task and its on_coordinated, which hands over the arrivals.
  void set_task(std::shared_ptr<TorchGraphTask> task);

  /// A gradient came for send function `send`: it becomes a ready root of
  /// the task, by message to its coordinator once that is known, and
  /// arrive returns true; or, when libtorch's DistEngine runs the pass
  /// (set_on_stock), false: the caller hands `send` to it. Any thread.
  bool arrive(std::shared_ptr<::torch::autograd::Node> send);
  /// Marks the pass libtorch's (its task has a device): arrive refuses the
  /// gradients that come from now on.
  void set_on_stock();
  /// Takes the send functions that arrived and were not handed over (the
  /// pass goes to libtorch's DistEngine instead: after set_on_stock, so
  /// that every gradient is either taken here or refused by arrive).
  std::vector<std::shared_ptr<::torch::autograd::Node>> take_arrivals();
  /// Fails the task with `error` (a gradient RPC it sent failed, the
  /// context was released), unless the pass ended: its coordinator stops
  /// waiting for the send functions' gradients. Any thread.
  void fail(std::exception_ptr error);
  /// The pass's task ended (end_pass): fail() does nothing from now on.
  void mark_ended() { ended_.store(true); }

private:
  /// libtorch's DistEngine runs the pass (its task has a device). Written
  /// and read under the table's lock (set_on_stock, arrive), so that no
  /// gradient is queued after hand_to_stock (dist_engine.cpp) took them.
  bool on_stock_ = false;
  /// A send function's gradient that came before the coordinator was known.
  struct Arrival {
    std::shared_ptr<::torch::autograd::Node> send;
    Arrival* next = nullptr;
  };
  /// Sends every arrival taken from the stack to the task's coordinator.
  void hand_over();

  BridgeEngine& bridge_;
  std::shared_ptr<TorchGraphTask> task_;
  /// Set by the task's coordinator (on_coordinated), read by arrivals.
  std::atomic<bool> coordinated_{false};
  /// Pushed by arrivals; taken (all at once) by whoever saw `coordinated_`
  /// after its own push or store.
  std::atomic<Arrival*> arrivals_{nullptr};
  /// Set by end_pass; read by fail (from RPC and context-release callbacks).
  std::atomic<bool> ended_{false};
};

/// Lists a pass of `context_id` on the installed bridge and returns it;
/// when one is listed already returns null and sets `running` to it.
/// Throws when actorgrad is not installed.
std::shared_ptr<Pass> list_pass(std::int64_t context_id, std::shared_ptr<Pass>& running);
/// Unlists `pass` of `context_id` (if it is the one listed) and marks it ended.
void end_pass(std::int64_t context_id, const std::shared_ptr<Pass>& pass);

} // namespace actorgrad::torch::detail
