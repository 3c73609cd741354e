#pragma once
/// @file hook_handle.h
/// What registering a hook returns: the means to take it out again.

#include <cstdint>
#include <memory>

namespace actorgrad {

/// The handle of one registered hook (PyTorch's RemovableHandle).
///
/// It holds the hook's list weakly: it keeps neither the tensor nor the node
/// alive, and `remove()` does nothing once they are gone. Copies name the
/// same hook. A default-constructed handle names no hook.
///
/// Note [Removing a hook while a backward runs]
/// Each time the engine runs a node it takes one snapshot of that node's
/// hooks (and of its leaf's hooks, for an AccumulateGrad) and calls the
/// hooks of the snapshot. `remove()` therefore affects every node call that
/// starts after it returns, including the nodes of a running backward that
/// have not started yet; it does not affect a node call already under way.
/// In particular a hook removed by another hook of the same node, or from
/// another thread while that node runs, is still called in that call and
/// never after. Registering a hook during a backward is alike. No lock is
/// taken on the engine's side (hook_list.h).
class HookHandle {
public:
  /// Removes the hook `id` from the list at `list` (a HookList).
  using RemoveFn = void (*)(void* list, std::uint64_t id);

  HookHandle() = default;
  /// Used by HookList::add: `list` points at the list and shares ownership
  /// with what holds it (its node or tensor).
  HookHandle(const std::shared_ptr<void>& list, RemoveFn remove, std::uint64_t id)
    : list_(list), remove_(remove), id_(id) {}

  /// Takes the hook out of its list. Idempotent; safe from any thread,
  /// from inside a hook, and after the tensor or node is gone (then it does
  /// nothing). See Note [Removing a hook while a backward runs].
  void remove();

  /// The hook's id, unique in the process (0 for an empty handle).
  std::uint64_t id() const { return id_; }

private:
  std::weak_ptr<void> list_;
  RemoveFn remove_ = nullptr;
  std::uint64_t id_ = 0;
};

/// A new hook id (never 0, never reused).
std::uint64_t next_hook_id();

} // namespace actorgrad
