#pragma once
/// @file dirty_walk.h
/// The request walk of a define-once Graph: iterative depth-first descent to
/// the ancestors, decisions on the way back up (seed document, 3.1.2).

#include <cstdint>
#include <functional>
#include <vector>

#include "actorgrad/libengine/graph/node_id.h"

namespace actorgrad::define_once {

class Graph;

/// Visits `roots` and their ancestors depth-first with an explicit stack (no
/// recursion: any depth works) and calls `on_post(id)` once per node, after
/// it was called for all the node's visited parents (so in topological
/// order). `descend(id)` false: the parents of `id` are not visited (an
/// empty function descends everywhere). Throws GraphError on a cycle,
/// naming the nodes on it, or on an unknown id.
void walk_ancestors(const Graph& graph, const std::vector<NodeId>& roots,
                    const std::function<void(NodeId)>& on_post,
                    const std::function<bool(NodeId)>& descend = {});

/// The dirty nodes of one request, with the dependency counts a parallel
/// executor needs.
struct RecomputePlan {
  /// The nodes to recompute, parents before children.
  std::vector<NodeId> order;
  /// Per entry of `order`: how many of its parent edges come from planned nodes.
  std::vector<std::uint32_t> dirty_parents;
  /// Per entry of `order`: the entries fed by it, one per parent edge.
  std::vector<std::vector<std::uint32_t>> dependents;
  /// Recompute in grad mode (values carry autograd history).
  bool record_history = false;

  std::size_t size() const { return order.size(); }
};

/// Walks the ancestors of `roots`; on the way back up a node is planned when
/// it is stale (never computed; a parent's value_version differs from the
/// one it was computed from; or history is wanted and its value has none)
/// or when a planned parent will change. Inputs and parameters are never
/// planned; one without a value is an error naming it.
RecomputePlan plan_recompute(const Graph& graph, const std::vector<NodeId>& roots,
                             bool record_history);

} // namespace actorgrad::define_once
