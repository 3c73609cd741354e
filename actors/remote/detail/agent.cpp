#include "actorgrad/actors/remote/detail/agent.h"

#include <random>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/system_messages.hpp>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/remote/detail/agent_state.h"
#include "actorgrad/actors/remote/detail/errors.h"
#include "actorgrad/actors/remote/detail/local_messages.h"
#include "actorgrad/actors/remote/detail/send.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/version.h"

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
// sends each RecvBackward's gradient as a RemoteGrad to the agent owning
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
// graph part, its send nodes and its gradients. An agent told to stop
// (Runtime::shutdown) fails the requests it still answers for before it
// exits; one busy in a local pass cannot, and its callers see it go down.
//
// Note [Flows between processes]
// While the process's Engine records (Engine::start_recording), the agent
// reports each RemoteGrad it sends or receives and each successful Ack
// it sends or receives to the recording (EngineObserver::remote_message):
// one event on its track ("distributed agent"), naming the peer and the
// local pass the gradient came from or started. For a trace merge
// (tools/trace/detail/merge.h) to pair a send in one file with its receipt in
// another, both must record the same number: the sender draws a flow id
// for each RemoteGrad and sends it along (RemoteGrad::flow), the
// receiver records it, and the Ack is recorded under the same id by the
// side that sends it and the side that receives it. A flow id is the
// agent's counter, started at a random 64-bit value, so the ids of two
// processes that send n each overlap only if their starts fall within n of
// each other (odds about 2n / 2^64). Only successful Acks are
// recorded: an error reply, a timeout or a lost peer leaves the request's
// send unpaired, which the trace shows as a message never received.

namespace actorgrad::remote::detail {

std::string ctx_str(std::uint64_t id) { return "distributed context " + std::to_string(id); }

void log(Self self, LogLevel level, const std::string& text) {
  if (self->state.config.log)
    self->state.config.log(level, text);
}

void monitor_once(Self self, const caf::actor& peer) {
  if (self->state.monitored.insert(peer.address()).second)
    self->monitor(peer);
}

void deliver(Self self, std::uint64_t parent_id, std::string error) {
  auto it = self->state.parents.find(parent_id);
  if (it == self->state.parents.end())
    return;
  const Answering& a = it->second.answering;
  if (error.empty() && a.flow != 0)
    report(self, true, trace::MessageKind::remote_ack, a.flow, a.graph_task, a.peer);
  it->second.promise.deliver(Ack{std::move(error)});
  self->state.parents.erase(it);
}

void report(Self self, bool sent, trace::MessageKind kind, std::uint64_t flow,
            std::uint64_t graph_task, const std::string& peer,
            std::chrono::steady_clock::time_point at) {
  Engine* engine = self->state.config.engine;
  if (!engine)
    return;
  if (auto observer = engine->observer())
    observer->remote_message(self->state.observed, {sent, kind, flow, graph_task, peer, at});
}

namespace {

/// A nested request finished (reply, error, timeout or peer down).
void finish_nested(Self self, std::uint64_t nested_id, std::string error) {
  auto it = self->state.nested.find(nested_id);
  if (it == self->state.nested.end())
    return;
  if (error.empty())
    report(self, false, trace::MessageKind::remote_ack, it->second.flow, it->second.graph_task,
           it->second.peer_name);
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

/// Adds a local pass's leaf gradients into the context.
void accumulate(ContextState& ctx, std::vector<LocalStep::Leaf>& leaves) {
  NoGradGuard no_grad;
  for (auto& leaf : leaves) {
    auto [it, fresh] = ctx.grads.try_emplace(leaf.accumulator.get(), leaf);
    if (!fresh)
      it->second.grad = add(it->second.grad, leaf.grad);
  }
}

} // namespace

void launch(Self self, std::uint64_t context_id, LocalStep step, caf::response_promise promise,
            bool anomaly, Answering answering) {
  auto& st = self->state;
  accumulate(st.contexts[context_id], step.leaves);
  const std::uint64_t parent_id = st.next_id++;
  st.parents.emplace(
    parent_id, Parent{context_id, std::move(promise), step.outgoing.size(), std::move(answering)});
  if (step.outgoing.empty())
    return deliver(self, parent_id, {});
  for (auto& out : step.outgoing) {
    const std::uint64_t nested_id = st.next_id++;
    std::uint64_t flow = st.next_flow++;
    if (flow == 0)
      flow = st.next_flow++;
    const caf::actor& peer = out.recv->peer();
    std::string peer_name = out.recv->peer_name();
    st.nested.emplace(
      nested_id, Nested{parent_id, peer.address(), peer_name, context_id, flow, step.graph_task});
    if (!peer) {
      finish_nested(self, nested_id, peer_name + ": no handle to send the gradient to");
      continue;
    }
    monitor_once(self, peer);
    report(self, true, trace::MessageKind::remote_grad, flow, step.graph_task, peer_name);
    auto timeout = st.config.timeout;
    request_from(self, peer, timeout,
                 RemoteGrad{context_id, out.recv->peer_send_id(), WireTensor(out.grad), anomaly,
                            flow, st.config.name})
      .then([=](Ack& ack) { finish_nested(self, nested_id, std::move(ack.error)); },
            [=](caf::error& e) {
              finish_nested(self, nested_id, peer_name + ": " + describe(e, timeout));
            });
  }
}

namespace {

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

/// A peer went down: fail what waited on it, drop what it created.
void peer_down(Self self, const caf::down_msg& dm) {
  auto& st = self->state;
  st.monitored.erase(dm.source);
  auto [wb, we] = st.watches.equal_range(dm.source);
  for (auto w = wb; w != we; ++w)
    w->second->store(false, std::memory_order_release);
  st.watches.erase(dm.source);
  const std::string why = describe_exit(dm.reason);
  if (auto c = st.callers.find(dm.source); c != st.callers.end()) {
    log(self, LogLevel::info, "disconnected: " + c->second + " (" + why + ")");
    st.callers.erase(c);
  }
  std::vector<std::pair<std::uint64_t, std::string>> lost;
  for (auto& [id, n] : st.nested)
    if (n.peer == dm.source)
      lost.emplace_back(id, n.peer_name + " was lost during the backward of " +
                              ctx_str(n.context_id) + ": " + why);
  for (auto& [id, text] : lost) {
    log(self, LogLevel::warning, text);
    finish_nested(self, id, text);
  }
  std::vector<std::uint64_t> orphaned;
  for (auto& [id, ctx] : st.contexts)
    if (ctx.creator && ctx.creator == dm.source)
      orphaned.push_back(id);
  for (auto id : orphaned)
    drop_context(self, id, "was dropped: its caller went away");
}

/// A caller connected (Note [Protocol version] in protocol.h).
HelloReply hello(Self self, const Hello& req) {
  auto& st = self->state;
  const std::string who = "'" + req.name + "' on host " + req.host + " (actorgrad " +
                          req.software_version + ", protocol " +
                          std::to_string(req.protocol_version) + ")";
  HelloReply reply{{}, kProtocolVersion, ACTORGRAD_VERSION, st.config.name};
  if (req.protocol_version != kProtocolVersion) {
    reply.error = st.config.name + " speaks actorgrad protocol " +
                  std::to_string(kProtocolVersion) +
                  " (actorgrad " ACTORGRAD_VERSION "), the caller protocol " +
                  std::to_string(req.protocol_version);
    log(self, LogLevel::warning, "handshake refused: " + who + ": another protocol version");
    return reply;
  }
  if (req.agent && st.callers.emplace(req.agent.address(), "'" + req.name + "'").second) {
    monitor_once(self, req.agent);
    log(self, LogLevel::info, "connected: " + who);
  }
  return reply;
}

/// Runtime::shutdown: fail the requests this agent answers for, then exit.
void stop(Self self, const caf::exit_msg& msg) {
  std::vector<std::uint64_t> parents;
  for (auto& [id, p] : self->state.parents)
    parents.push_back(id);
  for (auto id : parents)
    deliver(self, id, self->state.config.name + " is shutting down");
  self->quit(msg.reason);
}

caf::behavior agent(Self self, AgentConfig config) {
  self->state.config = std::move(config);
  std::random_device rd;
  self->state.next_flow = std::uint64_t{rd()} << 32 | rd();
  self->set_down_handler([self](caf::down_msg& dm) { peer_down(self, dm); });
  self->set_exit_handler([self](caf::exit_msg& msg) { stop(self, msg); });
  return {
    [self](Hello& req) { return hello(self, req); },
    [self](ForwardRequest& req) { return forward(self, req); },
    [self](RemoteGrad& req) { return backward(self, req); },
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
      log(self, LogLevel::debug, "release: " + ctx_str(req.context_id));
      drop_context(self, req.context_id, "was released while its backward was running");
      return Ack{};
    },
    [self](StatsRequest&) -> StatsReply {
      auto& st = self->state;
      return {{st.contexts.size(), st.parents.size() + st.nested.size(), st.params.size()}};
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

} // namespace actorgrad::remote::detail
