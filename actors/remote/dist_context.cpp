#include "actorgrad/actors/remote/dist_context.h"

#include <algorithm>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/remote/detail/ask.h"
#include "actorgrad/actors/remote/detail/dist_nodes.h"
#include "actorgrad/actors/remote/detail/local_messages.h"
#include "actorgrad/actors/remote/detail/local_step.h"
#include "actorgrad/actors/remote/detail/send.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/engine/detail/call_args.h"

namespace actorgrad::remote {

namespace {

std::string ctx_str(const DistContext& ctx) {
  return "distributed context " + std::to_string(ctx.id());
}

void check_open(const DistContext& ctx, const char* api) {
  if (ctx.released())
    throw DistError(std::string(api) + ": " + ctx_str(ctx) + " was released");
}

/// How long the caller waits for its own agent to answer a backward: the
/// agent's requests time out after `timeout`, so this is a safety net only.
std::chrono::milliseconds local_wait(const Runtime& rt) {
  return rt.config().timeout + std::chrono::seconds(5);
}

} // namespace

DistContext::DistContext(Runtime& runtime) : runtime_(&runtime), id_(runtime.next_context_id()) {}

DistContext::~DistContext() {
  try {
    release();
  } catch (...) {
    // release() already tolerates dead workers; nothing else can go wrong
    // that a destructor could report.
  }
}

void DistContext::touch(const RemoteWorker& worker) {
  auto same = [&](const RemoteWorker& w) { return w.handle() == worker.handle(); };
  if (std::none_of(workers_.begin(), workers_.end(), same))
    workers_.push_back(worker);
}

void DistContext::release() {
  if (released_)
    return;
  released_ = true;
  auto wait =
    std::min<std::chrono::milliseconds>(runtime_->config().timeout, std::chrono::seconds(2));
  for (const auto& w : workers_) {
    if (!w.alive())
      continue; // a worker that is gone holds nothing of this context
    try {
      detail::ask<detail::Ack>(*runtime_, w.handle(), detail::ReleaseContext{id_}, wait,
                               "release on " + w.name());
    } catch (const DistError&) {
      // A worker that is gone holds nothing of this context.
    }
  }
  try {
    detail::ask<detail::Ack>(*runtime_, runtime_->agent(), detail::ReleaseContext{id_},
                             local_wait(*runtime_), "release on " + runtime_->name());
  } catch (const DistError&) {
  }
}

variable_list remote_call(DistContext& ctx, const RemoteWorker& worker, const std::string& op,
                          const variable_list& args, const OpAttrs& attrs) {
  check_open(ctx, "remote_call");
  Runtime& rt = ctx.runtime();
  const std::string what =
    "remote_call '" + op + "' on worker " + worker.name() + " (" + ctx_str(ctx) + ")";
  if (!worker.handle())
    throw DistError(what + ": not connected");
  worker.ensure_alive(what);
  detail::ForwardRequest req;
  req.context_id = ctx.id();
  req.op = op;
  req.params = attrs.params;
  req.numbers = attrs.numbers;
  req.text = attrs.text;
  req.anomaly = AnomalyMode::is_enabled();
  req.origin = rt.agent();
  req.origin_name = rt.name();
  const bool recording = GradMode::is_enabled();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Tensor& a = args[i];
    if (!a.defined())
      throw DistError(what + ": argument " + std::to_string(i) + " is undefined");
    std::uint64_t send_id = 0;
    if (recording && a.requires_grad()) {
      send_id = ctx.next_send_id();
      auto node = make_node<detail::SendBackward>(ctx.id(), send_id, a);
      // Registered before the request leaves, so it is known to the agent
      // before any gradient for it can come back.
      detail::tell(rt.agent(), detail::LocalRegisterSend{ctx.id(), std::move(node)});
    }
    req.args.emplace_back(a.detach());
    req.arg_send_ids.push_back(send_id);
  }
  ctx.touch(worker);
  auto reply = detail::ask<detail::ForwardReply>(rt, worker.handle(), std::move(req),
                                                 rt.config().timeout, what);
  if (!reply.error.empty())
    throw DistError("remote_call failed: " + reply.error);
  if (reply.output_send_ids.size() != reply.outputs.size())
    throw DistError(what + ": malformed reply (" + std::to_string(reply.outputs.size()) +
                    " outputs, " + std::to_string(reply.output_send_ids.size()) + " send ids)");
  variable_list outs;
  for (std::size_t i = 0; i < reply.outputs.size(); ++i) {
    Tensor t = reply.outputs[i].tensor.defined() ? reply.outputs[i].tensor.detach() : Tensor();
    if (t.defined() && reply.output_send_ids[i] != 0 && recording)
      set_history(t, make_node<detail::RecvBackward>(ctx.id(), worker.handle(), worker.name(),
                                                     reply.output_send_ids[i]));
    outs.push_back(std::move(t));
  }
  return outs;
}

void dist_backward(DistContext& ctx, const variable_list& roots,
                   const variable_list& grad_tensors) {
  check_open(ctx, "dist_backward");
  Runtime& rt = ctx.runtime();
  const std::string what = "dist_backward (" + ctx_str(ctx) + ")";
  actorgrad::detail::BackwardCall call;
  try {
    call = actorgrad::detail::make_backward_call(roots, grad_tensors, true, false, {});
  } catch (const std::exception& e) {
    throw DistError(what + ": " + e.what());
  }
  const bool anomaly = AnomalyMode::is_enabled();
  detail::LocalStep step;
  try {
    step = detail::run_local_step(rt.engine(), call.roots, std::move(call.root_grads), anomaly);
  } catch (const std::exception& e) {
    throw DistError(what + " failed on " + rt.name() + ": " + e.what());
  }
  auto ack = detail::ask<detail::Ack>(
    rt, rt.agent(), detail::LocalRoot{ctx.id(), std::move(step), anomaly}, local_wait(rt), what);
  if (!ack.error.empty())
    throw DistError(what + " failed: " + ack.error);
}

Tensor ContextGradients::local_grad(const Tensor& leaf) const {
  for (const auto& [l, g] : local)
    if (l.is_same(leaf))
      return g;
  return {};
}

Tensor ContextGradients::remote_grad(const RemoteWorker& worker, const std::string& param) const {
  auto w = remote.find(worker.name());
  if (w == remote.end())
    return {};
  auto p = w->second.find(param);
  return p == w->second.end() ? Tensor() : p->second;
}

ContextGradients get_gradients(DistContext& ctx) {
  check_open(ctx, "get_gradients");
  Runtime& rt = ctx.runtime();
  ContextGradients out;
  auto local =
    detail::ask<detail::LocalGradientsReply>(rt, rt.agent(), detail::LocalGradients{ctx.id()},
                                             local_wait(rt), "get_gradients on " + rt.name());
  for (auto& leaf : local.leaves)
    out.local.emplace_back(leaf.leaf, leaf.grad);
  for (const auto& w : ctx.workers()) {
    const std::string what = "get_gradients (" + ctx_str(ctx) + ") on worker " + w.name();
    w.ensure_alive(what);
    auto reply = detail::ask<detail::GradientsReply>(
      rt, w.handle(), detail::GradientsRequest{ctx.id()}, rt.config().timeout, what);
    if (!reply.error.empty())
      throw DistError(what + ": " + reply.error);
    auto& m = out.remote[w.name()];
    for (std::size_t i = 0; i < reply.names.size() && i < reply.grads.size(); ++i)
      m[reply.names[i]] = reply.grads[i].tensor;
  }
  return out;
}

} // namespace actorgrad::remote
