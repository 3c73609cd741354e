#include "tests/support/toy_graph.h"

#include <atomic>

#include "actorgrad/libengine/engine/detail/basic_graph_task_impl.h"

namespace actorgrad::detail {
template class BasicGraphTask<toy::ToyGraph>;
} // namespace actorgrad::detail

namespace actorgrad::toy {

namespace {
std::atomic<std::uint64_t> next_sequence_nr{1};
} // namespace

std::shared_ptr<ToyNode> make(std::string name, Device device, std::size_t num_inputs,
                              std::function<Values(const Values&)> fn) {
  auto n = std::make_shared<ToyNode>();
  n->name = std::move(name);
  n->sequence_nr = next_sequence_nr.fetch_add(1);
  n->device = device;
  n->num_inputs = num_inputs;
  n->fn = std::move(fn);
  return n;
}

void connect(const std::shared_ptr<ToyNode>& from, const std::shared_ptr<ToyNode>& to,
             std::uint32_t input_nr) {
  from->next.push_back({to, input_nr});
  from->topological_nr = std::max(from->topological_nr, to->topological_nr + 1);
}

Values ToyGraph::call_function(ToyNode& n, Values&& inputs) {
  Values out = n.fn(inputs);
  if (out.size() != n.next.size())
    throw std::runtime_error("returned " + std::to_string(out.size()) + " gradients for " +
                             std::to_string(n.next.size()) + " edges");
  return out;
}

std::shared_ptr<ToyNode> ToyGraph::make_graph_root(const std::vector<ToyEdge>& roots,
                                                   const Values& grads) {
  auto root = make("ToyRoot", Device::cpu(), 0, [grads](const Values&) { return grads; });
  for (const auto& e : roots)
    connect(root, e.node, e.input_nr);
  return root;
}

} // namespace actorgrad::toy
