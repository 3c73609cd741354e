#pragma once
/// @file saved_variable.h
/// A tensor a node keeps from forward for its backward.

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad {

class Node;

/// Keeps a forward tensor for backward, with the version it had when saved.
///
/// Unpacking checks that the tensor was not modified in place since (the
/// error names the node that saved it) and that it was not released by an
/// earlier backward without retain_graph. A node's own output is kept
/// without its grad_fn (which is the node itself: a reference cycle) and
/// gets it back on unpack.
class SavedVariable {
public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output);

  /// The saved tensor; `saved_for` is the node unpacking it (names it in
  /// errors and becomes the grad_fn of a saved output).
  Tensor unpack(const Node* saved_for) const;

  /// Frees the tensor; a later unpack throws.
  void reset_data();

  bool was_defined() const { return was_defined_; }

private:
  Tensor data_;
  std::uint32_t saved_version_ = 0;
  std::uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool was_defined_ = false;
  bool released_ = false;
  bool requires_grad_ = false;
};

// Note [Saved variables of a graph run twice at once]
// Several calls may run one graph at once (Node's comment). Without
// retain_graph, each call releases a node's saved tensors after running
// it, while another call may be unpacking them: a Tensor copied on one
// thread while another resets it breaks its reference count (it crashed
// with "pure virtual method called" on a node freed too early). PyTorch's
// generated nodes take a mutex of theirs for this, and a call that comes
// second fails with "Trying to backward through the graph a second time"
// instead. Here the lock is the saved tensors' own, held only to copy them
// out or release them (not while the node computes), and a node that saved
// nothing takes none.

/// The tensors one node saved: added while its forward runs, then unpacked
/// and released by the calls that run it, under a lock of their own (Note
/// [Saved variables of a graph run twice at once]).
class SavedVariables {
public:
  /// Keeps `t` (`is_output`: the node's own output). Forward only.
  void add(const Tensor& t, bool is_output) { saved_.emplace_back(t, is_output); }
  /// Every saved tensor, in the order added (SavedVariable::unpack).
  variable_list unpack(const Node* saved_for) const {
    return saved_.empty() ? variable_list() : unpack_locked(saved_for);
  }
  /// Frees them all; a later unpack throws.
  void release() {
    if (!saved_.empty())
      release_locked();
  }

private:
  variable_list unpack_locked(const Node* saved_for) const;
  void release_locked();

  std::vector<SavedVariable> saved_;
  mutable std::mutex mutex_;
};

} // namespace actorgrad
