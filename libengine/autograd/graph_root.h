#pragma once
/// @file graph_root.h
/// The dummy root of a backward call with several roots.

#include "actorgrad/libengine/autograd/node.h"

namespace actorgrad {

/// Returns the root gradients along the roots' edges. Created only when a
/// backward call has several roots: with one, the root node itself is the
/// first task.
class GraphRoot final : public Node {
public:
  GraphRoot(edge_list roots, variable_list grads);
  variable_list apply(variable_list&&) override { return grads_; }
  std::string name() const override { return "GraphRoot"; }

private:
  variable_list grads_;
};

} // namespace actorgrad
