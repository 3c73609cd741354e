#include "actors/remote/agent.h"

#include <cmath>
#include <exception>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>

#include "actors/remote/local_messages.h"
#include "actors/remote/protocol.h"
#include "actors/remote/remote_ops.h"
#include "libengine/autograd/graph_builder.h"
#include "libengine/autograd/grad_mode.h"
#include "libengine/ops.h"
#include "libengine/tensor/kernels.h"

// Note [Distributed backward]
// A remote call records a SendBackward on the process that sends a tensor
// requiring grad and a RecvBackward (the received tensor's grad_fn) on the
// process that receives it, as PyTorch's distributed autograd does. Each
// process's Agent keeps, per context, its send nodes (the roots of its
// graph parts, which keeps those parts alive) and the gradients of its
// leaves.
//
// A backward is a tree of requests. dist_backward runs the caller's local
// pass (run_local_step): leaves' gradients and the gradients reaching each
// RecvBackward are captured, not accumulated into .grad. It hands them to
// its agent (LocalRoot), which adds the leaf gradients into the context and
// sends each RecvBackward's gradient as a GradRequest to the agent owning
// the matching send node. That agent runs its local pass from the send
// node, and so on. An agent answers a request (Ack) only when its own pass
// and every request that pass sent have been answered, so the caller's
// LocalRoot is answered when every part of the backward it caused is done
// (PyTorch's FAST mode: no global dependency count, each request waits for
// the requests it caused).
//
// Note [Agent ownership]
// All per-context state of a process (send nodes, leaf gradients, requests
// in flight) is owned by its agent and touched only in its handlers, so it
// needs no lock. Local passes run inside the handler, on the agent's own
// (detached) thread; they do not wait for any reply, so an agent never
// blocks on another agent and request trees across processes cannot
// deadlock. Replies and down messages arrive between passes.
//
// Note [Failure]
// An agent monitors every peer it sends a request to. A peer that dies, or
// whose connection drops, produces a down message: each request to it in
// flight fails with an error naming the peer, and the first error of a
// request tree is answered at once (the rest of that tree is ignored when it
// arrives). A request that gets no reply within the timeout fails the same
// way. A worker also monitors the caller that created each context and drops
// the context when that caller goes away; ReleaseContext drops it
// explicitly. Dropping a context fails its requests in flight and frees its
// graph part, its send nodes and its gradients.

namespace actorgrad::remote {

namespace {

/// One process's part of a distributed context.
struct ContextState {
  /// The caller that created the context here (null on the caller itself).
  caf::actor_addr creator;
  /// Send nodes by id: the roots of this process's graph parts.
  std::unordered_map<std::uint64_t, std::shared_ptr<SendBackward>> sends;
  /// Gradients of this process's leaves, by AccumulateGrad node.
  std::unordered_map<const Node*, LocalStep::Leaf> grads;
  /// Next id for a send node recorded by this agent.
  std::uint64_t next_send_id = 1;
};

/// A request being handled: answered when `remaining` requests it sent are done.
struct Parent {
  std::uint64_t context_id;
  caf::response_promise promise;
  std::size_t remaining;
};

/// A request this agent sent on behalf of a Parent.
struct Nested {
  std::uint64_t parent;
  caf::actor_addr peer;
  std::string peer_name;
};

struct AgentState {
  AgentConfig config;
  std::unordered_map<std::uint64_t, ContextState> contexts;
  std::unordered_map<std::string, Tensor> params;
  std::unordered_map<std::uint64_t, Parent> parents;
  std::unordered_map<std::uint64_t, Nested> nested;
  std::unordered_set<caf::actor_addr> monitored;
  /// Liveness flags of connected workers (Note [Watching workers]).
  std::unordered_multimap<caf::actor_addr, std::shared_ptr<std::atomic<bool>>> watches;
  std::uint64_t next_id = 1;
  static inline const char* name = "actorgrad.agent";
};

using Self = caf::stateful_actor<AgentState>*;

std::string ctx_str(std::uint64_t id) { return "distributed context " + std::to_string(id); }

void monitor_once(Self self, const caf::actor& peer) {
  if (self->state.monitored.insert(peer.address()).second)
    self->monitor(peer);
}

/// Completes a parent request (first error wins; the parent is forgotten).
void deliver(Self self, std::uint64_t parent_id, std::string error) {
  auto it = self->state.parents.find(parent_id);
  if (it == self->state.parents.end())
    return;
  it->second.promise.deliver(Ack{std::move(error)});
  self->state.parents.erase(it);
}

/// A nested request finished (reply, error, timeout or peer down).
void finish_nested(Self self, std::uint64_t nested_id, std::string error) {
  auto it = self->state.nested.find(nested_id);
  if (it == self->state.nested.end())
    return;
  const std::uint64_t parent_id = it->second.parent;
  self->state.nested.erase(it);
  auto p = self->state.parents.find(parent_id);
  if (p == self->state.parents.end())
    return; // the parent already failed or its context was dropped
  if (!error.empty())
    return deliver(self, parent_id, std::move(error));
  if (--p->second.remaining == 0)
    deliver(self, parent_id, {});
}

std::string render_error(Self self, const caf::error& e, std::chrono::milliseconds timeout) {
  if (e == caf::sec::request_timeout)
    return "no reply within " + std::to_string(timeout.count()) +
           " ms (worker hung or connection lost)";
  if (e == caf::sec::request_receiver_down)
    return "the process is gone (connection lost)";
  return self->system().render(e);
}

/// Adds a local pass's leaf gradients into the context.
void accumulate(ContextState& ctx, std::vector<LocalStep::Leaf>& leaves) {
  NoGradGuard no_grad;
  for (auto& leaf : leaves) {
    auto [it, fresh] = ctx.grads.try_emplace(leaf.accumulator.get(), leaf);
    if (!fresh)
      it->second.grad = add(it->second.grad, leaf.grad);
  }
}

/// Records `step` in the context and sends its outgoing gradients; `promise`
/// is answered when all of them are (Note [Distributed backward]).
void launch(Self self, std::uint64_t context_id, LocalStep step, caf::response_promise promise,
            bool anomaly) {
  auto& st = self->state;
  accumulate(st.contexts[context_id], step.leaves);
  if (step.outgoing.empty()) {
    promise.deliver(Ack{});
    return;
  }
  const std::uint64_t parent_id = st.next_id++;
  st.parents.emplace(parent_id, Parent{context_id, std::move(promise), step.outgoing.size()});
  for (auto& out : step.outgoing) {
    const std::uint64_t nested_id = st.next_id++;
    const caf::actor& peer = out.recv->peer();
    std::string peer_name = out.recv->peer_name();
    st.nested.emplace(nested_id, Nested{parent_id, peer.address(), peer_name});
    if (!peer) {
      finish_nested(self, nested_id, peer_name + ": no handle to send the gradient to");
      continue;
    }
    monitor_once(self, peer);
    auto timeout = st.config.timeout;
    self
      ->request(peer, timeout,
                GradRequest{context_id, out.recv->peer_send_id(), WireTensor(out.grad), anomaly})
      .then([=](Ack& ack) { finish_nested(self, nested_id, std::move(ack.error)); },
            [=](caf::error& e) {
              finish_nested(self, nested_id, peer_name + ": " + render_error(self, e, timeout));
            });
  }
}

/// Forgets a context: fails its requests in flight, frees its graph part.
void drop_context(Self self, std::uint64_t context_id, const std::string& why) {
  auto& st = self->state;
  std::vector<std::uint64_t> doomed;
  for (auto& [id, p] : st.parents)
    if (p.context_id == context_id)
      doomed.push_back(id);
  for (auto id : doomed)
    deliver(self, id, st.config.name + ": " + ctx_str(context_id) + " " + why);
  for (auto it = st.nested.begin(); it != st.nested.end();)
    it = st.parents.count(it->second.parent) ? std::next(it) : st.nested.erase(it);
  st.contexts.erase(context_id);
}

std::string check_nan(const variable_list& outs, const std::string& op) {
  for (std::size_t i = 0; i < outs.size(); ++i)
    if (outs[i].defined() && kernels::any_nan(outs[i]))
      return "remote op '" + op + "' returned nan values in its " + std::to_string(i) +
             "th output";
  return {};
}

ForwardReply forward(Self self, ForwardRequest& req) {
  auto& st = self->state;
  const std::string where = st.config.name + ": remote op '" + req.op + "' (" +
                            ctx_str(req.context_id) + "): ";
  if (!req.origin)
    return {where + "the request names no caller", {}, {}};
  if (req.arg_send_ids.size() != req.args.size())
    return {where + std::to_string(req.args.size()) + " arguments but " +
              std::to_string(req.arg_send_ids.size()) + " send ids",
            {},
            {}};
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
    outs = run_remote_op(req.op, args, params,
                         OpAttrs{req.params, req.numbers, req.text}, st.config.test_ops);
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

caf::result<Ack> backward(Self self, GradRequest& req) {
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
  if (!g.defined() || g.shape() != meta.shape || g.dtype() != meta.dtype)
    return Ack{me + ": gradient for send node " + std::to_string(req.send_id) + " of " +
               ctx_str(req.context_id) + " is " + (g.defined() ? g.describe() : "undefined") +
               ", expected " + meta.describe()};
  LocalStep step;
  try {
    step = run_local_step(*st.config.executor, {Edge{send, 0}}, {g}, req.anomaly);
  } catch (const std::exception& e) {
    return Ack{me + ": backward of " + ctx_str(req.context_id) + " failed: " + e.what()};
  }
  auto promise = self->make_response_promise();
  launch(self, req.context_id, std::move(step), promise, req.anomaly);
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

caf::behavior agent(Self self, AgentConfig config) {
  self->state.config = std::move(config);
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    st.monitored.erase(dm.source);
    auto [wb, we] = st.watches.equal_range(dm.source);
    for (auto w = wb; w != we; ++w)
      w->second->store(false, std::memory_order_release);
    st.watches.erase(dm.source);
    std::vector<std::pair<std::uint64_t, std::string>> lost;
    for (auto& [id, n] : st.nested)
      if (n.peer == dm.source)
        lost.emplace_back(id, n.peer_name);
    for (auto& [id, name] : lost)
      finish_nested(self, id,
                    name + ": connection lost during backward (process died or network dropped: " +
                      self->system().render(dm.reason) + ")");
    std::vector<std::uint64_t> orphaned;
    for (auto& [id, ctx] : st.contexts)
      if (ctx.creator && ctx.creator == dm.source)
        orphaned.push_back(id);
    for (auto id : orphaned)
      drop_context(self, id, "was dropped: its caller went away");
  });
  return {
    [self](ForwardRequest& req) { return forward(self, req); },
    [self](GradRequest& req) { return backward(self, req); },
    [self](CreateParam& req) -> Ack {
      if (req.name.empty() || !req.value.tensor.defined())
        return Ack{self->state.config.name + ": create_param needs a name and a defined tensor"};
      NoGradGuard no_grad;
      Tensor p = clone(req.value.tensor.detach());
      p.set_requires_grad(true);
      self->state.params[req.name] = std::move(p);
      return Ack{};
    },
    [self](FetchParam& req) -> ParamReply {
      auto it = self->state.params.find(req.name);
      if (it == self->state.params.end())
        return {self->state.config.name + ": no parameter named '" + req.name + "'", {}};
      return {{}, WireTensor(it->second.detach())};
    },
    [self](GradientsRequest& req) { return gradients(self, req.context_id); },
    [self](ReleaseContext& req) -> Ack {
      drop_context(self, req.context_id, "was released while its backward was running");
      return Ack{};
    },
    [self](StatsRequest&) -> StatsReply {
      auto& st = self->state;
      return {st.contexts.size(), st.parents.size() + st.nested.size(), st.params.size()};
    },
    [self](LocalRegisterSend& msg) {
      self->state.contexts[msg.context_id].sends.emplace(msg.node->send_id(), std::move(msg.node));
    },
    [self](LocalRoot& msg) -> caf::result<Ack> {
      auto promise = self->make_response_promise();
      launch(self, msg.context_id, std::move(msg.step), promise, msg.anomaly);
      return promise;
    },
    [self](LocalGradients& msg) -> LocalGradientsReply {
      LocalGradientsReply reply;
      auto it = self->state.contexts.find(msg.context_id);
      if (it != self->state.contexts.end())
        for (auto& [node, leaf] : it->second.grads)
          reply.leaves.push_back(leaf);
      return reply;
    },
    [self](SetName& msg) { self->state.config.name = std::move(msg.name); },
    [self](Watch& msg) {
      if (!msg.worker)
        return;
      monitor_once(self, msg.worker);
      self->state.watches.emplace(msg.worker.address(), std::move(msg.alive));
    },
  };
}

} // namespace

caf::actor spawn_agent(caf::actor_system& system, AgentConfig config) {
  return system.spawn<caf::detached>(agent, std::move(config));
}

} // namespace actorgrad::remote
