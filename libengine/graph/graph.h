#pragma once
/// @file graph.h
/// A define-once graph with incremental re-forward (version-based dirty
/// checking, docs/define_once.md).

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actorgrad/libengine/graph/graph_node.h"
#include "actorgrad/libengine/graph/node_id.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad {
class Executor;
}

namespace actorgrad::define_once {

class ForwardExecutor;

/// How Graph::backward and Graph::grad run the engine.
struct BackwardOptions {
  /// Gradient of the result; may stay undefined for a one-element result (ones).
  Tensor grad_output;
  /// Keep the recorded history for another backward (defaults to create_graph).
  /// Without it the history is released and the next forward or backward
  /// recomputes the nodes that fed the result.
  std::optional<bool> retain_graph;
  /// Record the backward itself (higher-order gradients).
  bool create_graph = false;
  /// The engine to run on; null: default_executor().
  Executor* executor = nullptr;
};

/// Graph::grad's options: BackwardOptions plus torch's allow_unused.
struct GradOptions : BackwardOptions {
  /// A target the result does not depend on gets an undefined gradient
  /// instead of an error.
  bool allow_unused = false;
};

/// A graph defined once and evaluated many times. Inputs and parameters are
/// set from outside; op nodes compute from their parents' values with the
/// differentiable ops. A request (`forward`) recomputes only the nodes whose
/// parents' versions changed since they were last computed; independent
/// dirty nodes may run concurrently (see ForwardExecutor).
///
/// Not thread-safe: one call at a time per Graph (the forward executor is
/// what runs nodes concurrently, inside one call).
class Graph {
public:
  Graph();
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;

  // -- building ---------------------------------------------------------------

  /// An input node; its value may be given now or later with set_value.
  NodeId add_input(std::string name, const Tensor& value = {});
  /// A parameter node: a leaf that requires grad, holding (a detached alias of) `value`.
  NodeId add_parameter(std::string name, const Tensor& value);
  /// An op node computing `op` from the values of `parents` (which must exist).
  NodeId add_op(std::string name, std::vector<NodeId> parents, OpFn op);
  /// Rewires an op node (any existing nodes, so a cycle can be formed; it is
  /// detected at the next request). The node becomes dirty.
  void set_parents(NodeId op_node, std::vector<NodeId> parents);
  /// Makes backward stop at an op node (its value is published detached).
  /// Changing it makes the node dirty.
  void set_detached(NodeId op_node, bool detached = true);
  /// Names `id` as an output.
  void set_output(const std::string& name, NodeId id);
  /// The node named `name` by set_output (throws if none).
  NodeId output(const std::string& name) const;
  const std::map<std::string, NodeId>& outputs() const { return outputs_; }

  // -- values -----------------------------------------------------------------

  /// Sets an input or parameter and bumps its version. A parameter stores
  /// a detached alias of `value` that requires grad. In-place changes to a
  /// value are not seen by the dirty check: set a new value instead.
  void set_value(NodeId source, const Tensor& value);
  /// The cached value, without bringing it up to date (may be stale or undefined).
  const Tensor& value(NodeId id) const { return node(id).value; }

  /// Brings `id` up to date and returns its value. In grad mode the values
  /// carry autograd history; under no_grad they carry none.
  Tensor forward(NodeId id);
  /// Brings several nodes up to date in one request.
  variable_list forward(const std::vector<NodeId>& ids);
  /// forward(output(name)).
  Tensor forward(const std::string& output_name);

  // -- gradients --------------------------------------------------------------

  /// Brings `result` and `targets` up to date (in grad mode), runs the
  /// engine's backward from `result` and adds each target's gradient to its
  /// node gradient (`jacobi += contribution`; see grad_of, zero_grad).
  void backward(NodeId result, const std::vector<NodeId>& targets,
                const BackwardOptions& options = {});
  /// Like backward but returns the gradients (one per target) and
  /// accumulates nothing (`torch.autograd.grad`).
  variable_list grad(NodeId result, const std::vector<NodeId>& targets,
                     const GradOptions& options = {});
  /// The gradient accumulated by backward into `id` (undefined if none).
  const Tensor& grad_of(NodeId id) const { return node(id).grad; }
  /// Clears every accumulated gradient.
  void zero_grad();

  // -- execution --------------------------------------------------------------

  /// Who runs the dirty nodes of a request; null: the calling thread, in
  /// topological order.
  void set_forward_executor(std::shared_ptr<ForwardExecutor> executor);

  /// Recomputes one op node from its parents' current values (for forward
  /// executors). Concurrent calls on different nodes are safe when every
  /// parent of each has finished its own recompute (happens-before).
  void recompute(NodeId id, bool record_history);
  /// Where an op node runs: the first non-CPU device among its parents'
  /// values, else the CPU.
  Device compute_device(NodeId id) const;

  // -- inspection -------------------------------------------------------------

  std::size_t size() const { return nodes_.size(); }
  /// The node's state (throws on an unknown id).
  const GraphNode& node(NodeId id) const;
  /// `name#index`, as used in error messages.
  std::string label(NodeId id) const;

private:
  GraphNode& mutable_node(NodeId id);
  GraphNode& op_node(NodeId id, const char* api);
  NodeId push(GraphNode n);
  void check_parents(const std::vector<NodeId>& parents) const;
  variable_list run_backward(NodeId result, const std::vector<NodeId>& targets,
                             const BackwardOptions& options, bool allow_unused);
  /// Marks of the nodes `result` depends on through non-detached nodes
  /// (itself included).
  std::vector<bool> nodes_feeding(NodeId result) const;

  std::vector<GraphNode> nodes_;
  std::map<std::string, NodeId> outputs_;
  std::shared_ptr<ForwardExecutor> forward_executor_;
};

} // namespace actorgrad::define_once
