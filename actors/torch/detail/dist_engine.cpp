#include "actorgrad/actors/torch/detail/dist_engine.h"

#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/variable.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/torch/detail/bridge_engine.h"
#include "actorgrad/actors/torch/detail/dist_autograd_abi.h"
#include "actorgrad/actors/torch/detail/dist_pass.h"
#include "actorgrad/actors/torch/detail/dist_task.h"
#include "actorgrad/actors/torch/detail/plt_slots.h"
#include "actorgrad/actors/torch/install.h"

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
// What runs instead, in every process: libtorch's semantics, one task per
// context and process (Note [Roots that arrive later] in
// libengine/engine/detail/basic_graph_task_impl.h), a Pass (dist_pass.h).
// - Its first part (dist_autograd.backward in the initiator, whose roots
//   are checked as libtorch checks them; in a process the pass reaches by
//   RPC, the first gradient that arrives for one of the context's
//   SendRpcBackward nodes) lists the pass and builds one task whose
//   dependencies are counted from its roots and every send function of the
//   context (DistAutogradContext::sendFunctions), as libtorch's
//   computeDependencies does with its dummy root. The task captures each
//   AccumulateGrad and runs each RecvRpcBackward (libtorch's outputEdges and
//   needed_ marks), so the actor engine runs exactly the nodes that lead to
//   them; it runs as a call of the bridge engine (BridgeEngine::run_task).
// - Who coordinates it: in the initiator, the caller's thread, which blocks
//   as libtorch's execute does. In a process reached by RPC, a pooled
//   coordinator of the engine (Engine::run_on_coordinator: Note [Jobs that
//   wait outside the engine] in actors/detail/async_call.h), never the RPC
//   agent's thread, which returns at once with a future that completes when
//   the task ended and the RPCs it sent are answered, as libtorch's
//   executeSendFunctionAsync does (it runs the task on at::launch's pool).
//   Coordinating on the agent thread that got the first gradient was tried
//   and deadlocked PyTorch's test_async_dist_autograd (60 contexts from 3
//   processes on one worker held every agent thread of that worker waiting
//   for gradients only a free agent thread could take).
// - Every later gradient for a send function of the context (the RPC
//   agent's request callback, which stored the gradient in the node) finds
//   the pass listed and hands its send function to the task as a ready root,
//   by message to its coordinator (Engine::add_root; Pass::arrive), and is
//   answered at once, as in libtorch. So a node reached from two send
//   functions waits for both and runs once with their sum, and the task
//   ends when every send function ran: one whose gradient never comes keeps
//   the pass waiting, as libtorch's does.
// - RecvRpcBackward nodes run inside the task and send their gradients when
//   ready; retain_graph is the first part's, for every node and for
//   RecvRpcBackward (which reads it from the context's libtorch GraphTask,
//   set by the first part). Leaf gradients go through the leaf's pre-hooks
//   into the context (DistAutogradContext::accumulateGrad, what
//   get_gradients returns) and its post-hooks when the task ended, as
//   libtorch's DistAccumulateGradCaptureHook does; then the part waits for
//   (initiator) or returns a future of (the first gradient's RPC answer)
//   every gradient RPC the pass sent (clearAndWaitForOutstandingRpcsAsync),
//   and drops the context's libtorch GraphTask.
// - Failures. A gradient RPC that fails (a peer that died) reports to the
//   context's libtorch GraphTask (libtorch's addOutstandingRpc), whose
//   future's callback fails the task (Pass::fail, Engine::fail): the
//   coordinator stops waiting for gradients that will not come. A context
//   released (dist_autograd.context() left, in the initiator; its release
//   RPC elsewhere) while its task in this process still waits for a send
//   function's gradient destroys that libtorch GraphTask, and with it the
//   callback, whose guard fails the task too: the pooled coordinator is not
//   held for ever by a pass that an error elsewhere cut short (libtorch's
//   task then just stays unfinished; it holds no thread). A pooled job holds
//   the context weakly so that its release is seen. An error fails the pass
//   with "Error on Node N: ..." (N: this worker's id), libtorch's text: the
//   initiator throws it, a remote pass answers the first gradient's RPC with
//   it, so the caller's error names every worker on the way.
// - A task with a device (CUDA) goes to libtorch's DistEngine whole, with
//   the gradients that arrived for it meanwhile (hand_to_stock). One that
//   arrives while it goes is either queued before Pass::set_on_stock, and
//   taken with them, or refused by Pass::arrive after it, and handed to
//   libtorch by its RPC thread: both decide under the table's lock. (Before, the
//   check and the queueing were apart, and a gradient between them waited
//   for a task that never ran; found by reading, this path needs CUDA.)

namespace {

namespace dist = ::torch::distributed::autograd;
using ::torch::autograd::Edge;
using ::torch::autograd::edge_list;
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

/// libtorch's text for an error of this worker's part.
std::string on_this_node(const std::exception& e) {
  return "Error on Node " +
         std::to_string(dist::DistAutogradContainer::getInstance().getWorkerId()) + ": " + e.what();
}

/// Hands a listed pass that has a device, and the gradients that arrived
/// for it meanwhile, to libtorch's DistEngine.
void hand_to_stock(dist::DistEngine* self, const ContextPtr& ctx, Pass& pass, bool retain_graph) {
  pass.set_on_stock();
  for (auto& send : pass.take_arrivals())
    stock<SendFn>(stock_send)(self, ctx, std::static_pointer_cast<dist::SendRpcBackward>(send),
                              retain_graph);
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

/// `e` as an error of this worker's part.
std::exception_ptr error_here(const std::exception& e) {
  return std::make_exception_ptr(c10::Error(on_this_node(e), ""));
}

/// A future that failed with `e`, named as this worker's.
FuturePtr failed_here(const std::exception& e) {
  auto failed = c10::make_intrusive<Future>(c10::NoneType::get());
  failed->setError(error_here(e));
  return failed;
}

/// The job of a pooled coordinator that runs a remote pass (see the Note):
/// completes `done` as libtorch's executeSendFunctionAsync completes the
/// first gradient's future.
void run_remote_pass(std::exception_ptr not_started,
                     const std::weak_ptr<dist::DistAutogradContext>& weak_ctx, int64_t context_id,
                     const std::shared_ptr<Pass>& pass, OpenTask& open, const FuturePtr& done) {
  try {
    if (not_started)
      std::rethrow_exception(not_started);
    run_task(weak_ctx, *pass, open);
  } catch (const std::exception& e) {
    end_pass(context_id, pass);
    if (ContextPtr ctx = weak_ctx.lock())
      ctx->resetGraphTask();
    done->setError(error_here(e));
    return;
  }
  end_pass(context_id, pass);
  ContextPtr ctx = weak_ctx.lock();
  if (!ctx) {
    done->setError(error_here(std::runtime_error("distributed autograd context " +
                                                 std::to_string(context_id) + " was released")));
    return;
  }
  after_rpcs(ctx)->addCallback([done](Future& f) {
    if (f.hasError())
      done->setError(f.exception_ptr());
    else
      done->markCompleted();
  });
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
    std::unique_ptr<OpenTask> open =
      open_task(*ctx, pass, &root, std::move(grads), nullptr, retain_graph);
    if (!open) {
      hand_to_stock(self, ctx, *pass, retain_graph);
      stock<ExecuteFn>(stock_execute)(self, context_id, roots, retain_graph);
      end_pass(context_id, pass);
      return;
    }
    run_task(ctx, *pass, *open);
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
  const int64_t context_id = ctx->contextId();
  std::shared_ptr<Pass> pass;
  std::shared_ptr<OpenTask> open;
  try {
    std::shared_ptr<Pass> running;
    pass = list_pass(context_id, running);
    if (!pass) {
      if (!running->arrive(send)) // libtorch's DistEngine runs the pass
        return stock<SendFn>(stock_send)(self, ctx, send, retain_graph);
      // Answered at once, as libtorch does.
      auto done = c10::make_intrusive<Future>(c10::NoneType::get());
      done->markCompleted();
      return done;
    }
    open = open_task(*ctx, pass, nullptr, {}, send.get(), retain_graph);
    if (!open) {
      hand_to_stock(self, ctx, *pass, retain_graph);
      FuturePtr f = stock<SendFn>(stock_send)(self, ctx, send, retain_graph);
      end_pass(context_id, pass);
      return f;
    }
  } catch (const std::exception& e) {
    if (pass) {
      end_pass(context_id, pass);
      ctx->resetGraphTask();
    }
    return failed_here(e);
  }
  auto done = c10::make_intrusive<Future>(c10::NoneType::get());
  std::weak_ptr<dist::DistAutogradContext> weak_ctx = ctx;
  pass->bridge().engine().run_on_coordinator(
    [weak_ctx, context_id, pass, open, done](std::exception_ptr not_started) {
      run_remote_pass(std::move(not_started), weak_ctx, context_id, pass, *open, done);
    });
  return done;
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
