#include "actorgrad/libengine/engine/detail/call_hooks.h"

#include <string>

#include "actorgrad/libengine/engine/errors.h"

namespace actorgrad::detail {

namespace {

/// Names a hook in errors: `tensor pre-hook 1 'scale' of MulBackward`.
/// Built only when a check fails.
struct HookLabel {
  const char* kind;
  std::uint32_t index;
  const std::string& name;
  const Node& fn;

  std::string str() const {
    std::string s = std::string(kind) + " " + std::to_string(index);
    if (!name.empty())
      s += " '" + name + "'";
    return s + " of " + fn.name();
  }
};

/// ` at input 2` / ` at output 0`.
std::string at_slot(const char* slot_kind, std::size_t slot) {
  return std::string(" at ") + slot_kind + " " + std::to_string(slot);
}

/// Checks `result`, which a hook returned to replace the defined gradient
/// `original` at slot `slot`, against `meta`, modelled on libtorch's
/// check_variable_result ("hook '0' has changed the size of value").
void check_defined_result(const HookLabel& hook, const char* slot_kind, std::size_t slot,
                          const Tensor& result, const InputMetadata& meta) {
  if (!meta.defined)
    return;
  const char* changed = nullptr;
  if (result.device() != meta.device)
    changed = "device";
  else if (result.dtype() != meta.dtype)
    changed = "type";
  else if (!meta.has_shape(result.shape()))
    changed = "size";
  if (changed)
    throw EngineError(hook.str() + " has changed the " + changed + " of value" +
                      at_slot(slot_kind, slot) + ": expected " + meta.describe() + ", got " +
                      result.describe());
}

/// Checks one element of a pre- or post-hook's list: defined exactly where
/// `original` is, and then like check_defined_result.
void check_list_result(const HookLabel& hook, const char* slot_kind, std::size_t slot,
                       const Tensor& original, const Tensor& result, const InputMetadata& meta) {
  if (original.defined() && !result.defined())
    throw EngineError(hook.str() + " returned an undefined gradient" + at_slot(slot_kind, slot) +
                      ", where one is required (expected " + meta.describe() + ")");
  if (!original.defined() && result.defined())
    throw EngineError(hook.str() + " can't replace an undefined gradient with a defined value" +
                      at_slot(slot_kind, slot) + " (got " + result.describe() + ")");
  if (result.defined())
    check_defined_result(hook, slot_kind, slot, result, meta);
}

/// Throws unless a list hook returned one gradient per slot.
void check_count(const HookLabel& hook, const char* slot_kind, std::size_t got,
                 std::size_t expected) {
  if (got != expected)
    throw EngineError(hook.str() + " returned " + std::to_string(got) + " gradients for " +
                      std::to_string(expected) + " " + slot_kind + "s (return one per " +
                      slot_kind + ", or none to keep them)");
}

void run_tensor_hooks(const char* kind, const Node& fn, const HookList<TensorHook>::Snapshot& hooks,
                      variable_list& inputs) {
  if (!hooks)
    return;
  for (const auto& h : *hooks) {
    Tensor& g = inputs.at(h.input_nr);
    if (!g.defined())
      continue;
    Tensor r = h.fn(g);
    if (!r.defined())
      continue;
    check_defined_result({kind, h.index, h.name, fn}, "input", h.input_nr, r,
                         fn.input_metadata(h.input_nr));
    g = std::move(r);
  }
}

/// Whether `fn` holds a tensor pre-hook, a leaf hook or a retain_grad hook
/// now: one load a list, no snapshot.
bool holds_tensor_hooks(const Node& fn) {
  const HookList<TensorHook>* leaf = fn.leaf_hooks();
  return !fn.tensor_pre_hooks().empty() || (leaf && !leaf->empty()) ||
         !fn.retains_grad_hooks().empty();
}

} // namespace

TensorHookSnapshot::TensorHookSnapshot(const Node& fn)
  : tensor_pre(fn.tensor_pre_hooks().snapshot()),
    leaf(fn.leaf_hooks() ? fn.leaf_hooks()->snapshot() : HookList<TensorHook>::Snapshot()),
    retains_grad(fn.retains_grad_hooks().snapshot()) {}

void HookSnapshot::take(const Node& fn) {
  // A hook added or removed meanwhile is seen by the snapshots, or runs
  // from the next call on, as in any race with a running backward.
  if (!holds_tensor_hooks(fn) && fn.pre_hooks().empty() && fn.post_hooks().empty())
    return;
  tensor = TensorHookSnapshot(fn);
  pre = fn.pre_hooks().snapshot();
  post = fn.post_hooks().snapshot();
  any = tensor || pre || post;
}

void call_tensor_pre_hooks(const Node& fn, const TensorHookSnapshot& hooks, variable_list& inputs) {
  run_tensor_hooks("tensor pre-hook", fn, hooks.tensor_pre, inputs);
  run_tensor_hooks("leaf tensor hook", fn, hooks.leaf, inputs);
  run_tensor_hooks("retain_grad hook", fn, hooks.retains_grad, inputs);
}

void call_tensor_pre_hooks(Node& fn, variable_list& inputs) {
  // Most AccumulateGrads that only capture (grad()) have no hook at all.
  if (fn.may_have_hooks() && holds_tensor_hooks(fn))
    call_tensor_pre_hooks(fn, TensorHookSnapshot(fn), inputs);
}

void call_pre_hooks(const Node& fn, const HookSnapshot& hooks, variable_list& inputs) {
  if (!hooks.pre)
    return;
  for (const auto& h : *hooks.pre) {
    variable_list r = h.fn(inputs);
    if (r.empty())
      continue;
    const HookLabel label{"pre-hook", h.index, h.name, fn};
    check_count(label, "input", r.size(), inputs.size());
    for (std::size_t i = 0; i < r.size(); ++i)
      check_list_result(label, "input", i, inputs[i], r[i], fn.input_metadata(i));
    inputs = std::move(r);
  }
}

void call_post_hooks(const Node& fn, const HookSnapshot& hooks, variable_list& outputs,
                     const variable_list& inputs) {
  if (!hooks.post)
    return;
  for (const auto& h : *hooks.post) {
    variable_list r = h.fn(outputs, inputs);
    if (r.empty())
      continue;
    const HookLabel label{"post-hook", h.index, h.name, fn};
    check_count(label, "output", r.size(), outputs.size());
    for (std::size_t i = 0; i < r.size(); ++i) {
      const Edge& edge = fn.next_edge(i);
      if (edge.is_valid()) // validate_outputs checked input_nr
        check_list_result(label, "output", i, outputs[i], r[i],
                          edge.function->input_metadata(edge.input_nr));
    }
    outputs = std::move(r);
  }
}

} // namespace actorgrad::detail
