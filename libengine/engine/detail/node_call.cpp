#include "actorgrad/libengine/engine/detail/node_call.h"

#include "actorgrad/device/guards.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/engine/detail/call_hooks.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad::detail {

namespace {

/// call_node for a node that may have hooks.
variable_list call_node_with_hooks(Node& fn, variable_list&& inputs) {
  const HookSnapshot hooks(fn);
  if (hooks) {
    call_tensor_pre_hooks(fn, hooks.tensor, inputs);
    call_pre_hooks(fn, hooks, inputs);
  }
  variable_list outputs;
  if (!hooks.post) {
    outputs = fn.apply(std::move(inputs));
  } else {
    variable_list copy = inputs;
    outputs = fn.apply(std::move(copy));
  }
  validate_outputs(fn, outputs);
  if (hooks.post)
    call_post_hooks(fn, hooks, outputs, inputs);
  return outputs;
}

std::string at_index(const Node& fn, std::size_t i) {
  return "Function " + fn.name() + " returned an invalid gradient at index " + std::to_string(i);
}

/// The common case, checked without a call: `g` already has the device,
/// dtype and shape its consumer's input expects.
bool matches(const TensorImpl& g, const InputMetadata& meta) {
  return g.storage->device == meta.device && g.dtype == meta.dtype && meta.has_shape(g.shape);
}

/// Whether gradient `g`, bound for `edge`, needs nothing from
/// validate_outputs: it goes nowhere, or matches its consumer's input.
bool output_matches(const Edge& edge, const Tensor& g) {
  if (!edge.is_valid() || !g.defined())
    return true;
  if (edge.input_nr >= edge.function->num_inputs())
    return false;
  const InputMetadata& meta = edge.function->input_metadata(edge.input_nr);
  return !meta.defined || matches(*g.impl(), meta);
}

/// Whether validate_outputs has nothing to do: the check of every node's
/// outputs, kept apart from the error texts and conversions so that it
/// needs no stack frame of its own.
bool outputs_match(const Node& fn, const variable_list& grads) {
  const std::span<const Edge> edges = fn.next_edges();
  if (grads.size() != edges.size())
    return false;
  for (std::size_t i = 0; i < grads.size(); ++i)
    if (!output_matches(edges[i], grads[i]))
      return false;
  return true;
}

/// validate_outputs where something does not match: names the error, or
/// reduces and casts.
[[gnu::noinline, gnu::cold]] void validate_mismatched_outputs(const Node& fn,
                                                              variable_list& grads) {
  const std::span<const Edge> edges = fn.next_edges();
  if (grads.size() != edges.size())
    throw EngineError("Function " + fn.name() +
                      " returned an incorrect number of gradients (expected " +
                      std::to_string(edges.size()) + ", got " + std::to_string(grads.size()) + ")");
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Edge& edge = edges[i];
    Tensor& g = grads[i];
    if (output_matches(edge, g))
      continue;
    if (edge.input_nr >= edge.function->num_inputs())
      throw EngineError(at_index(fn, i) + ": its edge points at input " +
                        std::to_string(edge.input_nr) + " of " + edge.function->name() +
                        ", which has " + std::to_string(edge.function->num_inputs()) + " inputs");
    const InputMetadata& meta = edge.function->input_metadata(edge.input_nr);
    if (g.device() != meta.device)
      throw EngineError(at_index(fn, i) + " - expected device " + meta.device.str() + " but got " +
                        g.device().str());
    if (!meta.has_shape(g.shape())) {
      const Shape expected = meta.sizes();
      if (!is_expandable_to(expected, g.shape()))
        throw EngineError(at_index(fn, i) + " - got " + shape_str(g.shape()) +
                          " but expected shape compatible with " + shape_str(expected));
      g = sum_to(g, expected);
    }
    if (g.dtype() != meta.dtype)
      g = to_dtype(g, meta.dtype);
  }
}

} // namespace

// Hooks, apply and validation, in PyTorch's order: tensor pre-hooks ->
// pre-hooks -> apply -> validate -> post-hooks. A node without hooks (one
// load) takes no snapshot.
variable_list call_node(Node& fn, variable_list&& inputs) {
  if (fn.may_have_hooks())
    return call_node_with_hooks(fn, std::move(inputs));
  variable_list outputs = fn.apply(std::move(inputs));
  validate_outputs(fn, outputs);
  return outputs;
}

void validate_outputs(const Node& fn, variable_list& grads) {
  if (!outputs_match(fn, grads)) [[unlikely]]
    validate_mismatched_outputs(fn, grads);
}

} // namespace actorgrad::detail
