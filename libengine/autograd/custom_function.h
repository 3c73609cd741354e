#pragma once
/// @file custom_function.h
/// User-defined differentiable functions (torch.autograd.Function).

#include <any>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "actorgrad/libengine/autograd/saved_variable.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad {

class Node;

/// The `ctx` of a custom function: what forward leaves for backward.
class FunctionContext {
public:
  /// Keeps tensors for backward (version-checked when unpacked).
  void save_for_backward(variable_list tensors) { to_save_ = std::move(tensors); }
  /// The tensors given to save_for_backward; throws if one was modified in
  /// place since, or if the graph was freed by an earlier backward.
  variable_list saved_tensors() const;
  /// Whether input `i` of forward requires grad (backward may skip it).
  bool needs_input_grad(std::size_t i) const { return needs_input_grad_.at(i); }
  /// Anything else forward wants to keep (shapes, flags, callables).
  std::unordered_map<std::string, std::any> saved_data;

private:
  friend class CustomFunctionNode;
  friend variable_list
  apply_custom_function(const std::string&, const variable_list&,
                        const std::function<variable_list(FunctionContext&, const variable_list&)>&,
                        std::function<variable_list(FunctionContext&, const variable_list&)>);

  variable_list to_save_;
  SavedVariables saved_;
  std::vector<bool> needs_input_grad_;
  const Node* node_ = nullptr;
};

/// Forward of a custom function: runs without recording a graph.
using CustomForward = std::function<variable_list(FunctionContext&, const variable_list& inputs)>;
/// Backward of a custom function: one gradient per forward input (undefined
/// where none), from one gradient per forward output (zeros where none
/// arrived). May call backward/grad itself: that is a reentrant backward.
using CustomBackward =
  std::function<variable_list(FunctionContext&, const variable_list& grad_outputs)>;

/// Runs `forward` on `inputs` and, when an input requires grad, records a
/// node named `name` whose backward is `backward`.
variable_list apply_custom_function(const std::string& name, const variable_list& inputs,
                                    const CustomForward& forward, CustomBackward backward);

/// CRTP helper in the style of torch.autograd.Function:
///
/// ```
/// struct Square : Function<Square> {
///   static variable_list forward(FunctionContext& ctx, const variable_list& x) {
///     ctx.save_for_backward({x[0]});
///     return {mul(x[0], x[0])};
///   }
///   static variable_list backward(FunctionContext& ctx, const variable_list& g) {
///     return {mul(g[0], mul(ctx.saved_tensors()[0], 2.0))};
///   }
/// };
/// auto y = Square::apply({x})[0];
/// ```
template <class Derived>
struct Function {
  static variable_list apply(const variable_list& inputs,
                             const std::string& name = "CustomFunction") {
    return apply_custom_function(name, inputs, &Derived::forward, &Derived::backward);
  }
};

/// Gradient checkpointing (torch.utils.checkpoint, reentrant variant): runs
/// `fn` without keeping its intermediate tensors; its backward recomputes
/// `fn` and runs a nested backward through the recomputed graph.
variable_list checkpoint(std::function<variable_list(const variable_list&)> fn,
                         const variable_list& inputs);

} // namespace actorgrad
