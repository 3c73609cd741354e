#include "bench/common/reentrant.h"

#include <stdexcept>
#include <string>

#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/custom_function.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/ops.h"

namespace actorgrad::bench {

namespace {

struct Level {
  int below; ///< levels still to run under this one
  Device device;
  std::shared_ptr<const NestedGrad> nested;
  std::shared_ptr<std::atomic<int>> ok;
};

Tensor level_loss(const Tensor& z, const Level& level);

variable_list reentrant_backward(FunctionContext& ctx, const variable_list& g) {
  const auto& level = std::any_cast<const Level&>(ctx.saved_data.at("level"));
  if (level.below > 0) {
    AutoGradMode enable(true); // nodes run with grad mode off (no create_graph)
    Tensor z = Tensor::ones({1}, DType::f64, level.device).set_requires_grad();
    Level next{level.below - 1, level.device, level.nested, level.ok};
    Tensor dz = (*level.nested)(level_loss(z, next), z);
    if (dz.item() == 3.0)
      level.ok->fetch_add(1, std::memory_order_relaxed);
  }
  return {g[0]};
}

Tensor level_loss(const Tensor& z, const Level& level) {
  auto forward = [&level](FunctionContext& ctx, const variable_list& in) {
    ctx.saved_data["level"] = level;
    return variable_list{in[0].detach()};
  };
  Tensor r = apply_custom_function("ReentrantBackward", {z}, forward, reentrant_backward)[0];
  return sum(r * 3.0);
}

} // namespace

Tensor chain_grad(const Tensor& loss, const Tensor& input) {
  NoGradGuard no_grad; // as the engines run nodes without create_graph
  const Node* stop = gradient_edge(input).function.get();
  Edge e = gradient_edge(loss);
  Tensor g = Tensor::full_like(loss, 1.0);
  while (e.function.get() != stop) {
    if (!e.is_valid())
      throw std::logic_error("chain_grad: the chain ends before the input");
    Node& fn = *e.function;
    if (fn.num_inputs() != 1 || fn.next_edges().size() != 1)
      throw std::logic_error("chain_grad: " + fn.name() + " is not a link of a chain");
    variable_list out = fn.apply({std::move(g)});
    g = std::move(out.at(0));
    e = fn.next_edge(0);
  }
  return g;
}

ReentrantCase::ReentrantCase(int depth, Executor* engine, Device device)
  : depth_(depth), device_(device), nested_ok_(std::make_shared<std::atomic<int>>(0)) {
  if (engine) {
    nested_ = std::make_shared<NestedGrad>(
      [](const Tensor& loss, const Tensor& input) { return grad({loss}, {input})[0]; });
    top_ = [this, engine] { return grad({loss_}, {x_}, {.retain_graph = true}, *engine)[0]; };
  } else {
    nested_ = std::make_shared<NestedGrad>(chain_grad);
    top_ = [this] { return chain_grad(loss_, x_); };
  }
  x_ = Tensor::ones({1}, DType::f64, device_).set_requires_grad();
  loss_ = level_loss(x_, Level{depth_, device_, nested_, nested_ok_});
}

void ReentrantCase::run() {
  nested_ok_->store(0, std::memory_order_relaxed);
  Tensor dx = top_();
  if (dx.item() != 3.0 || nested_ok_->load(std::memory_order_relaxed) != depth_)
    throw std::logic_error("ReentrantCase: " + std::to_string(nested_ok_->load()) + " of " +
                           std::to_string(depth_) + " nested backward calls gave 3, top gave " +
                           std::to_string(dx.item()));
}

} // namespace actorgrad::bench
