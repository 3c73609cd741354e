#pragma once
/// @file parallel_forward.h
/// Parallel re-forward of a define-once graph on the actor engine.

#include "actorgrad/libengine/graph/forward_executor.h"

namespace actorgrad {

class Engine;

/// A ForwardExecutor that runs the dirty nodes of a request where backward
/// would run them: a node whose inputs live on a sim (or other accelerator)
/// device runs on that device's worker actor (Engine::post); a CPU node runs
/// on the calling thread. A node starts as soon as its last dirty parent
/// finishes, so independent dirty branches on different devices are
/// recomputed at the same time.
///
///     define_once::Graph g;  ...
///     g.set_forward_executor(std::make_shared<ParallelForward>(engine));
///     g.forward(y);          // dirty nodes on sim:0 and sim:1 run concurrently
///
/// Every device a planned node runs on must be served by `engine`.
class ParallelForward final : public define_once::ForwardExecutor {
public:
  /// `engine` must outlive the runner.
  explicit ParallelForward(Engine& engine) : engine_(engine) {}

  void run(define_once::Graph& graph, const define_once::RecomputePlan& plan) override;

private:
  Engine& engine_;
};

} // namespace actorgrad
