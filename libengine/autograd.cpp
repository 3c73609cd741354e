#include "actorgrad/libengine/autograd.h"

#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/engine/detail/call_args.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/ops.h"

namespace actorgrad {

namespace {

// Note [The API's edge lists]
// backward() and grad() hand the executor the roots and the inputs as edge
// lists (std::vector<Edge>, as PyTorch's Engine::execute takes them), which
// live as long as the call. Allocated and freed by every call, they cost
// far more than a cached malloc and free: a one-edge list is a 32-byte
// block, the size of every one-element vector a call makes, and a call
// holds more of those than malloc's per-thread cache keeps (7 a size), so
// the lists' blocks came from malloc's arena and went back to it. Keeping
// them saved about 340 instructions a list in a grad() nested in a node,
// at depth 1 and at depth 100 alike (callgrind, reentrant 1 and 100).
// So the thread that made a call keeps the two lists' storage, emptied
// (no node held), for its next calls (detail::SpareEdgeLists, Note [Storage
// a thread keeps]): two lists for every call one thread nests
// (max_recursion_depth, 60, and some to spare), of at most 8 edges, so at
// most 24 KiB a thread. A list that goes to another thread (backward_async)
// is freed there.
using detail::SpareEdgeLists;

std::string nth(const char* what, std::size_t i) {
  return std::string(what) + "[" + std::to_string(i) + "]";
}

edge_list root_edges(const variable_list& tensors, const char* api) {
  if (tensors.empty())
    throw EngineError(std::string(api) + "() called with an empty list of tensors");
  edge_list roots = SpareEdgeLists::take(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (!t.defined())
      throw EngineError(std::string(api) + ": " + nth("tensors", i) + " is undefined");
    if (!t.requires_grad())
      throw EngineError(std::string(api) + ": element " + std::to_string(i) + " of tensors (" +
                        t.describe() + ") does not require grad and does not have a grad_fn");
    roots.push_back(gradient_edge(t));
  }
  return roots;
}

// The root gradients: the given ones checked against the roots, or ones
// for scalar roots (PyTorch's _make_grads).
variable_list make_grads(const variable_list& tensors, const variable_list& grads) {
  if (!grads.empty() && grads.size() != tensors.size())
    throw EngineError("got " + std::to_string(grads.size()) + " grad_tensors for " +
                      std::to_string(tensors.size()) + " tensors");
  variable_list out;
  out.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (grads.empty() || !grads[i].defined()) {
      if (t.numel() != 1)
        throw EngineError("grad can be implicitly created only for scalar outputs; " +
                          nth("tensors", i) + " is " + t.describe());
      out.push_back(Tensor::full_like(t, 1.0));
      continue;
    }
    const Tensor& g = grads[i];
    if (g.shape() != t.shape())
      throw EngineError("Mismatch in shape: " + nth("grad_tensors", i) + " has a shape of " +
                        shape_str(g.shape()) + " and " + nth("tensors", i) + " has a shape of " +
                        shape_str(t.shape()));
    if (g.device() != t.device())
      throw EngineError("Mismatch in device: " + nth("grad_tensors", i) + " is on " +
                        g.device().str() + " and " + nth("tensors", i) + " is on " +
                        t.device().str());
    out.push_back(g.dtype() == t.dtype() ? g : to_dtype(g, t.dtype()));
  }
  return out;
}

void check_input(const Tensor& t, std::size_t i, const char* api) {
  if (!t.defined() || !t.requires_grad())
    throw EngineError(std::string(api) + ": " + nth("inputs", i) + " (" +
                      (t.defined() ? t.describe() : std::string("undefined")) +
                      ") does not require grad");
}

} // namespace

namespace detail {

void BackwardCall::keep_edge_lists() {
  SpareEdgeLists::keep(std::move(roots));
  SpareEdgeLists::keep(std::move(outputs));
}

BackwardCall make_backward_call(const variable_list& tensors, const variable_list& grad_tensors,
                                std::optional<bool> retain_graph, bool create_graph,
                                const variable_list& inputs) {
  BackwardCall call{root_edges(tensors, "backward"),
                    make_grads(tensors, grad_tensors),
                    {retain_graph.value_or(create_graph), create_graph, true},
                    SpareEdgeLists::take(inputs.size())};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Tensor t = inputs[i];
    check_input(t, i, "backward");
    if (!t.is_leaf())
      t.retain_grad(); // a non-leaf input accumulates into .grad, as in PyTorch
    call.outputs.push_back(gradient_edge(t));
  }
  return call;
}

BackwardCall make_grad_call(const variable_list& outputs, const variable_list& inputs,
                            const variable_list& grad_outputs, std::optional<bool> retain_graph,
                            bool create_graph) {
  edge_list roots = root_edges(outputs, "grad");
  if (inputs.empty())
    throw EngineError("grad() called with an empty list of inputs");
  BackwardCall call{std::move(roots),
                    make_grads(outputs, grad_outputs),
                    {retain_graph.value_or(create_graph), create_graph, false},
                    SpareEdgeLists::take(inputs.size())};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    check_input(inputs[i], i, "grad");
    if (auto fn = inputs[i].grad_fn())
      call.outputs.push_back({std::move(fn), inputs[i].output_nr()});
    else
      call.outputs.push_back({try_get_grad_accumulator(inputs[i]), 0});
  }
  return call;
}

variable_list check_grad_results(variable_list result, const variable_list& inputs,
                                 bool allow_unused) {
  result.resize(inputs.size());
  if (!allow_unused)
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (!result[i].defined())
        throw EngineError("grad: " + nth("inputs", i) + " (" + inputs[i].describe() +
                          ") appears to not have been used in the graph. Set allow_unused=true "
                          "if this is the desired behavior.");
  return result;
}

} // namespace detail

void backward(const variable_list& tensors, const BackwardOptions& options, Executor& executor) {
  auto call = detail::make_backward_call(tensors, options.grad_tensors, options.retain_graph,
                                         options.create_graph, options.inputs);
  executor.execute(call.roots, std::move(call.root_grads), call.options, call.outputs);
  call.keep_edge_lists();
}

variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const GradOptions& options, Executor& executor) {
  auto call = detail::make_grad_call(outputs, inputs, options.grad_outputs, options.retain_graph,
                                     options.create_graph);
  auto result =
    executor.execute(call.roots, std::move(call.root_grads), call.options, call.outputs);
  call.keep_edge_lists();
  return detail::check_grad_results(std::move(result), inputs, options.allow_unused);
}

} // namespace actorgrad
