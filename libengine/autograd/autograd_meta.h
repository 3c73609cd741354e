#pragma once
/// @file autograd_meta.h
/// The autograd state a tensor carries.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "actorgrad/libengine/autograd/hook_list.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad {

class Node;

/// A tensor's gradient hook: a defined return value (of the gradient's
/// shape, dtype and device) replaces the gradient; an undefined one keeps it.
using TensorHook = std::function<Tensor(const Tensor&)>;

/// Autograd state of one tensor (PyTorch's AutogradMeta).
struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  /// Accumulated gradient (leaf, or retained non-leaf).
  Tensor grad;
  /// The node that produced this tensor; null for a leaf.
  std::shared_ptr<Node> grad_fn;
  /// Which input of grad_fn receives this tensor's gradient.
  std::uint32_t output_nr = 0;
  /// A leaf's AccumulateGrad, held weakly: the graph owns it.
  std::weak_ptr<Node> grad_accumulator;
  /// Hooks of a leaf (a non-leaf's hooks live on its grad_fn); its
  /// AccumulateGrad runs them.
  HookList<TensorHook> hooks;
  /// Guards grad_accumulator creation and `grad` against concurrent backward
  /// calls on one leaf, as PyTorch's AutogradMeta and AccumulateGrad do. This
  /// is leaf data, not scheduling state.
  std::mutex mutex;
};

} // namespace actorgrad
