#include "actorgrad/actors/torch/dist_engine.h"

// Over 450 lines, for now: the two entry points that replace libtorch's
// DistEngine (a backward call, a gradient that arrives by RPC) share the
// per-context bookkeeping and the Note that explains both, which libtorch
// keeps in one file too (dist_engine.cpp). The pass bookkeeping (Pass,
// arrive, hand_over) is the part to move out next.

// NOT-SCHEDULING-PATH: the one mutex here guards the distributed contexts'
// bookkeeping at the RPC boundary (Note [Distributed autograd on actors]):
// it is held for a table update or inside a RecvRpcBackward node's call, as
// libtorch's own nodes hold theirs, by caller and RPC agent threads, never
// by an actor of the engine, nor while one waits or dispatches.

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
// What runs instead:
// - In the initiator's process, libtorch's semantics: one task per context
//   (Note [Roots that arrive later] in
//   libengine/engine/detail/basic_graph_task_impl.h).
//   dist_autograd.backward checks the roots as libtorch does, lists the
//   pass and builds one task whose dependencies are counted from the roots
//   and every send function of the context (DistAutogradContext::
//   sendFunctions), as libtorch's computeDependencies does with its dummy
//   root. It captures each AccumulateGrad and runs each RecvRpcBackward
//   (libtorch's outputEdges and needed_ marks), so the actor engine runs
//   exactly the nodes that lead to them; it runs as a call of the bridge
//   engine (BridgeEngine::run_task), the caller's thread coordinating it,
//   which blocks as libtorch's execute does. Each gradient that comes back
//   for one of the context's send functions (the RPC agent's request
//   callback, which stored it in the node) finds the pass listed and hands
//   its send function to the task as a ready root, by message to the
//   coordinator (Engine::add_root), and is answered at once, as in libtorch;
//   one that comes before the coordinator is known waits on the pass's
//   lock-free stack, which the coordinator empties when it starts
//   (on_coordinated). So a node reached from two send functions waits for
//   both and runs once with their sum, and the task ends when every send
//   function ran: one whose gradient never comes keeps the call waiting,
//   as libtorch's does. RecvRpcBackward nodes run inside the task and send
//   their gradients when ready; retain_graph is the call's, for every node
//   and for RecvRpcBackward (which reads it from the context's libtorch
//   GraphTask). Leaf gradients go through the leaf's pre-hooks into the
//   context (DistAutogradContext::accumulateGrad, what get_gradients
//   returns) and its post-hooks when the task ended, as libtorch's
//   DistAccumulateGradCaptureHook does; then the call waits for every
//   gradient RPC the pass sent (clearAndWaitForOutstandingRpcsAsync). A
//   gradient RPC that fails (a peer that died) reports to the context's
//   libtorch GraphTask (libtorch's addOutstandingRpc), whose future's
//   callback fails the task (Engine::fail): the coordinator stops waiting
//   for gradients that will not come. A task with a device (CUDA) goes to
//   libtorch's DistEngine whole, with the gradients that came meanwhile.
// - In a process the pass reaches by RPC, each arriving gradient runs a
//   part: the send function returns it, and a part runs from the node's
//   next edges with it, on the agent's thread as a synchronous call of the
//   actor engine whose outputs are the leaves (each AccumulateGrad, every
//   input of each RecvRpcBackward); leaf gradients go into the context as
//   above and each RecvRpcBackward is called with its gradients once the
//   part finished. The future returned to the agent, which answers the
//   sender with it, completes when the RPCs of the part are answered; the
//   part never waits for another process, so no agent thread blocks on one.
//   Not one task per context here: its coordinator would be the agent
//   thread that got the first gradient, waiting for the others, and PyTorch's
//   test_async_dist_autograd (60 contexts from 3 processes on one worker)
//   then holds every agent thread of that worker waiting for gradients only
//   a free agent thread can take: a deadlock (it timed out at 300 s). One
//   task per context there needs a coordinator that is no agent thread (a
//   pooled coordinator of the engine, as backward_async has; not done).
// - An error fails the call or part with "Error on Node N: ..." (N: this
//   worker's id), libtorch's text: the initiator throws it, a remote part
//   answers its sender with it, so the caller's error names every worker
//   on the way.
//
// Difference from libtorch, in processes a pass reaches by RPC only: each
// arriving gradient runs its own part, so a node reached there from
// several send functions runs once per arrival (correct by linearity; with
// retain_graph=False its second run fails as a second backward through a
// freed graph would), and a RecvRpcBackward sends once its part has
// finished rather than when it becomes ready. A graph whose remote parts
// are reached through one send function each, the common model-parallel
// case, runs the same nodes on the same gradients in the same order as
// libtorch, so its gradients are bitwise libtorch's.
//
// Bookkeeping at the RPC boundary: the table of the initiators' passes
// and the parts running, by context, is guarded by one std::mutex, taken
// by the caller and RPC agent threads to list, look up and unlist, and
// around each RecvRpcBackward call of a part (which queues its RPC and
// returns), so that a part hands over its own RPCs only (libtorch only
// lets a context hand over all its RPCs at once); never by an actor of the
// engine: what the coordinator shares with arriving gradients
// (Pass::coordinated, Pass::arrivals) is atomic.

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

/// Lists the pass of `context_id` unless one runs (then null).
std::shared_ptr<Pass> list_pass(int64_t context_id) {
  std::lock_guard<std::mutex> lock(passes_mutex);
  auto& slot = passes[context_id];
  if (slot)
    return nullptr;
  BridgeEngine* bridge = installed_bridge_engine();
  TORCH_CHECK(bridge, "actorgrad was uninstalled while a distributed backward pass started");
  slot = std::make_shared<Pass>();
  slot->bridge = bridge;
  return slot;
}

/// The pass of `context_id` listed in this process (null: none); whether
/// libtorch's DistEngine runs it in `on_stock`.
std::shared_ptr<Pass> find_pass(int64_t context_id, bool& on_stock) {
  std::lock_guard<std::mutex> lock(passes_mutex);
  auto it = passes.find(context_id);
  if (it == passes.end())
    return nullptr;
  on_stock = it->second->on_stock;
  return it->second;
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

/// A context's parts in a process that a pass reaches by RPC (see the
/// Note), from the first part's start until the RPCs of the last are
/// answered. Under passes_mutex.
struct ContextParts {
  int running = 0;
  /// Counts the times a part found none running (told apart so that the
  /// end of an earlier group does not reset a later group's GraphTask).
  std::uint64_t group = 0;
};
std::unordered_map<int64_t, ContextParts> parts_by_context;

/// Starts a part of `ctx`: the first of a group gives the context a libtorch
/// GraphTask keeping the graph as `keep_graph` says.
void enter_part(dist::DistAutogradContext& ctx, bool keep_graph) {
  std::lock_guard<std::mutex> lock(passes_mutex);
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
/// of a context is added under passes_mutex, so the context hands over
/// exactly this one.
FuturePtr send_to_peer(dist::DistAutogradContext& ctx, Node& recv, variable_list&& grads) {
  std::lock_guard<std::mutex> lock(passes_mutex);
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
    std::lock_guard<std::mutex> lock(passes_mutex);
    ContextParts& parts = parts_by_context.at(ctx->contextId());
    last = --parts.running == 0;
    group = parts.group;
  }
  FuturePtr joined = join(std::move(sent));
  if (last)
    joined->addCallback([ctx, group](Future&) {
      std::lock_guard<std::mutex> lock(passes_mutex);
      auto it = parts_by_context.find(ctx->contextId());
      if (it != parts_by_context.end() && it->second.running == 0 && it->second.group == group) {
        ctx->resetGraphTask();
        parts_by_context.erase(it);
      }
    });
  return joined;
}

/// Runs a part of `ctx` in a process a pass reaches by RPC: from the next
/// edges of send function `send_fn`, with the gradients it received, as one
/// call of the bridge engine whose outputs are the leaves (each
/// AccumulateGrad, every input of each RecvRpcBackward); then each leaf's
/// gradient goes into the context and each RecvRpcBackward is called.
/// Adds the RPCs it sends to `sent`.
void run_part(dist::DistAutogradContext& ctx, dist::SendRpcBackward& send_fn, bool keep_graph,
              std::vector<FuturePtr>& sent) {
  counters().distributed_parts.fetch_add(1, std::memory_order_relaxed);
  variable_list received = send_fn(variable_list{}); // the gradients the RPC stored in it
  edge_list roots;
  variable_list grads;
  for (std::uint32_t i = 0; i < send_fn.num_outputs(); ++i)
    if (const auto& e = send_fn.next_edge(i); e.is_valid()) {
      roots.push_back(e);
      grads.push_back(std::move(received[i]));
    }
  const Leaves found = leaves_of(roots);
  edge_list leaves = found.accumulate;
  for (const auto& r : found.recv)
    for (std::uint32_t i = 0; i < r.function->num_inputs(); ++i)
      leaves.emplace_back(r.function, i);
  if (leaves.empty())
    return;
  // The installed bridge, not libtorch's default engine: under the preload
  // library torch's Python module, imported later, puts its own stub there.
  BridgeEngine* bridge = installed_bridge_engine();
  TORCH_CHECK(bridge, "actorgrad was uninstalled while a distributed backward pass ran");
  variable_list got = bridge->execute(roots, grads, keep_graph, /*create_graph=*/false,
                                      /*accumulate_grad=*/false, leaves);
  grads.clear();
  std::size_t i = 0;
  for (; i < found.accumulate.size(); ++i)
    accumulate_into(ctx, static_cast<AccumulateGrad&>(*leaves[i].function), std::move(got[i]));
  while (i < leaves.size()) {
    Node& fn = *leaves[i].function;
    variable_list inputs;
    for (; i < leaves.size() && leaves[i].function.get() == &fn; ++i)
      inputs.push_back(std::move(got[i]));
    sent.push_back(send_to_peer(ctx, fn, std::move(inputs)));
  }
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

/// Runs the initiator's pass of `ctx` (`pass`, listed) on the actor engine
/// from `root` with `grads` until its task ended (see the Note). Returns
/// false when the task has a device: the caller hands the pass to
/// libtorch's DistEngine.
bool run_pass(const ContextPtr& ctx, const std::shared_ptr<Pass>& pass, const Edge& root,
              variable_list&& grads, bool keep_graph) {
  counters().distributed_parts.fetch_add(1, std::memory_order_relaxed);
  edge_list reach;
  for (const auto& entry : ctx->sendFunctions())
    reach.emplace_back(entry.second, 0);
  const std::size_t sends = reach.size();
  reach.push_back(root);
  const Leaves leaves = leaves_of(reach);
  auto [task, first] = TorchGraphTask::create_open(
    &root, std::move(grads), std::span<const Edge>(reach.data(), sends), /*arrived=*/nullptr,
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
  std::shared_ptr<Pass> pass = list_pass(context_id);
  TORCH_CHECK(pass, "dist_autograd.backward: a backward pass of context ", context_id,
              " is already running in this process");
  try {
    if (!run_pass(ctx, pass, root, std::move(grads), retain_graph)) {
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
  bool on_stock = false;
  if (std::shared_ptr<Pass> pass = find_pass(ctx->contextId(), on_stock)) {
    if (on_stock)
      return stock<SendFn>(stock_send)(self, ctx, send, retain_graph);
    auto done = c10::make_intrusive<Future>(c10::NoneType::get());
    try {
      arrive(*pass, send); // libtorch answers it at once, too
    } catch (const std::exception& e) {
      done->setError(std::make_exception_ptr(c10::Error(on_this_node(e), "")));
      return done;
    }
    done->markCompleted();
    return done;
  }
  enter_part(*ctx, retain_graph);
  std::vector<FuturePtr> sent;
  try {
    run_part(*ctx, *send, retain_graph, sent);
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
