#pragma once
/// @file graph_node.h
/// The state a define-once Graph keeps per node.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "actorgrad/libengine/graph/node_id.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::define_once {

/// What sets a node's value.
enum class NodeKind : std::uint8_t {
  input,     ///< set from outside; may or may not require grad
  parameter, ///< set from outside; a leaf that requires grad
  op,        ///< computed by its op from its parents' values
};

/// The computation of an op node: its parents' values (in parent order) in,
/// its value out. Written in the differentiable ops, so the value carries
/// autograd history when grad mode is on.
using OpFn = std::function<Tensor(const variable_list& parent_values)>;

/// One node of a define-once Graph, with the version state of the dirty
/// check (seed document, section 3.1.1).
struct GraphNode {
  std::string name;
  NodeKind kind = NodeKind::op;
  std::vector<NodeId> parents;
  /// Empty for inputs and parameters.
  OpFn op;

  /// The cached value (undefined until set or computed).
  Tensor value;
  /// Bumped only when the value is set (inputs, parameters) or recomputed
  /// (ops); 0 means never set or computed.
  std::uint64_t value_version = 0;
  /// The parents' value_version at the last recompute, one per parent;
  /// empty when never computed (or after set_parents).
  std::vector<std::uint64_t> parent_versions;

  /// Backward stops here: the value is published detached.
  bool detached = false;
  /// The value was computed in grad mode and its history has not been
  /// released by a backward without retain_graph.
  bool has_backward_state = false;

  /// Gradient accumulated by Graph::backward (`jacobi += contribution`)
  /// until Graph::zero_grad.
  Tensor grad;
  /// How many times this node was recomputed (for tests and benchmarks).
  std::uint64_t recompute_count = 0;
};

} // namespace actorgrad::define_once
