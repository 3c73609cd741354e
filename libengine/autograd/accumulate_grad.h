#pragma once
/// @file accumulate_grad.h
/// The terminal node of a leaf.

#include "actorgrad/libengine/autograd/node.h"

namespace actorgrad {

/// Accumulates the gradient of a leaf into its `.grad`: takes the incoming
/// gradient when `.grad` is unset (without a copy when nothing else holds
/// it), adds in place otherwise, or out of place under create_graph so the
/// result keeps its graph.
class AccumulateGrad final : public Node {
public:
  explicit AccumulateGrad(Tensor variable);

  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  bool is_accumulate_grad() const override { return true; }
  /// The leaf's own hooks (registered with Tensor::register_hook).
  const HookList<TensorHook>* leaf_hooks() const override;

  const Tensor& variable() const { return variable_; }

private:
  Tensor variable_;
};

} // namespace actorgrad
