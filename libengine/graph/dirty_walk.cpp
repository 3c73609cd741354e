#include "actorgrad/libengine/graph/dirty_walk.h"

#include <limits>
#include <string>

#include "actorgrad/libengine/graph/graph.h"
#include "actorgrad/libengine/graph/graph_error.h"

namespace actorgrad::define_once {

namespace {

enum class Mark : std::uint8_t { unvisited, on_path, done };

struct Frame {
  NodeId id;
  std::uint32_t next_parent;
  std::uint32_t parent_limit;
};

// Cycles longer than this are shown by their ends.
constexpr std::size_t kCycleNamesShown = 12;

// `repeat` is a parent of the top frame and sits lower on the path: the
// frames from it to the top form the cycle. Values flow from a node to the
// frame below it, so the cycle is written from `repeat` up the stack in
// reverse (repeat -> top -> ... -> repeat).
GraphError cycle_error(const Graph& graph, const std::vector<Frame>& path, NodeId repeat) {
  std::size_t start = path.size();
  while (path[--start].id != repeat) {
  }
  std::vector<NodeId> cycle{repeat};
  for (std::size_t i = path.size(); i-- > start + 1;)
    cycle.push_back(path[i].id);
  cycle.push_back(repeat);
  std::string text;
  for (std::size_t i = 0; i < cycle.size(); ++i) {
    if (cycle.size() > kCycleNamesShown && i == kCycleNamesShown / 2) {
      text += " -> ... (" + std::to_string(cycle.size() - kCycleNamesShown) + " more)";
      i = cycle.size() - kCycleNamesShown / 2;
    }
    text += (i == 0 ? "" : " -> ") + graph.label(cycle[i]);
  }
  return GraphError("cycle in define-once graph (" + std::to_string(cycle.size() - 1) +
                    " nodes): " + text);
}

bool is_stale(const Graph& graph, const GraphNode& n, bool record_history) {
  if (n.kind != NodeKind::op)
    return false;
  if (n.value_version == 0 || n.parent_versions.size() != n.parents.size())
    return true;
  if (record_history && !n.has_backward_state)
    return true;
  for (std::size_t k = 0; k < n.parents.size(); ++k)
    if (graph.node(n.parents[k]).value_version != n.parent_versions[k])
      return true;
  return false;
}

} // namespace

void walk_ancestors(const Graph& graph, const std::vector<NodeId>& roots,
                    const std::function<void(NodeId)>& on_post,
                    const std::function<bool(NodeId)>& descend) {
  std::vector<Mark> mark(graph.size(), Mark::unvisited);
  std::vector<Frame> path;
  auto enter = [&](NodeId id) {
    mark[id.index] = Mark::on_path;
    const bool into_parents = !descend || descend(id);
    path.push_back(
      {id, 0, into_parents ? static_cast<std::uint32_t>(graph.node(id).parents.size()) : 0});
  };
  for (NodeId root : roots) {
    graph.node(root); // validates the id
    if (mark[root.index] != Mark::unvisited)
      continue;
    enter(root);
    while (!path.empty()) {
      Frame& top = path.back();
      if (top.next_parent < top.parent_limit) {
        const NodeId parent = graph.node(top.id).parents[top.next_parent++];
        if (mark[parent.index] == Mark::on_path)
          throw cycle_error(graph, path, parent);
        if (mark[parent.index] == Mark::unvisited)
          enter(parent); // invalidates `top`
        continue;
      }
      const NodeId done = top.id;
      path.pop_back();
      mark[done.index] = Mark::done;
      on_post(done);
    }
  }
}

RecomputePlan plan_recompute(const Graph& graph, const std::vector<NodeId>& roots,
                             bool record_history) {
  constexpr std::uint32_t kClean = std::numeric_limits<std::uint32_t>::max();
  RecomputePlan plan;
  plan.record_history = record_history;
  std::vector<std::uint32_t> entry(graph.size(), kClean); // node -> index in plan.order
  walk_ancestors(graph, roots, [&](NodeId id) {
    const GraphNode& n = graph.node(id);
    if (n.kind != NodeKind::op) {
      if (!n.value.defined())
        throw GraphError("define-once graph: " + graph.label(id) +
                         " has no value (set it with set_value before forwarding)");
      return;
    }
    std::uint32_t dirty_parents = 0;
    for (NodeId p : n.parents)
      dirty_parents += entry[p.index] != kClean;
    if (dirty_parents == 0 && !is_stale(graph, n, record_history))
      return; // clean: its cached value is returned
    const auto self = static_cast<std::uint32_t>(plan.order.size());
    entry[id.index] = self;
    plan.order.push_back(id);
    plan.dirty_parents.push_back(dirty_parents);
    plan.dependents.emplace_back();
    for (NodeId p : n.parents)
      if (entry[p.index] != kClean)
        plan.dependents[entry[p.index]].push_back(self);
  });
  return plan;
}

} // namespace actorgrad::define_once
