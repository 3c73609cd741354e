#include "actorgrad/actors/torch/dist_engine.h"

// NOT-SCHEDULING-PATH: the one mutex here guards the distributed contexts'
// bookkeeping at the RPC boundary (Note [Distributed autograd on actors]):
// it is held for a table update or inside a RecvRpcBackward node's call, as
// libtorch's own nodes hold theirs, never while an actor waits or dispatches.

#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/variable.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "actorgrad/actors/torch/bridge_engine.h"
#include "actorgrad/actors/torch/dist_autograd_abi.h"
#include "actorgrad/actors/torch/install.h"
#include "actorgrad/actors/torch/plt_slots.h"

namespace actorgrad::torch::detail {

// Note [Distributed autograd on actors]
// libtorch 1.13's DistEngine (a singleton in libtorch_cpu.so) runs the
// local part of a distributed backward with its own ready loop
// (execute_graph_task_until_ready_queue_empty, calling the non-virtual
// Engine::evaluate_function) on the engine it took from
// get_default_engine() when first used, so the bridge engine never sees
// it. Two entry points start that loop, and libtorch_cpu calls both
// through its PLT (readelf -r -W libtorch_cpu.so.1.13.0 lists
// R_X86_64_JUMP_SLOT relocations for DistEngine::execute and
// DistEngine::executeSendFunctionAsync; objdump shows
// torch::distributed::autograd::backward and
// RequestCallbackNoPython::processBackwardAutogradReq calling them
// `@plt`). Python's dist_autograd.backward is a pybind binding of
// torch::distributed::autograd::backward (libtorch_python.so holds its
// address: R_X86_64_GLOB_DAT), so it goes through the same slot. install()
// rewrites the two slots (plt_slots.h): the same code serves the preload
// library and the Python module, and no other code of libtorch changes.
//
// What runs instead, in each process:
// - dist_autograd.backward(context_id, roots, retain_graph), the
//   initiator: roots are checked as libtorch does (scalar, requiring grad,
//   with a grad_fn), then this process's part runs from them (below), then
//   the call waits for every gradient RPC the part sent (libtorch's
//   clearAndWaitForOutstandingRpcsAsync) and throws the first error.
// - A gradient arriving by RPC for a SendRpcBackward (the RPC agent's
//   request callback, which already stored the gradient in the node):
//   the node returns it, and a part runs from the node's next edges with
//   it, on the agent's thread as a synchronous call of the actor engine
//   (the thread coordinates and runs the CPU nodes, as for any bridge
//   call). The future returned to the agent, which answers the sender with
//   it, completes when the RPCs of the part are answered; the part itself
//   never waits for a reply, so no agent thread blocks on another process.
// - A part is one call of the bridge engine (BridgeEngine::execute with
//   accumulate_grad=false): its outputs are the graph's leaves that
//   libtorch's computeDependencies makes outputs too, each AccumulateGrad
//   and every input of each RecvRpcBackward, found by one walk from the
//   roots. So the actor engine runs exactly the nodes that lead to a leaf
//   (libtorch's init_to_execute on the same outputs) and returns each
//   leaf's summed gradient. Each AccumulateGrad's gradient then goes
//   through the leaf's pre-hooks into the context (DistAutogradContext::
//   accumulateGrad, what get_gradients returns) and its post-hooks, as
//   libtorch's DistAccumulateGradCaptureHook does; each RecvRpcBackward is
//   called with its gradients and sends them to its peer, as libtorch's
//   loop would.
// - An error of a part fails it with "Error on Node N: ..." (N: this
//   worker's id), libtorch's text: the initiator throws it, a remote part
//   answers its sender with it, so the caller's error names every worker
//   on the way.
//
// Difference from libtorch: libtorch runs all of a process's parts of one
// pass as one GraphTask whose roots are the context's roots and every send
// function, so a node reached from several send functions runs once, with
// their gradients summed; here each arriving gradient runs its own part
// (one bridge call: the actor engine has no entry for a task that waits for
// roots that arrive later), so such a node runs once per arrival
// (correct by linearity; with retain_graph=False its second run fails as a
// second backward through a freed graph would), and a RecvRpcBackward
// sends once its part has finished rather than when it becomes ready. A
// graph whose parts are reached through one send function each, the
// common model-parallel case, runs the same nodes on the same gradients
// in the same order as libtorch, so its gradients are bitwise libtorch's.
//
// Bookkeeping at the RPC boundary: a context's parts running in this
// process share the libtorch GraphTask libtorch's RecvRpcBackward reads
// keep_graph_ from (set by the first, reset once the RPCs of the last are
// answered, so that a failing RPC reports to it as in libtorch). A part
// waits for the RPCs it sent itself and no other's: a part that waited
// for an earlier part's RPCs could wait for itself (the earlier part's
// RPC is answered only when the gradients it causes, this part among
// them, are done). libtorch only lets a context hand over all its RPCs at
// once, so each RecvRpcBackward call and the handing over of its RPC are
// made together under one std::mutex, which also guards the per-context
// table, as libtorch's DistEngine keeps its own under a mutex. It is taken
// when a part starts, around each RecvRpcBackward call (which queues its
// RPC and returns) and when a part ends, by RPC agent and caller threads,
// never by an actor of the engine.

namespace {

namespace dist = ::torch::distributed::autograd;
using ::torch::autograd::AccumulateGrad;
using ::torch::autograd::edge_list;
using ::torch::autograd::GraphTask;
using ::torch::autograd::Node;
using ::torch::autograd::variable_list;
using Future = c10::ivalue::Future;
using FuturePtr = c10::intrusive_ptr<Future>;
using ContextPtr = std::shared_ptr<dist::DistAutogradContext>;

using ExecuteFn = void (*)(dist::DistEngine*, int64_t, const variable_list&, bool);
using SendFn = FuturePtr (*)(dist::DistEngine*, const ContextPtr&,
                             const std::shared_ptr<dist::SendRpcBackward>&, bool);

/// libtorch's own entry points, for calls made while actorgrad is not
/// installed. Written once (atomically, by redirect_plt_slot before it
/// rewrites the slot), read atomically by every call through the slot.
void* stock_execute = nullptr;
void* stock_send = nullptr;

template <class Fn>
Fn stock(void*& entry) {
  return reinterpret_cast<Fn>(__atomic_load_n(&entry, __ATOMIC_ACQUIRE));
}

constexpr const char* kExecuteSymbol =
  "_ZN5torch11distributed8autograd10DistEngine7executeElRKSt6vectorIN2at6TensorESaIS5_EEb";
constexpr const char* kSendSymbol =
  "_ZN5torch11distributed8autograd10DistEngine24executeSendFunctionAsyncERKSt10shared_ptrINS1_"
  "19DistAutogradContextEERKS3_INS1_15SendRpcBackwardEEb";

/// A context's parts in this process (see the Note), from the first
/// part's start until the RPCs of the last are answered.
struct ContextParts {
  int running = 0;
  /// Counts the times a part found none running (told apart so that the
  /// end of an earlier group does not reset a later group's GraphTask).
  std::uint64_t group = 0;
};
std::mutex parts_mutex;
std::unordered_map<int64_t, ContextParts> parts_by_context;

/// Starts a part of `ctx`: the first of a group gives the context a libtorch
/// GraphTask keeping the graph as `keep_graph` says.
void enter_part(dist::DistAutogradContext& ctx, bool keep_graph) {
  std::lock_guard<std::mutex> lock(parts_mutex);
  ContextParts& parts = parts_by_context[ctx.contextId()];
  if (parts.running++ == 0) {
    ++parts.group;
    ctx.resetGraphTask();
    ctx.setGraphTask(std::make_shared<GraphTask>(keep_graph, /*grad_mode=*/false,
                                                 /*reentrant_depth=*/0, nullptr,
                                                 /*exit_on_error=*/true));
  }
}

/// A future that completes when every one of `futures` has, with the first
/// error among them.
FuturePtr join(std::vector<FuturePtr> futures) {
  auto joined = c10::make_intrusive<Future>(c10::NoneType::get());
  // Written by each future's callback (any thread), read by the last one.
  auto left = std::make_shared<std::atomic<std::size_t>>(futures.size());
  if (futures.empty())
    joined->markCompleted();
  for (auto& f : futures)
    f->addCallback([joined, left](Future& done) {
      if (done.hasError())
        joined->setErrorIfNeeded(done.exception_ptr());
      if (left->fetch_sub(1, std::memory_order_acq_rel) == 1 && !joined->completed())
        joined->markCompleted();
    });
  return joined;
}

/// Calls RecvRpcBackward `recv` with `grads` (it sends them to its peer
/// and adds the RPC's future to `ctx`) and returns that future: every RPC
/// of a context is added under parts_mutex, so the context hands over
/// exactly this one.
FuturePtr send_to_peer(dist::DistAutogradContext& ctx, Node& recv, variable_list&& grads) {
  std::lock_guard<std::mutex> lock(parts_mutex);
  recv(std::move(grads));
  return ctx.clearAndWaitForOutstandingRpcsAsync();
}

/// Ends a part of `ctx` that sent the RPCs `sent`: returns a future for
/// them. When the last part of a group ends and its RPCs are answered, the
/// context's GraphTask goes (an RPC that fails reports to it until then, as
/// in libtorch).
FuturePtr leave_part(const ContextPtr& ctx, std::vector<FuturePtr> sent) {
  std::uint64_t group = 0;
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(parts_mutex);
    ContextParts& parts = parts_by_context.at(ctx->contextId());
    last = --parts.running == 0;
    group = parts.group;
  }
  FuturePtr joined = join(std::move(sent));
  if (last)
    joined->addCallback([ctx, group](Future&) {
      std::lock_guard<std::mutex> lock(parts_mutex);
      auto it = parts_by_context.find(ctx->contextId());
      if (it != parts_by_context.end() && it->second.running == 0 && it->second.group == group) {
        ctx->resetGraphTask();
        parts_by_context.erase(it);
      }
    });
  return joined;
}

/// libtorch's text for an error of this worker's part.
std::string on_this_node(const std::exception& e) {
  return "Error on Node " +
         std::to_string(dist::DistAutogradContainer::getInstance().getWorkerId()) + ": " + e.what();
}

bool is_recv(const Node& n) {
  return std::strcmp(typeid(n).name(), dist::kRecvRpcBackwardTypeName) == 0;
}

/// The leaves reached from `roots` that libtorch's computeDependencies
/// makes outputs: (AccumulateGrad, 0) and (RecvRpcBackward, i) for each
/// input i, a node's edges next to each other.
edge_list leaves_of(const edge_list& roots) {
  edge_list leaves;
  std::unordered_set<Node*> seen;
  std::deque<Node*> queue;
  auto reach = [&](const ::torch::autograd::Edge& e) {
    Node* next = e.function.get();
    if (!next || !seen.insert(next).second)
      return;
    queue.push_back(next);
    if (next->num_outputs() != 0)
      return;
    if (dynamic_cast<AccumulateGrad*>(next))
      leaves.emplace_back(e.function, 0);
    else if (is_recv(*next))
      for (std::uint32_t i = 0; i < next->num_inputs(); ++i)
        leaves.emplace_back(e.function, i);
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
/// (libtorch's DistAccumulateGradCaptureHook).
void accumulate_into(dist::DistAutogradContext& ctx, AccumulateGrad& leaf, at::Tensor&& grad) {
  variable_list grads{std::move(grad)};
  for (const auto& hook : leaf.pre_hooks())
    grads = (*hook)(grads);
  if (grads[0].defined())
    ctx.accumulateGrad(leaf.variable, grads[0], /*num_expected_refs=*/1);
  for (const auto& hook : leaf.post_hooks())
    (*hook)(variable_list{}, grads);
}

/// Runs this process's part of a pass of `ctx` from `roots` with `grads`
/// on the installed actor engine (see the Note); adds the RPCs it sends to
/// `sent`.
void run_part(dist::DistAutogradContext& ctx, const edge_list& roots, variable_list&& grads,
              bool keep_graph, std::vector<FuturePtr>& sent) {
  counters().distributed_parts.fetch_add(1, std::memory_order_relaxed);
  const edge_list leaves = leaves_of(roots);
  if (leaves.empty())
    return;
  variable_list got = ::torch::autograd::Engine::get_default_engine().execute(
    roots, grads, keep_graph, /*create_graph=*/false, /*accumulate_grad=*/false, leaves);
  grads.clear();
  for (std::size_t i = 0; i < leaves.size();) {
    Node& fn = *leaves[i].function;
    if (auto* leaf = dynamic_cast<AccumulateGrad*>(&fn)) {
      accumulate_into(ctx, *leaf, std::move(got[i]));
      ++i;
      continue;
    }
    variable_list inputs;
    for (; i < leaves.size() && leaves[i].function.get() == &fn; ++i)
      inputs.push_back(std::move(got[i]));
    sent.push_back(send_to_peer(ctx, fn, std::move(inputs)));
  }
}

void execute_on_actors(dist::DistEngine* self, int64_t context_id, const variable_list& roots,
                       bool retain_graph) {
  if (!actorgrad::torch::installed())
    return stock<ExecuteFn>(stock_execute)(self, context_id, roots, retain_graph);
  ContextPtr ctx = dist::DistAutogradContainer::getInstance().retrieveContext(context_id);
  TORCH_CHECK(!roots.empty(), "No tensors provided for gradient computation.");
  edge_list edges;
  variable_list grads;
  for (const auto& root : roots) {
    TORCH_CHECK(root.requires_grad(), "requires_grad not set on root");
    TORCH_CHECK(root.numel() == 1, root.name(), " is not a scalar, all roots need to be scalar");
    TORCH_CHECK(root.grad_fn(), root.name(), " does not have a valid gradient function.");
    edges.push_back(::torch::autograd::impl::gradient_edge(root));
    grads.push_back(at::ones_like(root, LEGACY_CONTIGUOUS_MEMORY_FORMAT));
  }
  enter_part(*ctx, retain_graph);
  std::vector<FuturePtr> sent;
  try {
    run_part(*ctx, edges, std::move(grads), retain_graph, sent);
  } catch (const std::exception& e) {
    leave_part(ctx, std::move(sent));
    throw c10::Error(on_this_node(e), "");
  }
  leave_part(ctx, std::move(sent))->waitAndThrow();
}

FuturePtr execute_send_on_actors(dist::DistEngine* self, const ContextPtr& ctx,
                                 const std::shared_ptr<dist::SendRpcBackward>& send,
                                 bool retain_graph) {
  if (!actorgrad::torch::installed())
    return stock<SendFn>(stock_send)(self, ctx, send, retain_graph);
  enter_part(*ctx, retain_graph);
  std::vector<FuturePtr> sent;
  try {
    variable_list received = (*send)(variable_list{}); // the gradients the RPC stored in it
    edge_list roots;
    variable_list grads;
    for (std::uint32_t i = 0; i < send->num_outputs(); ++i)
      if (const auto& e = send->next_edge(i); e.is_valid()) {
        roots.push_back(e);
        grads.push_back(std::move(received[i]));
      }
    run_part(*ctx, roots, std::move(grads), retain_graph, sent);
  } catch (const std::exception& e) {
    leave_part(ctx, std::move(sent));
    auto failed = c10::make_intrusive<Future>(c10::NoneType::get());
    failed->setError(std::make_exception_ptr(c10::Error(on_this_node(e), "")));
    return failed;
  }
  return leave_part(ctx, std::move(sent));
}

} // namespace

bool take_over_dist_engine() {
  static const bool taken = [] {
    const bool execute =
      redirect_plt_slot("libtorch_cpu.so", kExecuteSymbol,
                        reinterpret_cast<void*>(&execute_on_actors), &stock_execute);
    const bool send =
      redirect_plt_slot("libtorch_cpu.so", kSendSymbol,
                        reinterpret_cast<void*>(&execute_send_on_actors), &stock_send);
    return execute && send;
  }();
  return taken;
}

} // namespace actorgrad::torch::detail
