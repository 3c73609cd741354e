#include "actorgrad/actors/remote/detail/agent_state.h"

#include <exception>

#include "actorgrad/actors/remote/remote_ops.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad::remote::detail {

namespace {

std::string check_nan(const variable_list& outs, const std::string& op) {
  for (std::size_t i = 0; i < outs.size(); ++i)
    if (outs[i].defined() && kernels::any_nan(outs[i]))
      return "remote op '" + op + "' returned nan values in its " + std::to_string(i) + "th output";
  return {};
}

} // namespace

ForwardReply forward(Self self, ForwardRequest& req) {
  auto& st = self->state;
  const std::string where =
    st.config.name + ": remote op '" + req.op + "' (" + ctx_str(req.context_id) + "): ";
  if (!req.origin)
    return {where + "the request names no caller", {}, {}};
  if (req.arg_send_ids.size() != req.args.size())
    return {where + std::to_string(req.args.size()) + " arguments but " +
              std::to_string(req.arg_send_ids.size()) + " send ids",
            {},
            {}};
  log(self, LogLevel::debug,
      "forward: remote op '" + req.op + "' for '" + req.origin_name + "' (" +
        ctx_str(req.context_id) + ")");
  auto [cit, fresh] = st.contexts.try_emplace(req.context_id);
  ContextState& ctx = cit->second;
  if (fresh)
    ctx.creator = req.origin.address();
  else if (ctx.creator != req.origin.address())
    return {where + "context id used by another caller", {}, {}};
  monitor_once(self, req.origin);
  variable_list params;
  for (const auto& name : req.params) {
    auto p = st.params.find(name);
    if (p == st.params.end())
      return {where + "no parameter named '" + name + "' on this worker", {}, {}};
    params.push_back(p->second);
  }
  variable_list args;
  for (std::size_t i = 0; i < req.args.size(); ++i) {
    if (!req.args[i].tensor.defined())
      return {where + "argument " + std::to_string(i) + " is undefined", {}, {}};
    // A fresh handle: a message that stayed in this process shares the
    // caller's tensor, whose autograd state must not change.
    Tensor t = req.args[i].tensor.detach();
    if (req.arg_send_ids[i] != 0)
      set_history(t, make_node<RecvBackward>(req.context_id, req.origin, req.origin_name,
                                             req.arg_send_ids[i]));
    args.push_back(std::move(t));
  }
  variable_list outs;
  try {
    AutoGradMode grad_mode(true);
    outs = run_remote_op(req.op, args, params, OpAttrs{req.params, req.numbers, req.text},
                         st.config.test_ops);
  } catch (const std::exception& e) {
    return {where + e.what(), {}, {}};
  }
  if (req.anomaly)
    if (auto nan = check_nan(outs, req.op); !nan.empty())
      return {st.config.name + ": " + nan, {}, {}};
  ForwardReply reply;
  for (auto& out : outs) {
    std::uint64_t send_id = 0;
    if (out.defined() && out.requires_grad()) {
      send_id = ctx.next_send_id++;
      ctx.sends.emplace(send_id, make_node<SendBackward>(req.context_id, send_id, out));
    }
    reply.outputs.emplace_back(out);
    reply.output_send_ids.push_back(send_id);
  }
  return reply;
}

caf::result<Ack> backward(Self self, RemoteGrad& req) {
  const auto received = std::chrono::steady_clock::now();
  auto& st = self->state;
  const std::string& me = st.config.name;
  auto cit = st.contexts.find(req.context_id);
  if (cit == st.contexts.end())
    return Ack{me + ": unknown " + ctx_str(req.context_id) + " (released, or never used here)"};
  auto sit = cit->second.sends.find(req.send_id);
  if (sit == cit->second.sends.end())
    return Ack{me + ": " + ctx_str(req.context_id) + " has no send node " +
               std::to_string(req.send_id)};
  const auto& send = sit->second;
  const Tensor& g = req.grad.tensor;
  const InputMetadata& meta = send->input_metadata(0);
  if (!g.defined() || !meta.has_shape(g.shape()) || g.dtype() != meta.dtype)
    return Ack{me + ": gradient for send node " + std::to_string(req.send_id) + " of " +
               ctx_str(req.context_id) + " is " + (g.defined() ? g.describe() : "undefined") +
               ", expected " + meta.describe()};
  log(self, LogLevel::debug,
      "backward: " + ctx_str(req.context_id) + " from send node " + std::to_string(req.send_id));
  LocalStep step;
  try {
    step = run_local_step(*st.config.executor, {Edge{send, 0}}, {g}, req.anomaly);
  } catch (const std::exception& e) {
    return Ack{me + ": backward of " + ctx_str(req.context_id) + " failed: " + e.what()};
  }
  if (req.flow != 0)
    report(self, false, trace::MessageKind::remote_grad, req.flow, step.graph_task, req.sender,
           received);
  auto promise = self->make_response_promise();
  launch(self, req.context_id, std::move(step), promise, req.anomaly,
         {req.flow, step.graph_task, req.sender});
  return promise;
}

GradientsReply gradients(Self self, std::uint64_t context_id) {
  auto& st = self->state;
  auto cit = st.contexts.find(context_id);
  if (cit == st.contexts.end())
    return {st.config.name + ": unknown " + ctx_str(context_id), {}, {}};
  GradientsReply reply;
  for (auto& [node, leaf] : cit->second.grads) {
    std::string name = "<unnamed leaf " + leaf.leaf.describe() + ">";
    for (auto& [pname, p] : st.params)
      if (p.is_same(leaf.leaf))
        name = pname;
    reply.names.push_back(std::move(name));
    reply.grads.emplace_back(leaf.grad);
  }
  return reply;
}

} // namespace actorgrad::remote::detail
