#include "actorgrad/libengine/torch/torch_graph.h"

#include <ATen/ATen.h>
#include <ATen/TensorSubclassLikeUtils.h>
#include <torch/csrc/autograd/anomaly_mode.h>
#include <torch/csrc/autograd/functions/basic_ops.h>

#include <stdexcept>
#include <typeinfo>

#include "actorgrad/libengine/engine/basic_graph_task_impl.h"
#include "actorgrad/libengine/torch/validate_outputs.h"

namespace actorgrad {

template class BasicGraphTask<TorchGraph>;

namespace {

/// Whether the node running on this thread keeps its saved variables.
/// Written and read by the thread running the node only.
thread_local bool keep_graph_here = true;

/// libtorch's can_accumulate_inplace: a plain dense tensor nobody else holds.
bool can_accumulate_inplace(const at::Tensor& v) {
  return !(at::isTensorSubclassLike(v) || v._is_zerotensor() || v.is_nested()) &&
         v.is_non_overlapping_and_dense() && v.use_count() == 1 && v.has_storage() &&
         v.storage().use_count() == 1;
}

/// Throws an E with `text` if `e` is exactly an E, for the first such E.
template <class... E>
void throw_same_type(const std::exception& e, const std::string& text) {
  ((typeid(e) == typeid(E) ? throw E(text) : void()), ...);
}

} // namespace

TorchGraph::run_scope::KeepGraph::KeepGraph(bool keep) : prev_(keep_graph_here) {
  keep_graph_here = keep;
}

TorchGraph::run_scope::KeepGraph::~KeepGraph() { keep_graph_here = prev_; }

NodeInfo TorchGraph::describe(const node& n) {
  return {&n, n.name(), n.sequence_nr(), device(n), 0};
}

TorchGraph::value_list TorchGraph::call_function(node& fn, value_list&& inputs) {
  for (const auto& hook : fn.pre_hooks())
    inputs = (*hook)(inputs);
  if (!keep_graph_here)
    fn.will_release_variables();
  value_list outputs;
  const bool has_post_hooks = !fn.post_hooks().empty();
  // Note [AccumulateGrad steals its input]
  // libtorch's AccumulateGrad reuses the incoming gradient instead of
  // cloning it when no one else holds it, counting one extra reference when
  // the node has post-hooks (num_expected_refs in accumulate_grad.h): the
  // engine's copy of the inputs, which it keeps only then. So do we.
  if (has_post_hooks) {
    value_list copy = inputs;
    outputs = fn(std::move(copy));
  } else {
    outputs = fn(std::move(inputs));
  }
  torch_bridge::validate_outputs(fn.next_edges(), outputs, &fn);
  if (has_post_hooks)
    for (const auto& hook : fn.post_hooks())
      outputs = (*hook)(outputs, inputs);
  return outputs;
}

bool TorchGraph::has_nan(const at::Tensor& t) {
  c10::AutoGradMode no_grad(false);
  return t.defined() && at::isnan(t).any().item<bool>();
}

std::string TorchGraph::nan_message(const node& fn, std::size_t output) {
  return "Function '" + fn.name() + "' returned nan values in its " + std::to_string(output) +
         "th output.";
}

// Note [Errors keep their type]
// Programs catch libtorch's errors by type (c10::Error and its subtypes,
// std::runtime_error from anomaly mode), so a node's error leaves the call
// with its own type: a c10::Error gets the node as context (its what() gains
// a line), an exception of a standard <stdexcept> type is thrown again as
// that type with the node in front of its text. Any other type is rethrown
// unchanged (its text cannot be amended without changing its type).
void TorchGraph::rethrow_in_node(const node& fn, const std::exception& e) {
  // libtorch's engine, in anomaly mode, warns with the failing node's
  // forward traceback (GraphTask::set_exception_without_signal).
  if (::torch::autograd::AnomalyMode::is_enabled())
    const_cast<node&>(fn).metadata()->print_stack(fn.name());
  const std::string where =
    "in node " + fn.name() + " (sequence_nr " + std::to_string(fn.sequence_nr()) + ")";
  try {
    throw;
  } catch (c10::Error& err) {
    err.add_context(where);
    throw;
  } catch (...) {
  }
  throw_same_type<std::runtime_error, std::logic_error, std::invalid_argument, std::out_of_range,
                  std::domain_error, std::length_error, std::range_error, std::overflow_error,
                  std::underflow_error>(e, where + ": " + e.what());
  throw;
}

void TorchGraph::accumulate(input_buffer& buffer, const node& consumer, std::uint32_t pos,
                            at::Tensor&& grad, const source&, bool create_graph) {
  // libtorch's InputBuffer::add and accumulate, for the CPU.
  if (buffer.empty())
    buffer.resize(consumer.num_inputs());
  if (!grad.defined())
    return;
  at::Tensor& old = buffer[pos];
  if (!old.defined()) {
    old = std::move(grad);
    return;
  }
  c10::AutoGradMode mode(create_graph);
  if (create_graph)
    old = old + grad;
  else if (old.is_sparse() || old.is_sparse_csr())
    old = can_accumulate_inplace(grad) ? grad.add_(old) : grad + old;
  else if (can_accumulate_inplace(old) && !grad.is_sparse() && !grad.is_sparse_csr())
    old = old.add_(grad);
  else
    old = old + grad;
}

std::shared_ptr<TorchGraph::node> TorchGraph::make_graph_root(const std::vector<edge>& roots,
                                                              const value_list& grads) {
  return std::make_shared<::torch::autograd::GraphRoot>(roots, grads);
}

TorchGraph::input_buffer TorchGraph::make_root_buffer(const node& root, std::uint32_t input_nr,
                                                      at::Tensor&& grad) {
  input_buffer buffer(root.num_inputs());
  buffer[input_nr] = std::move(grad);
  return buffer;
}

} // namespace actorgrad
