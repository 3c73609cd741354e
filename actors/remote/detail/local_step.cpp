#include "actorgrad/actors/remote/detail/local_step.h"

#include <unordered_set>
#include <utility>

#include "actorgrad/actors/trace/recorder.h"
#include "actorgrad/libengine/autograd/accumulate_grad.h"
#include "actorgrad/libengine/autograd/grad_mode.h"

namespace actorgrad::remote::detail {

namespace {

/// Sets anomaly mode on this thread for a scope.
class AnomalyScope {
public:
  explicit AnomalyScope(bool on) : prev_(AnomalyMode::is_enabled()) {
    AnomalyMode::set_enabled(on);
  }
  ~AnomalyScope() { AnomalyMode::set_enabled(prev_); }
  AnomalyScope(const AnomalyScope&) = delete;
  AnomalyScope& operator=(const AnomalyScope&) = delete;

private:
  bool prev_;
};

} // namespace

LocalStep run_local_step(Executor& executor, const edge_list& roots, variable_list root_grads,
                         bool anomaly) {
  LocalStep out;
  edge_list engine_roots;
  variable_list engine_grads;
  // A root that is itself a receive node (the loss came from a worker) needs
  // no local pass: its gradient goes straight back.
  for (std::size_t i = 0; i < roots.size(); ++i) {
    if (auto recv = std::dynamic_pointer_cast<RecvBackward>(roots[i].function)) {
      if (root_grads[i].defined())
        out.outgoing.push_back({std::move(recv), root_grads[i]});
      continue;
    }
    engine_roots.push_back(roots[i]);
    engine_grads.push_back(root_grads[i]);
  }
  if (engine_roots.empty())
    return out;

  // The leaves and receive nodes the pass can reach: the gradients to capture.
  edge_list captures;
  std::vector<std::shared_ptr<RecvBackward>> recvs;
  std::vector<std::pair<std::shared_ptr<Node>, const AccumulateGrad*>> accumulators;
  std::unordered_set<const Node*> seen;
  std::vector<Node*> stack;
  for (const auto& e : engine_roots)
    if (e.function && seen.insert(e.function.get()).second)
      stack.push_back(e.function.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.function || !seen.insert(e.function.get()).second)
        continue;
      if (auto recv = std::dynamic_pointer_cast<RecvBackward>(e.function)) {
        recvs.push_back(std::move(recv));
      } else if (auto* acc = dynamic_cast<const AccumulateGrad*>(e.function.get())) {
        accumulators.push_back({e.function, acc});
      } else {
        stack.push_back(e.function.get());
      }
    }
  }
  // Captured in this order: receive nodes first, then leaves.
  for (const auto& r : recvs)
    captures.push_back({r, 0});
  for (const auto& a : accumulators)
    captures.push_back({a.first, 0});
  if (captures.empty())
    return out;

  variable_list captured;
  const std::uint64_t pass_before = trace::Recorder::last_pass_started_here();
  {
    AnomalyScope scope(anomaly);
    ExecuteOptions options;
    options.keep_graph = true;
    options.create_graph = false;
    options.accumulate_grad = false;
    captured = executor.execute(engine_roots, std::move(engine_grads), options, captures);
  }
  if (const std::uint64_t pass = trace::Recorder::last_pass_started_here(); pass != pass_before)
    out.graph_task = pass;
  captured.resize(captures.size());
  for (std::size_t i = 0; i < recvs.size(); ++i)
    if (captured[i].defined())
      out.outgoing.push_back({recvs[i], captured[i]});
  for (std::size_t i = 0; i < accumulators.size(); ++i) {
    const Tensor& g = captured[recvs.size() + i];
    if (g.defined())
      out.leaves.push_back({accumulators[i].first, accumulators[i].second->variable(), g});
  }
  return out;
}

} // namespace actorgrad::remote::detail
