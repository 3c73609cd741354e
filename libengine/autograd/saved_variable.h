#pragma once
/// @file saved_variable.h
/// A tensor a node keeps from forward for its backward.

#include <cstdint>
#include <memory>

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

} // namespace actorgrad
