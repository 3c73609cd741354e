#pragma once
/// @file function_node.h
/// Private to libengine/ops: the backward node every differentiable op records.

#include <functional>
#include <string>
#include <vector>

#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/autograd/saved_variable.h"

namespace actorgrad::detail {

/// Gradients of an op's inputs (one per input; undefined where `needs[i]` is
/// false) from the gradient of its output. `saved` holds the unpacked saved
/// tensors in the order they were saved (undefined where none was saved).
/// Written with the differentiable ops, so create_graph records it.
using BackwardFn = std::function<variable_list(const Tensor& grad, const variable_list& saved,
                                               const std::vector<bool>& needs)>;

/// A single-output backward node: a name, saved tensors and a BackwardFn.
class FunctionBackward final : public Node {
public:
  FunctionBackward(std::string name, edge_list next_edges, BackwardFn backward);

  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return name_; }
  void release_variables() override;

  /// Keeps `t` for backward (`is_output` when `t` is this node's own output).
  void save(const Tensor& t, bool is_output);

private:
  std::string name_;
  BackwardFn backward_;
  SavedVariables saved_;
};

/// Makes `result` the output of a `name` node over `inputs` when any of them
/// requires grad (and grad mode is on), saving `saved` and, if `save_result`,
/// the result itself (after them). Returns `result`.
Tensor record(const char* name, Tensor result, const variable_list& inputs, BackwardFn backward,
              const variable_list& saved = {}, bool save_result = false);

/// `t` when `keep`, else an undefined tensor: saves an input only when the
/// gradient that needs it will be computed.
inline Tensor save_if(bool keep, const Tensor& t) { return keep ? t : Tensor(); }

} // namespace actorgrad::detail
