#pragma once
/// @file forward_executor.h
/// What runs the dirty nodes of a define-once request.

#include "actorgrad/libengine/graph/dirty_walk.h"

namespace actorgrad::define_once {

class Graph;

/// Runs a RecomputePlan: calls Graph::recompute for every planned node,
/// each after its planned parents. Returns when all are done; rethrows the
/// first failure (nodes that depend on a failed node are left dirty).
class ForwardExecutor {
public:
  virtual ~ForwardExecutor() = default;
  virtual void run(Graph& graph, const RecomputePlan& plan) = 0;
};

/// Runs the plan on the calling thread, in plan order.
class SequentialForward final : public ForwardExecutor {
public:
  void run(Graph& graph, const RecomputePlan& plan) override;
};

} // namespace actorgrad::define_once
