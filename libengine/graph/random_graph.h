#pragma once
/// @file random_graph.h
/// A generated define-once graph of many small nodes (tests and benchmarks).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "actorgrad/libengine/graph/graph.h"
#include "actorgrad/libengine/tensor/shape.h"

namespace actorgrad::define_once {

/// Shape of a generated graph: `lanes` chains, each starting at its own
/// input; every op node takes the previous node of its lane and, with
/// probability `cross_link`, also a node of a neighbouring lane, so a change
/// to one input reaches only part of the graph.
struct RandomGraphSpec {
  std::size_t nodes = 10000; ///< inputs included
  std::size_t lanes = 100;   ///< also the number of inputs
  double cross_link = 0.1;
  std::uint64_t seed = 1;
  Shape value_shape{4};
};

/// The ids of a generated graph.
struct RandomGraph {
  std::vector<NodeId> inputs;
  /// Every node, inputs first, in creation order.
  std::vector<NodeId> all;
};

/// Adds a generated graph to `g` (inputs set to values drawn from `seed`).
/// Ops are tanh / affine / add / mul, so values stay in [-1, 1]; the same
/// spec always gives the same graph and values.
RandomGraph make_random_graph(Graph& g, const RandomGraphSpec& spec);

} // namespace actorgrad::define_once
