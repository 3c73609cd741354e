#pragma once
/// @file ready_order.h
/// The precomputed order of the sequential lower bounds (ours and libtorch's).

#include <cstdint>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

namespace actorgrad::bench {

/// One node of a precomputed backward, and where each of its outputs goes.
template <class NodeT>
struct PlannedStep {
  NodeT* fn;
  std::size_t num_inputs;
  /// (step, input) per output; step -1 where the output feeds nothing.
  std::vector<std::pair<std::int32_t, std::uint32_t>> targets;
};

/// The nodes reachable from `root` in the order a single-threaded engine
/// runs them (dependencies counted, then higher sequence_nr first). Works
/// for actorgrad::Node and torch::autograd::Node alike.
template <class NodeT>
std::vector<PlannedStep<NodeT>> plan_ready_order(NodeT* root) {
  std::unordered_map<NodeT*, int> deps{{root, 0}};
  std::vector<NodeT*> stack{root};
  while (!stack.empty()) {
    NodeT* fn = stack.back();
    stack.pop_back();
    for (const auto& e : fn->next_edges()) {
      if (!e.is_valid())
        continue;
      auto [it, fresh] = deps.try_emplace(e.function.get(), 0);
      ++it->second;
      if (fresh)
        stack.push_back(e.function.get());
    }
  }
  auto later = [](NodeT* a, NodeT* b) { return a->sequence_nr() < b->sequence_nr(); };
  std::priority_queue<NodeT*, std::vector<NodeT*>, decltype(later)> ready(later);
  ready.push(root);
  std::unordered_map<NodeT*, std::int32_t> index;
  std::vector<NodeT*> nodes;
  while (!ready.empty()) {
    NodeT* fn = ready.top();
    ready.pop();
    index[fn] = static_cast<std::int32_t>(nodes.size());
    nodes.push_back(fn);
    for (const auto& e : fn->next_edges())
      if (e.is_valid() && --deps[e.function.get()] == 0)
        ready.push(e.function.get());
  }
  std::vector<PlannedStep<NodeT>> steps;
  steps.reserve(nodes.size());
  for (NodeT* fn : nodes) {
    PlannedStep<NodeT> s{fn, static_cast<std::size_t>(fn->num_inputs()), {}};
    for (const auto& e : fn->next_edges())
      s.targets.emplace_back(e.is_valid() ? index.at(e.function.get()) : -1, e.input_nr);
    steps.push_back(std::move(s));
  }
  return steps;
}

} // namespace actorgrad::bench
