#include "actorgrad/libengine/graph/forward_executor.h"

#include "actorgrad/libengine/graph/graph.h"

namespace actorgrad::define_once {

void SequentialForward::run(Graph& graph, const RecomputePlan& plan) {
  for (NodeId id : plan.order)
    graph.recompute(id, plan.record_history);
}

} // namespace actorgrad::define_once
