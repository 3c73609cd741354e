#include "actorgrad/libengine/graph/graph.h"

#include <utility>

#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/graph/dirty_walk.h"
#include "actorgrad/libengine/graph/forward_executor.h"
#include "actorgrad/libengine/graph/graph_error.h"
#include "actorgrad/libengine/ops.h"

namespace actorgrad::define_once {

Graph::Graph() : forward_executor_(std::make_shared<SequentialForward>()) {}
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

// -- building -----------------------------------------------------------------

NodeId Graph::push(GraphNode n) {
  nodes_.push_back(std::move(n));
  return NodeId{static_cast<std::uint32_t>(nodes_.size() - 1)};
}

void Graph::check_parents(const std::vector<NodeId>& parents) const {
  for (NodeId p : parents)
    node(p);
}

NodeId Graph::add_input(std::string name, const Tensor& value) {
  GraphNode n;
  n.name = std::move(name);
  n.kind = NodeKind::input;
  const NodeId id = push(std::move(n));
  if (value.defined())
    set_value(id, value);
  return id;
}

NodeId Graph::add_parameter(std::string name, const Tensor& value) {
  GraphNode n;
  n.name = std::move(name);
  n.kind = NodeKind::parameter;
  const NodeId id = push(std::move(n));
  set_value(id, value);
  return id;
}

NodeId Graph::add_op(std::string name, std::vector<NodeId> parents, OpFn op) {
  check_parents(parents);
  if (!op)
    throw GraphError("add_op: op node '" + name + "' has no op");
  GraphNode n;
  n.name = std::move(name);
  n.kind = NodeKind::op;
  n.parents = std::move(parents);
  n.op = std::move(op);
  return push(std::move(n));
}

GraphNode& Graph::op_node(NodeId id, const char* api) {
  GraphNode& n = mutable_node(id);
  if (n.kind != NodeKind::op)
    throw GraphError(std::string(api) + ": " + label(id) + " is not an op node");
  return n;
}

void Graph::set_parents(NodeId op, std::vector<NodeId> parents) {
  check_parents(parents);
  GraphNode& n = op_node(op, "set_parents");
  n.parents = std::move(parents);
  n.parent_versions.clear();
}

void Graph::set_detached(NodeId op, bool detached) {
  GraphNode& n = op_node(op, "set_detached");
  if (n.detached != detached)
    n.parent_versions.clear();
  n.detached = detached;
}

void Graph::set_output(const std::string& name, NodeId id) {
  node(id);
  outputs_[name] = id;
}

NodeId Graph::output(const std::string& name) const {
  auto it = outputs_.find(name);
  if (it == outputs_.end())
    throw GraphError("define-once graph has no output named '" + name + "'");
  return it->second;
}

// -- values -------------------------------------------------------------------

void Graph::set_value(NodeId source, const Tensor& value) {
  GraphNode& n = mutable_node(source);
  if (n.kind == NodeKind::op)
    throw GraphError("set_value: " + label(source) + " is an op node (its value is computed)");
  if (!value.defined())
    throw GraphError("set_value: undefined tensor for " + label(source));
  if (n.kind == NodeKind::parameter) {
    n.value = value.detach();
    n.value.set_requires_grad(true);
  } else {
    n.value = value;
  }
  ++n.value_version;
}

Tensor Graph::forward(NodeId id) { return forward(std::vector<NodeId>{id}).front(); }

Tensor Graph::forward(const std::string& output_name) { return forward(output(output_name)); }

variable_list Graph::forward(const std::vector<NodeId>& ids) {
  const RecomputePlan plan = plan_recompute(*this, ids, GradMode::is_enabled());
  if (plan.size() > 0)
    forward_executor_->run(*this, plan);
  variable_list values;
  values.reserve(ids.size());
  for (NodeId id : ids)
    values.push_back(node(id).value);
  return values;
}

void Graph::recompute(NodeId id, bool record_history) {
  GraphNode& n = mutable_node(id);
  variable_list args;
  std::vector<std::uint64_t> versions;
  args.reserve(n.parents.size());
  versions.reserve(n.parents.size());
  for (NodeId p : n.parents) {
    args.push_back(nodes_[p.index].value);
    versions.push_back(nodes_[p.index].value_version);
  }
  Tensor out;
  try {
    AutoGradMode mode(record_history);
    out = n.op(args);
  } catch (const std::exception& e) {
    throw GraphError("op node " + label(id) + " failed: " + e.what());
  }
  if (!out.defined())
    throw GraphError("op node " + label(id) + " returned an undefined tensor");
  n.value = n.detached ? out.detach() : std::move(out);
  n.parent_versions = std::move(versions);
  n.has_backward_state = record_history;
  ++n.value_version;
  ++n.recompute_count;
}

Device Graph::compute_device(NodeId id) const {
  for (NodeId p : node(id).parents) {
    const Tensor& v = nodes_[p.index].value;
    if (v.defined() && !v.device().is_cpu())
      return v.device();
  }
  return Device::cpu();
}

void Graph::set_forward_executor(std::shared_ptr<ForwardExecutor> executor) {
  forward_executor_ = executor ? std::move(executor) : std::make_shared<SequentialForward>();
}

// -- gradients ----------------------------------------------------------------

std::vector<bool> Graph::nodes_feeding(NodeId result) const {
  std::vector<bool> feeds(nodes_.size(), false);
  walk_ancestors(
    *this, {result}, [&feeds](NodeId id) { feeds[id.index] = true; },
    [this](NodeId id) { return !nodes_[id.index].detached; });
  return feeds;
}

variable_list Graph::run_backward(NodeId result, const std::vector<NodeId>& targets,
                                  const BackwardOptions& options, bool allow_unused) {
  if (targets.empty())
    throw GraphError("backward: no targets given for result " + label(result));
  std::vector<NodeId> request{result};
  request.insert(request.end(), targets.begin(), targets.end());
  variable_list values;
  {
    // Note: a stale or never-computed node is recomputed here, so backward
    // always differentiates the graph's current inputs (docs/define_once.md).
    AutoGradMode grad_on(true);
    values = forward(request);
  }
  if (!values.front().requires_grad())
    throw GraphError("backward: result " + label(result) +
                     " does not require grad (no parameter or grad-requiring input feeds it)");
  // Targets that do not feed the result get no gradient; the engine is not
  // asked about them.
  const std::vector<bool> feeds = nodes_feeding(result);
  variable_list inputs;
  std::vector<std::size_t> slot;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (!feeds[targets[i].index]) {
      if (!allow_unused)
        throw GraphError("grad: target " + label(targets[i]) + " is not used to compute " +
                         label(result) + " (set allow_unused if this is intended)");
      continue;
    }
    if (!values[i + 1].requires_grad())
      throw GraphError("backward: target " + label(targets[i]) +
                       " does not require grad (an input without requires_grad, a detached "
                       "node, or a node no parameter feeds)");
    inputs.push_back(values[i + 1]);
    slot.push_back(i);
  }
  variable_list grads(targets.size());
  if (inputs.empty())
    return grads;
  actorgrad::GradOptions grad_options{.retain_graph = options.retain_graph,
                                      .create_graph = options.create_graph,
                                      .allow_unused = true};
  if (options.grad_output.defined())
    grad_options.grad_outputs.push_back(options.grad_output);
  Executor& executor = options.executor ? *options.executor : default_executor();
  const variable_list found = actorgrad::grad({values.front()}, inputs, grad_options, executor);
  for (std::size_t k = 0; k < slot.size(); ++k)
    grads[slot[k]] = found[k];
  if (!options.retain_graph.value_or(options.create_graph)) {
    // The engine released the saved tensors of the nodes it ran. Conservative:
    // every op node feeding `result` is recomputed by the next grad-mode
    // request, whether or not this backward needed it.
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (feeds[i] && nodes_[i].kind == NodeKind::op)
        nodes_[i].has_backward_state = false;
  }
  return grads;
}

void Graph::backward(NodeId result, const std::vector<NodeId>& targets,
                     const BackwardOptions& options) {
  const variable_list grads = run_backward(result, targets, options, /*allow_unused=*/true);
  AutoGradMode mode(options.create_graph);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (!grads[i].defined())
      continue;
    Tensor& jacobi = mutable_node(targets[i]).grad;
    jacobi = jacobi.defined() ? add(jacobi, grads[i]) : grads[i];
  }
}

variable_list Graph::grad(NodeId result, const std::vector<NodeId>& targets,
                          const GradOptions& options) {
  return run_backward(result, targets, options, options.allow_unused);
}

void Graph::zero_grad() {
  for (GraphNode& n : nodes_)
    n.grad = Tensor();
}

// -- inspection ---------------------------------------------------------------

const GraphNode& Graph::node(NodeId id) const {
  if (id.index >= nodes_.size())
    throw GraphError("define-once graph: unknown node id " + std::to_string(id.index) +
                     " (graph has " + std::to_string(nodes_.size()) + " nodes)");
  return nodes_[id.index];
}

GraphNode& Graph::mutable_node(NodeId id) { return const_cast<GraphNode&>(node(id)); }

std::string Graph::label(NodeId id) const { return node(id).name + "#" + std::to_string(id.index); }

} // namespace actorgrad::define_once
