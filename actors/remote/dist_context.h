#pragma once
/// @file dist_context.h
/// Distributed autograd's user API: contexts, remote calls, the backward
/// pass across processes and the gradients it leaves on each of them
/// (PyTorch's torch.distributed.autograd, FAST mode).
///
/// ```
/// remote::Runtime rt;
/// auto w = rt.connect("127.0.0.1", port);
/// w.create_param("W", Tensor::randn({4, 3}, 1));
/// {
///   remote::DistContext ctx(rt);
///   auto h = remote::remote_call(ctx, w, "linear", {x}, {{"W"}})[0];
///   auto loss = mean(mul(h, h));
///   remote::dist_backward(ctx, {loss});
///   auto grads = remote::get_gradients(ctx);
///   Tensor gW = grads.remote_grad(w, "W");
/// } // released on every worker it touched
/// ```

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "actorgrad/actors/remote/remote_ops.h"
#include "actorgrad/actors/remote/runtime.h"

namespace actorgrad::remote {

/// One distributed forward + backward (PyTorch's dist_autograd.context()).
/// It owns the remote parts of the graph: each worker it touched keeps its
/// part (and the gradients of its leaves) until the context is released.
///
/// Not thread-safe: use a context from one thread at a time (several
/// contexts may be used from several threads at once).
class DistContext {
public:
  /// A new context with an id unique across processes.
  explicit DistContext(Runtime& runtime);
  /// Releases it (see release).
  ~DistContext();
  DistContext(const DistContext&) = delete;
  DistContext& operator=(const DistContext&) = delete;

  /// The context id (Runtime::next_context_id).
  std::uint64_t id() const { return id_; }
  Runtime& runtime() const { return *runtime_; }
  /// The workers this context has run ops on.
  const std::vector<RemoteWorker>& workers() const { return workers_; }
  /// Drops the context on every worker it touched and on this process:
  /// graph parts, send nodes, gradients, requests in flight. Waits for each
  /// worker's acknowledgement, at most min(timeout, 2 s) each (a dead worker
  /// holds nothing). Idempotent; later use of the context is an error.
  void release();
  /// Whether release() ran.
  bool released() const { return released_; }

  /// Next id for a send node recorded on this process (used by remote_call).
  std::uint64_t next_send_id() { return ++send_counter_; }
  /// Records that `worker` holds a part of this context.
  void touch(const RemoteWorker& worker);

private:
  Runtime* runtime_;
  std::uint64_t id_;
  std::uint64_t send_counter_ = 0;
  std::vector<RemoteWorker> workers_;
  bool released_ = false;
};

/// Runs forward op `op` (remote_ops.h) on `worker` with `args` and returns
/// its outputs. Each argument that requires grad records a send node here
/// and a receive node on the worker; each output that requires grad
/// records a send node on the worker and a receive node here, so a later
/// dist_backward crosses to the worker and back. Tensors travel as raw
/// bytes. Throws DistError naming the worker and the op on failure (unknown
/// op or parameter, bad shapes, no reply within the timeout).
variable_list remote_call(DistContext& ctx, const RemoteWorker& worker, const std::string& op,
                          const variable_list& args, const OpAttrs& attrs = {});

/// The backward pass of `roots` across every process the context touched
/// (like actorgrad::backward, with `grad_tensors` optional for scalar
/// roots). Leaf gradients are accumulated into the context on each
/// process, not into `.grad`; read them with get_gradients. The graph is
/// retained until the context is released, so it may be called again.
/// Returns when every remote part it caused is done. Throws DistError
/// naming the worker (and, in anomaly mode, the node that produced NaN)
/// when a part fails, a worker dies or the connection drops (at once), or a
/// worker gives no reply within the runtime's timeout: never hangs.
void dist_backward(DistContext& ctx, const variable_list& roots,
                   const variable_list& grad_tensors = {});

/// The gradients a context accumulated, on this process and on each worker.
struct ContextGradients {
  /// This process's leaves and their gradients.
  std::vector<std::pair<Tensor, Tensor>> local;
  /// Worker name (`host:port`) -> parameter name -> gradient.
  std::map<std::string, std::map<std::string, Tensor>> remote;
  /// The gradient of local leaf `leaf` (undefined if it got none).
  Tensor local_grad(const Tensor& leaf) const;
  /// The gradient of parameter `param` of `worker` (undefined if none).
  Tensor remote_grad(const RemoteWorker& worker, const std::string& param) const;
};

/// Collects the gradients of `ctx` from this process and every worker it
/// touched (PyTorch's get_gradients, extended to every worker). Throws
/// DistError naming a worker that cannot answer.
ContextGradients get_gradients(DistContext& ctx);

} // namespace actorgrad::remote
