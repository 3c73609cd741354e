#include "actorgrad/actors/torch/detail/dist_task.h"

#include <ATen/core/jit_type.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>

#include <cstring>
#include <deque>
#include <span>
#include <string>
#include <typeinfo>
#include <unordered_set>
#include <utility>

#include "actorgrad/actors/torch/detail/bridge_engine.h"
#include "actorgrad/actors/torch/detail/dist_pass.h"

namespace actorgrad::torch::detail {

namespace {

namespace dist = ::torch::distributed::autograd;
using ::torch::autograd::AccumulateGrad;
using ::torch::autograd::Edge;
using ::torch::autograd::edge_list;
using ::torch::autograd::GraphTask;
using ::torch::autograd::Node;
using ::torch::autograd::variable_list;

bool is_recv(const Node& n) {
  return std::strcmp(typeid(n).name(), dist::kRecvRpcBackwardTypeName) == 0;
}

/// The leaves reached from `roots` that libtorch's computeDependencies
/// makes outputs: each AccumulateGrad (captured) and each RecvRpcBackward
/// (run, as libtorch marks it needed).
struct Leaves {
  edge_list accumulate;
  edge_list recv;
};
Leaves leaves_of(const edge_list& roots) {
  Leaves leaves;
  std::unordered_set<Node*> seen;
  std::deque<Node*> queue;
  auto reach = [&](const Edge& e) {
    Node* next = e.function.get();
    if (!next || !seen.insert(next).second)
      return;
    queue.push_back(next);
    if (next->num_outputs() != 0)
      return;
    if (dynamic_cast<AccumulateGrad*>(next))
      leaves.accumulate.emplace_back(e.function, 0);
    else if (is_recv(*next))
      leaves.recv.emplace_back(e.function, 0);
  };
  for (const auto& e : roots)
    reach(e);
  while (!queue.empty()) {
    Node* fn = queue.front();
    queue.pop_front();
    for (const auto& e : fn->next_edges())
      reach(e);
  }
  return leaves;
}

/// Adds a leaf's gradient into the context through the leaf's hooks
/// (libtorch's DistAccumulateGradCaptureHook). The caller's list of the
/// pass's leaf gradients holds `grad` until every one is added, as
/// libtorch's captured_vars_ does: so a gradient that two leaves received
/// (or that anything else still holds) has more than the two expected
/// references and the context stores a copy of it, and one that only this
/// leaf received is stored as it is (PyTorch's test_no_grad_copy).
void accumulate_into(dist::DistAutogradContext& ctx, AccumulateGrad& leaf, const at::Tensor& grad) {
  variable_list grads{grad};
  for (const auto& hook : leaf.pre_hooks())
    grads = (*hook)(grads);
  if (grads[0].defined())
    ctx.accumulateGrad(leaf.variable, grads[0], /*num_expected_refs=*/2);
  for (const auto& hook : leaf.post_hooks())
    (*hook)(variable_list{}, grads);
}

/// Fails its pass when destroyed, unless the pass ended: the context's
/// libtorch GraphTask went while the task waited (see the Note).
struct FailOnRelease {
  FailOnRelease(std::weak_ptr<Pass> p, int64_t id) : pass(std::move(p)), context_id(id) {}
  FailOnRelease(const FailOnRelease&) = delete;
  FailOnRelease& operator=(const FailOnRelease&) = delete;
  std::weak_ptr<Pass> pass;
  int64_t context_id;
  ~FailOnRelease() {
    if (auto p = pass.lock())
      p->fail(std::make_exception_ptr(
        c10::Error("distributed autograd context " + std::to_string(context_id) +
                     " was released while its backward pass waited for gradients in this process",
                   "")));
  }
};

/// Gives `ctx` the libtorch GraphTask its RecvRpcBackward nodes read
/// keep_graph_ from; a gradient RPC that fails reports to it, and so fails
/// `pass`, as does its destruction before the pass ended.
void give_stock_graph_task(dist::DistAutogradContext& ctx, const std::shared_ptr<Pass>& pass,
                           bool keep_graph) {
  auto stock_task = std::make_shared<GraphTask>(keep_graph, /*grad_mode=*/false,
                                                /*reentrant_depth=*/0, nullptr,
                                                /*exit_on_error=*/true);
  auto guard = std::make_shared<FailOnRelease>(pass, ctx.contextId());
  stock_task->future_result_->addCallback([guard](c10::ivalue::Future& f) {
    if (auto p = guard->pass.lock(); p && f.hasError())
      p->fail(f.exception_ptr());
  });
  ctx.clearOutstandingRpcs();
  ctx.resetGraphTask();
  ctx.setGraphTask(std::move(stock_task));
}

} // namespace

std::unique_ptr<OpenTask> open_task(dist::DistAutogradContext& ctx,
                                    const std::shared_ptr<Pass>& pass, const Edge* root,
                                    variable_list&& grads, const Node* arrived, bool keep_graph) {
  auto open = std::make_unique<OpenTask>();
  open->keep_graph = keep_graph;
  for (const auto& entry : ctx.sendFunctions())
    open->reach.emplace_back(entry.second, 0);
  const std::size_t sends = open->reach.size();
  if (root)
    open->reach.push_back(*root);
  Leaves leaves = leaves_of(open->reach);
  auto [task, first] = TorchGraphTask::create_open(
    root, std::move(grads), std::span<const Edge>(open->reach.data(), sends), arrived,
    ExecuteOptions{keep_graph, /*create_graph=*/false, /*accumulate_grad=*/false},
    leaves.accumulate, leaves.recv);
  open->accumulate = std::move(leaves.accumulate);
  if (!task->devices().empty())
    return nullptr;
  open->first = std::move(first);
  pass->set_task(std::move(task));
  give_stock_graph_task(ctx, pass, keep_graph);
  return open;
}

void run_task(const std::weak_ptr<dist::DistAutogradContext>& weak_ctx, Pass& pass,
              OpenTask& open) {
  counters().distributed_parts.fetch_add(1, std::memory_order_relaxed);
  variable_list got = pass.bridge().run_task(pass.task(), std::move(open.first), open.reach,
                                             open.accumulate, open.keep_graph);
  if (auto ctx = weak_ctx.lock())
    for (std::size_t i = 0; i < open.accumulate.size(); ++i)
      accumulate_into(*ctx, static_cast<AccumulateGrad&>(*open.accumulate[i].function), got[i]);
}
} // namespace actorgrad::torch::detail
