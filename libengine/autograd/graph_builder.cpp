#include "actorgrad/libengine/autograd/graph_builder.h"

#include "actorgrad/libengine/autograd/accumulate_grad.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad {

bool any_requires_grad(const variable_list& inputs) {
  if (!GradMode::is_enabled())
    return false;
  for (const auto& t : inputs)
    if (t.defined() && t.requires_grad())
      return true;
  return false;
}

namespace {

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  auto& m = leaf.impl()->meta();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (auto acc = m.grad_accumulator.lock())
    return acc;
  std::shared_ptr<Node> acc = make_node<AccumulateGrad>(leaf);
  m.grad_accumulator = acc;
  return acc;
}

} // namespace

std::shared_ptr<Node> try_get_grad_accumulator(const Tensor& leaf) {
  if (!leaf.defined() || !leaf.impl()->autograd)
    return nullptr;
  auto& m = *leaf.impl()->autograd;
  std::lock_guard<std::mutex> lock(m.mutex);
  return m.grad_accumulator.lock();
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad())
    return {};
  if (auto fn = t.grad_fn())
    return {std::move(fn), t.output_nr()};
  return {grad_accumulator(t), 0};
}

edge_list collect_next_edges(const variable_list& inputs) {
  edge_list edges;
  edges.reserve(inputs.size());
  for (const auto& t : inputs)
    edges.push_back(gradient_edge(t));
  return edges;
}

void set_history(Tensor& output, const std::shared_ptr<Node>& fn) {
  auto& m = output.impl()->meta();
  m.requires_grad = true;
  m.grad_fn = fn;
  m.output_nr = fn->add_input_metadata(output);
}

} // namespace actorgrad
