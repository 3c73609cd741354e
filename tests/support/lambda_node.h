#pragma once
/// @file lambda_node.h
/// A node whose backward is a user function (hooks, errors, callbacks,
/// ordering and hand-built graphs in tests).

#include <functional>
#include <string>
#include <utility>

#include "actorgrad/libengine/autograd/node.h"

namespace actorgrad::testing {

class LambdaNode final : public Node {
public:
  using Fn = std::function<variable_list(variable_list&&)>;
  LambdaNode(std::string name, Fn fn, edge_list next = {})
    : Node(std::move(next)), name_(std::move(name)), fn_(std::move(fn)) {}
  variable_list apply(variable_list&& grads) override { return fn_(std::move(grads)); }
  std::string name() const override { return name_; }

private:
  std::string name_;
  Fn fn_;
};

} // namespace actorgrad::testing
