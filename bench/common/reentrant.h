#pragma once
/// @file reentrant.h
/// The reentrant-backward workload: a backward whose node runs a nested
/// backward on a fresh small graph, whose node runs another, down to a
/// given depth (as gradient checkpointing does, one level per block).

#include <atomic>
#include <functional>
#include <memory>

#include "actorgrad/libengine/engine/executor.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::bench {

/// d loss / d input for one level's graph: a nested grad() on an engine, or
/// the sequential lower bound.
using NestedGrad = std::function<Tensor(const Tensor& loss, const Tensor& input)>;

/// One level is `loss = sum(R(z) * 3)` on a leaf z of shape [1] (on the
/// case's device), where R is
/// a custom function (identity forward) whose backward builds the next
/// level's graph and calls `nested(loss, z)` on it (checking that it gives
/// 3), unless it is the last level. So a backward of the top level runs
/// depth + 1 backward calls, depth of them reentrant, each running 3 nodes
/// (SumBackward, MulBackward, R) and capturing z's gradient. On a device,
/// the nested calls are made on the engine's device thread. Every engine
/// does the same forward and node work; only the scheduling differs.
class ReentrantCase {
public:
  /// On `engine` (grad() with the engine for the top level; nested calls
  /// reach the engine running their node through default_executor()), or,
  /// when `engine` is null, the sequential lower bound: each level's nodes
  /// called directly along the chain, no GraphTask, no queue.
  ReentrantCase(int depth, Executor* engine, Device device = Device::cpu());

  /// One backward of the top level (its graph is retained for the next).
  /// Throws std::logic_error if a nested call gave a wrong gradient.
  void run();
  /// Nodes run by one run(): 3 per backward call.
  std::size_t nodes() const { return 3 * static_cast<std::size_t>(depth_ + 1); }
  /// Backward calls per run(): the top level and `depth` nested ones.
  int calls() const { return depth_ + 1; }

private:
  int depth_;
  Device device_;
  std::shared_ptr<const NestedGrad> nested_;
  std::shared_ptr<std::atomic<int>> nested_ok_;
  std::function<Tensor()> top_;
  Tensor x_, loss_;
};

/// The sequential lower bound of NestedGrad: from loss's node, calls each
/// node's apply on the gradient of its single input and follows its single
/// next edge until `input`'s gradient edge; returns the gradient arriving
/// there. Throws std::logic_error if the graph is not such a chain.
Tensor chain_grad(const Tensor& loss, const Tensor& input);

} // namespace actorgrad::bench
