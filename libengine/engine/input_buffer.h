#pragma once
/// @file input_buffer.h
/// Where the gradients bound for one node's inputs add up.

#include <cstddef>

#include "libengine/tensor/tensor.h"

namespace actorgrad {

/// One slot per input of a node (PyTorch's InputBuffer). Gradients arriving
/// on the same slot are added; the buffer becomes the node's input list when
/// its dependencies reach zero. Owned by the actor that runs the node.
class InputBuffer {
public:
  InputBuffer() = default;
  explicit InputBuffer(std::size_t size) : buffer_(size) {}

  /// Adds `grad` into slot `pos` (in place when this buffer holds the only
  /// reference and grad mode is off, else out of place so a create_graph
  /// backward keeps its graph).
  void add(std::size_t pos, Tensor&& grad);

  std::size_t size() const { return buffer_.size(); }
  bool empty() const { return buffer_.empty(); }
  Tensor& operator[](std::size_t pos) { return buffer_[pos]; }

  /// Moves the slots out as the node's input list.
  static variable_list variables(InputBuffer&& b) { return std::move(b.buffer_); }

private:
  variable_list buffer_;
};

} // namespace actorgrad
