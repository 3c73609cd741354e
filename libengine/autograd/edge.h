#pragma once
/// @file edge.h
/// An edge of the backward graph.

#include <cstdint>
#include <memory>
#include <vector>

namespace actorgrad {

class Node;

/// Points at input `input_nr` of `function` (PyTorch's Edge).
struct Edge {
  std::shared_ptr<Node> function;
  std::uint32_t input_nr = 0;

  /// False for the placeholder of an output that needs no gradient.
  bool is_valid() const { return function != nullptr; }
};

using edge_list = std::vector<Edge>;

} // namespace actorgrad
