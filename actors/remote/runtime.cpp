#include "actorgrad/actors/remote/runtime.h"

#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/after.hpp>
#include <caf/exit_reason.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/remote/detail/agent.h"
#include "actorgrad/actors/remote/detail/ask.h"
#include "actorgrad/actors/remote/detail/errors.h"
#include "actorgrad/actors/remote/detail/local_messages.h"
#include "actorgrad/actors/remote/detail/send.h"
#include "actorgrad/version.h"

namespace actorgrad::remote {

namespace {

std::unique_ptr<caf::actor_system_config> make_config(const RuntimeConfig& config) {
  auto cfg = std::make_unique<caf::actor_system_config>();
  cfg->set("scheduler.max-threads", config.engine.scheduler_threads);
  // CAF's network layer runs on its own multiplexer thread; messages from
  // the network are enqueued to the (detached) agent from there.
  detail::register_remote_types(*cfg);
  // Deserialize incoming messages on the middleman's own thread rather than
  // on BASP workers run by the scheduler: one thread hop less per message.
  // On loopback (bench/bench_remote.cpp, 2-core shared VM, one run each)
  // the small round trip went from 380 to 130 us and 4 MiB tensors from
  // 630 to 950 MB/s; the VM is noisy, see bench/RESULTS.md.
  cfg->set("middleman.workers", size_t{0});
  return cfg;
}

std::uint64_t random_tag() {
  std::random_device rd;
  std::uint64_t tag = 0;
  while (tag == 0)
    tag =
      (static_cast<std::uint64_t>(rd()) ^ (static_cast<std::uint64_t>(::getpid()) << 7)) & 0xFFFF;
  return tag;
}

} // namespace

Runtime::Runtime(RuntimeConfig config)
  : config_(std::move(config)), system_config_(make_config(config_)),
    system_(std::make_unique<caf::actor_system>(*system_config_)),
    engine_(std::make_unique<Engine>(*system_, config_.engine)), process_tag_(random_tag()) {
  detail::AgentConfig agent_config;
  agent_config.executor = engine_.get();
  agent_config.engine = engine_.get();
  agent_config.timeout = config_.timeout;
  agent_config.test_ops = config_.test_ops;
  agent_config.log = config_.log;
  agent_config.name =
    config_.name.empty() ? "caller pid " + std::to_string(::getpid()) : config_.name;
  published_name_ = agent_config.name;
  agent_ = detail::spawn_agent(*system_, std::move(agent_config));
}

Runtime::~Runtime() {
  // Note [Runtime shutdown]
  // ~actor_system waits for every detached actor to be destroyed, but the
  // agent's request timeouts live in the actor clock as strong references
  // until the clock's thread drops them, and ~actor_system stops that thread
  // first: a timeout still pending then keeps the agent alive for ever and
  // the destructor hangs. So after the agent exits, wait (bounded by the
  // request timeout) until its last reference is gone; if it is still held
  // after that, leak the actor system rather than hang the caller's process.
  // The middleman holds a published agent until it is unpublished
  // (shutdown does it): without that, every worker waited here in vain.
  caf::weak_actor_ptr agent_ref = caf::actor_cast<caf::weak_actor_ptr>(agent_);
  shutdown(std::chrono::seconds(10));
  agent_ = nullptr;
  engine_.reset();
  const auto deadline =
    std::chrono::steady_clock::now() + config_.timeout + std::chrono::seconds(1);
  while (agent_ref.lock() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (agent_ref.lock()) {
    std::fprintf(stderr, "actorgrad: remote runtime: the agent outlived shutdown; "
                         "its actor system is not destroyed\n");
    (void)system_.release();
    (void)system_config_.release();
  }
}

bool Runtime::shutdown(std::chrono::milliseconds grace) {
  if (published_port_ != 0) {
    (void)system_->middleman().unpublish(agent_, published_port_);
    published_port_ = 0;
  }
  // Monitoring an actor that is already gone delivers its down message at
  // once, so a second call returns at once too.
  bool down = false;
  caf::scoped_actor self{*system_};
  self->monitor(agent_);
  detail::tell_exit(agent_, caf::exit_reason::user_shutdown);
  self->receive([&](const caf::down_msg&) { down = true; }, caf::after(grace) >> [] {});
  return down;
}

std::uint16_t Runtime::publish(std::uint16_t port, const std::string& host) {
  auto res = system_->middleman().publish(agent_, port, host.c_str(), true);
  if (!res) {
    std::string why =
      res.error() == caf::sec::cannot_open_port ? detail::listen_problem(host, port) : "";
    throw DistError("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                    (why.empty() ? detail::describe(res.error(), config_.timeout) : why));
  }
  published_port_ = *res;
  if (config_.name.empty()) {
    published_name_ = host + ":" + std::to_string(*res);
    detail::tell(agent_, detail::SetName{published_name_});
  }
  return *res;
}

namespace {

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "?";
}

std::string ms_since(std::chrono::steady_clock::time_point start) {
  const auto ms =
    std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  return std::to_string(ms.count()) + " ms";
}

} // namespace

caf::actor Runtime::open_connection(const std::string& host, std::uint16_t port) {
  const std::string what = "cannot connect to worker " + host + ":" + std::to_string(port);
  const auto start = std::chrono::steady_clock::now();
  // middleman().remote_actor waits without a bound; ask the middleman actor
  // directly, with the runtime's timeout.
  caf::actor worker;
  caf::error error;
  {
    caf::scoped_actor self{*system_};
    detail::request_from(self, system_->middleman().actor_handle(), config_.timeout,
                         caf::connect_atom::value, host, port)
      .receive(
        [&](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>&) {
          worker = caf::actor_cast<caf::actor>(std::move(ptr));
          if (!worker)
            error = caf::sec::no_actor_published_at_port;
        },
        [&](caf::error& e) { error = std::move(e); });
  }
  if (!error)
    return worker;
  if (error == caf::sec::cannot_connect_to_node) {
    const std::string why = detail::connect_problem(host, port, config_.timeout);
    throw DistError(what + ": " + (why.empty() ? detail::describe(error, config_.timeout) : why) +
                    " (after " + ms_since(start) + ")");
  }
  if (error == caf::sec::request_timeout) {
    const std::string why = detail::connect_problem(host, port, std::chrono::milliseconds(200));
    const std::string waited = " within " + std::to_string(config_.timeout.count()) + " ms";
    throw DistError(what + ": " +
                    (why.empty() ? "it accepted the TCP connection but sent no handshake" + waited +
                                     " (not an actorgrad worker, or hung)"
                                 : "no answer" + waited + " (TCP connection: " + why + ")"));
  }
  throw DistError(what + ": " + detail::describe(error, config_.timeout) + " (after " +
                  ms_since(start) + ")");
}

RemoteWorker Runtime::connect(const std::string& host, std::uint16_t port) {
  const std::string name = host + ":" + std::to_string(port);
  caf::actor worker = open_connection(host, port);
  const std::string what = "cannot connect to worker " + name;
  auto hello = detail::ask<detail::HelloReply>(
    *this, worker,
    detail::Hello{kProtocolVersion, ACTORGRAD_VERSION, published_name_, host_name(), agent_},
    config_.timeout, what + ": handshake");
  if (hello.protocol_version != kProtocolVersion)
    throw DistError(
      what + ": it speaks actorgrad protocol " + std::to_string(hello.protocol_version) +
      " (actorgrad " + hello.software_version + "), this process protocol " +
      std::to_string(kProtocolVersion) +
      " (actorgrad " ACTORGRAD_VERSION "): run the same actorgrad version on both ends");
  if (!hello.error.empty())
    throw DistError(what + ": " + hello.error);
  // Note [Watching workers]
  // The agent monitors every connected worker and clears this flag on its
  // down message (process died, connection dropped). A call from a user
  // thread checks it first, so a call to a dead worker fails at once: a
  // request sent to the proxy of a lost connection is dropped by CAF 0.17,
  // not bounced, and would otherwise wait for the whole timeout. The flag is
  // written once, by the agent, and only read elsewhere.
  auto alive = std::make_shared<std::atomic<bool>>(true);
  detail::tell(agent_, detail::Watch{worker, alive});
  return RemoteWorker(this, std::move(worker), name, std::move(alive));
}

void RemoteWorker::ensure_alive(const std::string& what) const {
  if (!alive())
    throw DistError(what + ": worker " + name_ +
                    " is gone (connection lost: its process died or the network dropped)");
}

std::string Runtime::name() const { return published_name_; }

AgentStats Runtime::stats() {
  return detail::ask<detail::StatsReply>(*this, agent_, detail::StatsRequest{}, config_.timeout,
                                         published_name_ + ": stats")
    .stats;
}

std::uint64_t Runtime::next_context_id() {
  return (process_tag_ << 48) | ((++context_counter_) & ((std::uint64_t{1} << 48) - 1));
}

void RemoteWorker::create_param(const std::string& param, const Tensor& value) const {
  const std::string what = "create_param '" + param + "' on worker " + name_;
  if (!value.defined())
    throw DistError(what + ": the value is undefined");
  ensure_alive(what);
  auto ack = detail::ask<detail::Ack>(
    *runtime_, handle_, detail::CreateParam{param, detail::WireTensor(value.detach())},
    runtime_->config().timeout, what);
  if (!ack.error.empty())
    throw DistError(what + ": " + ack.error);
}

Tensor RemoteWorker::fetch_param(const std::string& param) const {
  const std::string what = "fetch_param '" + param + "' on worker " + name_;
  ensure_alive(what);
  auto reply = detail::ask<detail::ParamReply>(*runtime_, handle_, detail::FetchParam{param},
                                               runtime_->config().timeout, what);
  if (!reply.error.empty())
    throw DistError(what + ": " + reply.error);
  return reply.value.tensor;
}

AgentStats RemoteWorker::stats() const {
  ensure_alive("stats of worker " + name_);
  return detail::ask<detail::StatsReply>(*runtime_, handle_, detail::StatsRequest{},
                                         runtime_->config().timeout, "stats of worker " + name_)
    .stats;
}

} // namespace actorgrad::remote
