#include "actorgrad/libengine/ops/detail/function_node.h"

#include <stdexcept>

#include "actorgrad/libengine/autograd/graph_builder.h"

namespace actorgrad::detail {

FunctionBackward::FunctionBackward(std::string name, edge_list next_edges, BackwardFn backward)
  : Node(std::move(next_edges)), name_(std::move(name)), backward_(std::move(backward)) {}

variable_list FunctionBackward::apply(variable_list&& grads) {
  if (grads.size() != 1)
    throw std::invalid_argument(name_ + ": expected 1 gradient, got " +
                                std::to_string(grads.size()));
  if (!grads[0].defined())
    return variable_list(num_outputs());
  const variable_list saved = saved_.unpack(this);
  std::vector<bool> needs(num_outputs());
  for (std::size_t i = 0; i < needs.size(); ++i)
    needs[i] = next_edge(i).is_valid();
  return backward_(grads[0], saved, needs);
}

void FunctionBackward::release_variables() { saved_.release(); }

void FunctionBackward::save(const Tensor& t, bool is_output) { saved_.add(t, is_output); }

Tensor record(const char* name, Tensor result, const variable_list& inputs, BackwardFn backward,
              const variable_list& saved, bool save_result) {
  if (!any_requires_grad(inputs))
    return result;
  auto node = make_node<FunctionBackward>(name, collect_next_edges(inputs), std::move(backward));
  for (const auto& t : saved)
    node->save(t, false);
  set_history(result, node);
  if (save_result)
    node->save(result, true);
  return result;
}

} // namespace actorgrad::detail
