#include "actorgrad/actors/torch/dist_engine.h"

// NOT-SCHEDULING-PATH: the one mutex here guards the table of the passes
// running, at the RPC boundary (Note [Distributed autograd on actors]): it
// is held for a table update or look-up by caller and RPC agent threads,
// never by an actor of the engine, nor while one waits or dispatches.

#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/variable.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "actorgrad/actors/engine.h"
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
// What runs instead, in each process: libtorch's semantics, one pass per
// context and process (Note [Roots that arrive later] in
// libengine/engine/detail/basic_graph_task_impl.h).
// - The first part of a pass in a process (dist_autograd.backward, the
//   initiator, whose roots are checked as libtorch does; or the first
//   gradient that arrives by RPC for one of the context's SendRpcBackward
//   nodes) lists the pass and builds one task whose dependencies are
//   counted from its roots and every send function of the context
//   (DistAutogradContext::sendFunctions), as libtorch's
//   computeDependencies does with its dummy root. It captures each
//   AccumulateGrad and runs each RecvRpcBackward (libtorch's outputEdges
//   and needed_ marks), so the actor engine runs exactly the nodes that
//   lead to them. It runs as a call of the bridge engine
//   (BridgeEngine::run_task) on the thread of that part: the caller, or
//   the RPC agent's thread, whose caller mailbox coordinates it.
// - Every later gradient for a send function of the context (the RPC
//   agent's request callback, which stored the gradient in the node) finds
//   the pass listed and hands its send function to the task as a ready
//   root, by message to the task's coordinator (Engine::add_root), and is
//   answered at once, as in libtorch. One that comes before the
//   coordinator is known waits on the pass's lock-free stack, which the
//   coordinator empties when it starts (on_coordinated). So a node reached
//   from two send functions waits for both and runs once with their sum,
//   and the task ends when every send function ran: a send function whose
//   gradient never comes keeps the pass waiting, as libtorch's does.
// - RecvRpcBackward nodes run inside the task, as any node: each sends its
//   gradients to its peer as soon as it is ready. The leaves' gradients go
//   through the leaf's pre-hooks into the context
//   (DistAutogradContext::accumulateGrad, what get_gradients returns) and
//   its post-hooks when the task ended, as libtorch's
//   DistAccumulateGradCaptureHook does.
// - When the task ended, the part waits for (initiator) or returns a
//   future of (the first arrival's RPC answer) every gradient RPC the pass
//   sent (libtorch's clearAndWaitForOutstandingRpcsAsync), then drops the
//   context's libtorch GraphTask.
// - An error of the task fails it with "Error on Node N: ..." (N: this
//   worker's id), libtorch's text: the initiator throws it, a remote part
//   answers its sender with it, so the caller's error names every worker
//   on the way. A gradient RPC that fails reports to the context's libtorch
//   GraphTask (libtorch's addOutstandingRpc), whose future's callback
//   fails the task (Engine::fail): its coordinator then stops waiting for
//   the gradients that will not come.
// - retain_graph is the first part's, as in libtorch: it keeps (or frees)
//   the saved variables of every node the task runs, and RecvRpcBackward
//   reads it from the context's libtorch GraphTask, which the first part
//   sets.
// - A task with a device (CUDA) goes to libtorch's DistEngine whole, with
//   the gradients that arrived for it meanwhile.
//
// Difference from libtorch: libtorch runs a pass that a gradient starts on
// an inter-op thread and answers the RPC later; here the agent thread that
// got the first gradient coordinates the task until it ended (one agent
// thread per context whose pass runs in this process; TensorPipe's pool has
// 16).
//
// Bookkeeping at the RPC boundary: the table of the passes running, by
// context, is guarded by one std::mutex, taken by the caller and RPC agent
// threads to list, look up and unlist a pass, never by an actor of the
// engine: the coordinator learns nothing from it, and what it shares with
// the arriving parts (Pass::coordinated, Pass::arrivals) is atomic.

namespace {

namespace dist = ::torch::distributed::autograd;
using ::torch::autograd::AccumulateGrad;
using ::torch::autograd::Edge;
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

/// A send function's gradient that came before its pass's coordinator was
/// known: a node of a lock-free stack (see Pass).
struct Arrival {
  std::shared_ptr<Node> send;
  Arrival* next = nullptr;
};

/// A context's pass in this process (see the Note), listed from its first
/// part's start until its task ended.
struct Pass {
  /// The bridge the pass runs on (written before the pass is listed).
  BridgeEngine* bridge = nullptr;
  /// Written by the part that starts the pass before the task runs; read
  /// by the parts that arrive once they saw `coordinated`.
  std::shared_ptr<TorchGraphTask> task;
  /// Set by the task's coordinator (on_coordinated), read by arriving parts.
  std::atomic<bool> coordinated{false};
  /// Pushed by arriving parts, taken (all at once) by whoever saw
  /// `coordinated` after its own push or store.
  std::atomic<Arrival*> arrivals{nullptr};
  /// The task has a device (CUDA): libtorch's DistEngine runs the pass.
  /// Under passes_mutex.
  bool on_stock = false;

  ~Pass() {
    for (Arrival* a = arrivals.exchange(nullptr); a != nullptr;)
      delete std::exchange(a, a->next);
  }
};
std::mutex passes_mutex;
std::unordered_map<int64_t, std::shared_ptr<Pass>> passes;

/// Sends every arrival taken from `pass` to its task's coordinator.
void hand_over(Pass& pass) {
  for (Arrival* a = pass.arrivals.exchange(nullptr); a != nullptr;) {
    std::unique_ptr<Arrival> taken(std::exchange(a, a->next));
    pass.bridge->engine().add_root(*pass.task, pass.task->later_root(std::move(taken->send)));
  }
}

/// A gradient came for send function `send` of a running pass: it becomes a
/// ready root of the pass's task, by message once the coordinator is known.
void arrive(Pass& pass, std::shared_ptr<Node> send) {
  auto* a = new Arrival{std::move(send), pass.arrivals.load()};
  while (!pass.arrivals.compare_exchange_weak(a->next, a)) {
  }
  if (pass.coordinated.load())
    hand_over(pass);
}

/// Fails `pass`'s task with `error` (a gradient RPC it sent failed): its
/// coordinator stops waiting for the send functions' gradients.
void fail(Pass& pass, std::exception_ptr error) {
  if (pass.coordinated.load())
    pass.bridge->engine().fail(*pass.task, std::move(error));
  else
    pass.task->set_error(std::move(error));
}

/// Lists the pass of `context_id` unless one runs: returns it, or null with
/// `running` set to the one that runs.
std::shared_ptr<Pass> list_pass(int64_t context_id, std::shared_ptr<Pass>& running) {
  std::lock_guard<std::mutex> lock(passes_mutex);
  auto& slot = passes[context_id];
  if (slot) {
    running = slot;
    return nullptr;
  }
  slot = std::make_shared<Pass>();
  slot->bridge = dynamic_cast<BridgeEngine*>(&::torch::autograd::Engine::get_default_engine());
  return slot;
}

/// Unlists `pass` of `context_id`.
void end_pass(int64_t context_id, const std::shared_ptr<Pass>& pass) {
  std::lock_guard<std::mutex> lock(passes_mutex);
  if (auto it = passes.find(context_id); it != passes.end() && it->second == pass)
    passes.erase(it);
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

/// Gives `ctx` the libtorch GraphTask its RecvRpcBackward nodes read
/// keep_graph_ from; a gradient RPC that fails reports to it, and so fails
/// `pass`.
void give_stock_graph_task(dist::DistAutogradContext& ctx, const std::shared_ptr<Pass>& pass,
                           bool keep_graph) {
  auto stock_task = std::make_shared<GraphTask>(keep_graph, /*grad_mode=*/false,
                                                /*reentrant_depth=*/0, nullptr,
                                                /*exit_on_error=*/true);
  std::weak_ptr<Pass> weak = pass;
  stock_task->future_result_->addCallback([weak](Future& f) {
    if (auto p = weak.lock(); p && f.hasError())
      fail(*p, f.exception_ptr());
  });
  ctx.clearOutstandingRpcs();
  ctx.resetGraphTask();
  ctx.setGraphTask(std::move(stock_task));
}

/// Runs this process's pass of `ctx` (`pass`, listed) on the actor engine
/// until its task ended: from `root` with `grads` (the initiator), or from
/// send function `arrived` (see the Note). Returns false when the task has
/// a device: the caller hands the pass to libtorch's DistEngine.
bool run_pass(const ContextPtr& ctx, const std::shared_ptr<Pass>& pass, const Edge* root,
              variable_list&& grads, const Node* arrived, bool keep_graph) {
  counters().distributed_parts.fetch_add(1, std::memory_order_relaxed);
  edge_list reach;
  for (const auto& entry : ctx->sendFunctions())
    reach.emplace_back(entry.second, 0);
  const std::size_t sends = reach.size();
  if (root)
    reach.push_back(*root);
  const Leaves leaves = leaves_of(reach);
  auto [task, first] = TorchGraphTask::create_open(
    root, std::move(grads), std::span<const Edge>(reach.data(), sends), arrived,
    ExecuteOptions{keep_graph, /*create_graph=*/false, /*accumulate_grad=*/false},
    leaves.accumulate, leaves.recv);
  if (!task->devices().empty())
    return false;
  pass->task = task;
  give_stock_graph_task(*ctx, pass, keep_graph);
  task->on_coordinated = [raw = pass.get()] {
    raw->coordinated.store(true);
    try {
      hand_over(*raw);
    } catch (...) {
      raw->task->set_error(std::current_exception());
    }
  };
  variable_list got =
    pass->bridge->run_task(task, std::move(first), reach, leaves.accumulate, keep_graph);
  for (std::size_t i = 0; i < leaves.accumulate.size(); ++i)
    accumulate_into(*ctx, static_cast<AccumulateGrad&>(*leaves.accumulate[i].function),
                    std::move(got[i]));
  return true;
}

/// Hands a listed pass that has a device, and the gradients that arrived
/// for it meanwhile, to libtorch's DistEngine.
void hand_to_stock(dist::DistEngine* self, const ContextPtr& ctx, Pass& pass, bool retain_graph) {
  {
    std::lock_guard<std::mutex> lock(passes_mutex);
    pass.on_stock = true;
  }
  for (Arrival* a = pass.arrivals.exchange(nullptr); a != nullptr;) {
    std::unique_ptr<Arrival> taken(std::exchange(a, a->next));
    stock<SendFn>(stock_send)(
      self, ctx, std::static_pointer_cast<dist::SendRpcBackward>(taken->send), retain_graph);
  }
}

/// A future for the gradient RPCs `ctx`'s pass sent; the context's libtorch
/// GraphTask goes once they are answered (a failing RPC reports to it until
/// then, as in libtorch).
FuturePtr after_rpcs(const ContextPtr& ctx) {
  FuturePtr rpcs = ctx->clearAndWaitForOutstandingRpcsAsync();
  auto done = c10::make_intrusive<Future>(c10::NoneType::get());
  rpcs->addCallback([ctx, done](Future& f) {
    ctx->resetGraphTask();
    if (f.hasError())
      done->setError(f.exception_ptr());
    else
      done->markCompleted();
  });
  return done;
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
  // Several roots hang below libtorch's GraphRoot, as in its DistEngine.
  const Edge root = edges.size() == 1
                      ? edges[0]
                      : Edge(std::make_shared<::torch::autograd::GraphRoot>(edges, grads), 0);
  std::shared_ptr<Pass> running;
  std::shared_ptr<Pass> pass = list_pass(context_id, running);
  TORCH_CHECK(pass, "dist_autograd.backward: a backward pass of context ", context_id,
              " is already running in this process");
  try {
    if (!run_pass(ctx, pass, &root, std::move(grads), nullptr, retain_graph)) {
      hand_to_stock(self, ctx, *pass, retain_graph);
      stock<ExecuteFn>(stock_execute)(self, context_id, roots, retain_graph);
      end_pass(context_id, pass);
      return;
    }
  } catch (const std::exception& e) {
    end_pass(context_id, pass);
    ctx->resetGraphTask();
    throw c10::Error(on_this_node(e), "");
  }
  end_pass(context_id, pass);
  after_rpcs(ctx)->waitAndThrow();
}

FuturePtr execute_send_on_actors(dist::DistEngine* self, const ContextPtr& ctx,
                                 const std::shared_ptr<dist::SendRpcBackward>& send,
                                 bool retain_graph) {
  if (!actorgrad::torch::installed())
    return stock<SendFn>(stock_send)(self, ctx, send, retain_graph);
  std::shared_ptr<Pass> running;
  std::shared_ptr<Pass> pass = list_pass(ctx->contextId(), running);
  try {
    if (!pass) {
      bool on_stock = false;
      {
        std::lock_guard<std::mutex> lock(passes_mutex);
        on_stock = running->on_stock;
      }
      if (on_stock)
        return stock<SendFn>(stock_send)(self, ctx, send, retain_graph);
      arrive(*running, send); // libtorch answers it at once, too
      auto done = c10::make_intrusive<Future>(c10::NoneType::get());
      done->markCompleted();
      return done;
    }
    if (!run_pass(ctx, pass, nullptr, {}, send.get(), retain_graph)) {
      hand_to_stock(self, ctx, *pass, retain_graph);
      FuturePtr f = stock<SendFn>(stock_send)(self, ctx, send, retain_graph);
      end_pass(ctx->contextId(), pass);
      return f;
    }
  } catch (const std::exception& e) {
    if (pass) {
      end_pass(ctx->contextId(), pass);
      ctx->resetGraphTask();
    }
    auto failed = c10::make_intrusive<Future>(c10::NoneType::get());
    failed->setError(std::make_exception_ptr(c10::Error(on_this_node(e), "")));
    return failed;
  }
  end_pass(ctx->contextId(), pass);
  return after_rpcs(ctx);
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
