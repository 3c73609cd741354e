#include "actorgrad/libengine/autograd/custom_function.h"

#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad {

/// The node a custom function records: calls the user's backward.
class CustomFunctionNode final : public Node {
public:
  CustomFunctionNode(std::string name, edge_list edges, CustomBackward backward)
    : Node(std::move(edges)), name_(std::move(name)), backward_(std::move(backward)) {}

  FunctionContext ctx;

  std::string name() const override { return name_; }

  variable_list apply(variable_list&& grads) override {
    for (std::size_t i = 0; i < grads.size(); ++i)
      if (!grads[i].defined()) // backward sees zeros where no gradient arrived
        grads[i] = Tensor::zeros(input_metadata(i).sizes(), input_metadata(i).dtype,
                                 input_metadata(i).device);
    variable_list out = backward_(ctx, grads);
    if (out.size() != num_outputs())
      throw EngineError("backward of custom function " + name_ + " returned " +
                        std::to_string(out.size()) + " gradients for " +
                        std::to_string(num_outputs()) + " inputs");
    for (std::size_t i = 0; i < out.size(); ++i)
      if (!next_edge(i).is_valid())
        out[i] = Tensor();
    return out;
  }

  void release_variables() override { ctx.saved_.release(); }

private:
  std::string name_;
  CustomBackward backward_;
};

variable_list FunctionContext::saved_tensors() const { return saved_.unpack(node_); }

variable_list apply_custom_function(const std::string& name, const variable_list& inputs,
                                    const CustomForward& forward, CustomBackward backward) {
  FunctionContext ctx;
  for (const auto& t : inputs)
    ctx.needs_input_grad_.push_back(t.defined() && t.requires_grad());
  variable_list outputs;
  {
    NoGradGuard no_grad;
    outputs = forward(ctx, inputs);
  }
  const bool record = any_requires_grad(inputs);
  std::shared_ptr<CustomFunctionNode> node;
  if (record)
    node = make_node<CustomFunctionNode>(name, collect_next_edges(inputs), std::move(backward));
  FunctionContext& kept = record ? node->ctx : ctx;
  if (record) {
    kept.needs_input_grad_ = std::move(ctx.needs_input_grad_);
    kept.saved_data = std::move(ctx.saved_data);
    kept.node_ = node.get();
  }
  for (auto& out : outputs) {
    if (!record || !out.defined())
      continue;
    // An output that is an input (or already has history) gets a fresh alias.
    out = out.detach();
    set_history(out, node);
  }
  // A saved output is saved as the output (with its history), without a
  // reference cycle to the node (SavedVariable's is_output).
  for (const auto& t : ctx.to_save_) {
    const Tensor* as_output = nullptr;
    for (const auto& out : outputs)
      if (record && t.defined() && out.defined() && t.impl()->storage == out.impl()->storage &&
          t.shape() == out.shape())
        as_output = &out;
    kept.saved_.add(as_output ? *as_output : t, as_output != nullptr);
  }
  return outputs;
}

variable_list checkpoint(std::function<variable_list(const variable_list&)> fn,
                         const variable_list& inputs) {
  auto forward = [fn](FunctionContext& ctx, const variable_list& in) {
    ctx.save_for_backward(in);
    ctx.saved_data["fn"] = fn;
    return fn(in);
  };
  auto backward = [](FunctionContext& ctx, const variable_list& grads) {
    auto fn =
      std::any_cast<std::function<variable_list(const variable_list&)>>(ctx.saved_data["fn"]);
    variable_list detached;
    variable_list saved = ctx.saved_tensors();
    for (std::size_t i = 0; i < saved.size(); ++i) {
      const Tensor& t = saved[i];
      Tensor d = t.defined() ? t.detach() : t;
      if (d.defined() && ctx.needs_input_grad(i))
        d.set_requires_grad(true);
      detached.push_back(d);
    }
    variable_list outputs;
    {
      AutoGradMode enable(true);
      outputs = fn(detached);
    }
    variable_list roots, root_grads;
    for (std::size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].defined() && outputs[i].requires_grad()) {
        roots.push_back(outputs[i]);
        root_grads.push_back(grads[i]);
      }
    if (!roots.empty())
      actorgrad::backward(roots, {.grad_tensors = root_grads}); // reentrant: on this node's engine
    variable_list result;
    for (const auto& d : detached)
      result.push_back(d.defined() && d.requires_grad() ? d.grad() : Tensor());
    return result;
  };
  return apply_custom_function("CheckpointFunction", inputs, forward, backward);
}

} // namespace actorgrad
