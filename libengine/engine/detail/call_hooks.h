#pragma once
/// @file call_hooks.h
/// Running a node's hooks for the engine and checking what they return.
/// Internal (libengine/engine/detail/, not installed).

#include "actorgrad/libengine/autograd/node.h"

namespace actorgrad::detail {

/// A node's tensor pre-hooks, its leaf's hooks (AccumulateGrad) and its
/// retain_grad hooks, read once (Note [Removing a hook while a backward
/// runs]); empty where a list is.
struct TensorHookSnapshot {
  TensorHookSnapshot() = default;
  explicit TensorHookSnapshot(const Node& fn);

  /// Whether any of the three lists holds a hook.
  explicit operator bool() const { return tensor_pre || leaf || retains_grad; }

  HookList<TensorHook>::Snapshot tensor_pre;
  HookList<TensorHook>::Snapshot leaf;
  HookList<TensorHook>::Snapshot retains_grad;
};

/// Every hook of a node, read once when the engine starts running it. For a
/// node that never had a hook (Node::may_have_hooks) that is one load, for
/// one whose lists are all empty (mostly an AccumulateGrad whose leaf has
/// no hook) one load a list, and the snapshot is false.
struct HookSnapshot {
  explicit HookSnapshot(const Node& fn) {
    if (fn.may_have_hooks())
      take(fn);
  }
  explicit operator bool() const { return any; }

  TensorHookSnapshot tensor;
  HookList<NodePreHook>::Snapshot pre;
  HookList<NodePostHook>::Snapshot post;
  bool any = false;

private:
  void take(const Node& fn);
};

/// Runs the tensor pre-hooks, then the leaf's hooks, then the retain_grad
/// hooks of `hooks` on the defined gradients in `inputs`, in place. A
/// defined result replaces the gradient when it has the shape, dtype and
/// device of `fn`'s input metadata; otherwise throws EngineError naming the
/// hook, `fn`, the input and the expected and actual metadata.
void call_tensor_pre_hooks(const Node& fn, const TensorHookSnapshot& hooks, variable_list& inputs);
/// The same with a snapshot taken now.
void call_tensor_pre_hooks(Node& fn, variable_list& inputs);

/// Runs the pre-hooks of `hooks`. A non-empty result replaces `inputs`: it
/// must hold one gradient per input, each defined exactly where the input
/// is, with the input metadata's shape, dtype and device (else EngineError
/// naming the hook, `fn` and the input).
void call_pre_hooks(const Node& fn, const HookSnapshot& hooks, variable_list& inputs);

/// Runs the post-hooks of `hooks` on the validated `outputs` of `fn` and its
/// `inputs`. A non-empty result replaces `outputs`: one gradient per
/// output, checked like a pre-hook's against the metadata of the input each
/// next edge points at (outputs along invalid edges are not checked).
void call_post_hooks(const Node& fn, const HookSnapshot& hooks, variable_list& outputs,
                     const variable_list& inputs);

} // namespace actorgrad::detail
