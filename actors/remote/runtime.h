#pragma once
/// @file runtime.h
/// A process's entry to distributed autograd: its actor system (with CAF's
/// network layer), its Engine and its Agent; connects to workers or
/// publishes itself as one.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <caf/actor.hpp>

#include "actorgrad/actors/engine_config.h"
#include "actorgrad/actors/remote/agent_stats.h"
#include "actorgrad/actors/remote/log.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace caf {
class actor_system;
class actor_system_config;
} // namespace caf

namespace actorgrad {
class Engine;
}

namespace actorgrad::remote {

class Runtime;

/// Settings of a Runtime.
struct RuntimeConfig {
  /// The longest a remote request (a forward call, a gradient request, a
  /// query) may wait for its reply before it fails with an error naming
  /// the worker. A worker that dies or a connection that drops is noticed
  /// at once (CAF monitoring), without waiting for this.
  std::chrono::milliseconds timeout{10000};
  /// The Engine that runs this process's local passes.
  EngineConfig engine;
  /// Serve the test ops of remote_ops.h (test.slow_backward, test.nan_backward).
  bool test_ops = false;
  /// Name in errors; empty: `caller pid N`, or `host:port` once published.
  std::string name;
  /// Where the agent reports connections, disconnections, refused
  /// handshakes and requests; empty: nowhere.
  LogFunction log;
};

/// A worker process seen from a caller (from Runtime::connect). Cheap to
/// copy; thread-safe.
class RemoteWorker {
public:
  RemoteWorker() = default;
  /// `host:port`, as connected.
  const std::string& name() const { return name_; }
  /// The worker's agent.
  const caf::actor& handle() const { return handle_; }
  /// The runtime it was connected from.
  Runtime& runtime() const { return *runtime_; }
  /// Creates or replaces a parameter held by the worker (a leaf that
  /// requires grad), initialized with a copy of `value`. Remote ops name it
  /// in OpAttrs::params. Throws DistError naming the worker on failure.
  void create_param(const std::string& param, const Tensor& value) const;
  /// The current value of a parameter (a copy).
  Tensor fetch_param(const std::string& param) const;
  /// What the worker's agent holds (contexts, requests in flight, params).
  AgentStats stats() const;
  /// False once the connection to the worker is lost (its process died or
  /// the network dropped): calls to it then fail at once instead of waiting
  /// for the timeout.
  bool alive() const { return alive_ && alive_->load(std::memory_order_acquire); }
  /// Throws DistError `what: worker ... is gone` unless alive().
  void ensure_alive(const std::string& what) const;

private:
  friend class Runtime;
  RemoteWorker(Runtime* runtime, caf::actor handle, std::string name,
               std::shared_ptr<std::atomic<bool>> alive)
    : runtime_(runtime), handle_(std::move(handle)), name_(std::move(name)),
      alive_(std::move(alive)) {}
  Runtime* runtime_ = nullptr;
  caf::actor handle_;
  std::string name_;
  /// Set to false by the agent when the worker goes down (Note [Watching workers]).
  std::shared_ptr<std::atomic<bool>> alive_;
};

/// Thrown for any failure of distributed autograd; the message names the
/// worker (and the node or tensor) involved.
class DistError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One per process taking part in distributed autograd. Thread-safe.
///
/// Caller: `Runtime rt; auto w = rt.connect("127.0.0.1", port);` then
/// DistContext / remote_call / dist_backward (dist_context.h).
/// Worker: `Runtime rt; rt.publish(port, host);` and keep it alive
/// (`actorgrad worker`).
class Runtime {
public:
  explicit Runtime(RuntimeConfig config = {});
  /// Stops the agent and the engine; contexts still open are dropped.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Publishes this process's agent on `host:port` (port 0: any free port)
  /// and returns the port. The agent's name becomes `host:port`. Throws
  /// DistError naming host, port and the system's reason when it cannot
  /// listen there (`Address already in use`).
  std::uint16_t publish(std::uint16_t port, const std::string& host = "127.0.0.1");
  /// Connects to the worker published at `host:port` and checks that it
  /// speaks this process's protocol (Note [Protocol version]). Throws
  /// DistError naming it, how long it waited and why: connection refused,
  /// no answer, not an actorgrad worker, another protocol version.
  RemoteWorker connect(const std::string& host, std::uint16_t port);
  /// Stops serving: unpublishes, stops the agent (requests it still waits
  /// on fail with `NAME is shutting down`) and waits at most `grace` for it.
  /// Returns false when the agent is still running a local pass by then
  /// (the destructor waits again; a worker exits instead). Afterwards the
  /// runtime serves and sends nothing; only its destruction is left.
  bool shutdown(std::chrono::milliseconds grace);

  /// Name in errors.
  std::string name() const;
  const RuntimeConfig& config() const { return config_; }
  /// The Engine running this process's local passes.
  Engine& engine() { return *engine_; }
  /// The actor system (CAF middleman loaded, remote types registered).
  caf::actor_system& system() { return *system_; }
  /// This process's agent.
  const caf::actor& agent() const { return agent_; }
  /// What this process's agent holds.
  AgentStats stats();
  /// A context id unique across processes: a random 16-bit process tag in
  /// the top bits, a counter below (PyTorch: worker id << 48 | counter).
  std::uint64_t next_context_id();

private:
  /// The TCP connection and CAF handshake of connect(): the worker's agent.
  caf::actor open_connection(const std::string& host, std::uint16_t port);

  RuntimeConfig config_;
  std::unique_ptr<caf::actor_system_config> system_config_;
  std::unique_ptr<caf::actor_system> system_;
  std::unique_ptr<Engine> engine_;
  caf::actor agent_;
  std::string published_name_;
  /// The port publish() listens on; 0 when not published.
  std::uint16_t published_port_ = 0;
  std::uint64_t process_tag_;
  std::atomic<std::uint64_t> context_counter_{0};
};

} // namespace actorgrad::remote
