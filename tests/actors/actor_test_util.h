#pragma once
/// @file actor_test_util.h
/// Helpers shared by the actor-engine tests (tests/actors/*.cpp).

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/tensor/tensor.h"
#include "tests/support/lambda_node.h"

namespace actorgrad::testing {

/// Calls `fn(actor device, task, node)` whenever an actor starts a node
/// (an EngineObserver for EngineConfig::observer). `fn` must be thread-safe.
class NodeStartObserver final : public EngineObserver {
public:
  using Fn = std::function<void(Device, const GraphTaskBase&, const NodeInfo&)>;
  explicit NodeStartObserver(Fn fn) : fn_(std::move(fn)) {}
  void node_started(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) override {
    fn_(a.device, t, n);
  }

private:
  Fn fn_;
};

/// An observer that calls `fn` at every node start.
inline std::shared_ptr<EngineObserver> on_node_start(NodeStartObserver::Fn fn) {
  return std::make_shared<NodeStartObserver>(std::move(fn));
}

/// The Engine a test binary shares (see SharedEngine).
inline std::unique_ptr<Engine>& engine_slot() {
  static std::unique_ptr<Engine> e;
  return e;
}

/// The shared Engine of this test binary.
inline Engine& engine() { return *engine_slot(); }

/// Global fixture: the shared Engine serves sim:0 .. sim:(NumSim - 1) for
/// the whole module and is destroyed (workers stopped and joined) at its end.
/// Use: `using Engine2 = SharedEngine<2>; BOOST_TEST_GLOBAL_FIXTURE(Engine2);`
template <int NumSim>
struct SharedEngine {
  SharedEngine() {
    EngineConfig config;
    for (int i = 0; i < NumSim; ++i)
      config.devices.push_back(Device::sim(i));
    engine_slot() = std::make_unique<Engine>(std::move(config));
  }
  ~SharedEngine() { engine_slot().reset(); }
};

/// Bound on any single wait in these tests: a hang fails instead of blocking CI.
inline constexpr std::chrono::seconds kWaitLimit{30};

inline std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

/// True when `text` contains every one of `parts` (case-insensitive); logs the missing ones.
inline bool contains_all(const std::string& text, const std::vector<std::string>& parts) {
  const std::string t = lower(text);
  bool ok = true;
  for (const auto& p : parts)
    if (t.find(lower(p)) == std::string::npos) {
      BOOST_TEST_MESSAGE("message '" << text << "' lacks '" << p << "'");
      ok = false;
    }
  return ok;
}

/// A BOOST_CHECK_EXCEPTION predicate: the message names every one of `parts`.
inline auto message_has(std::vector<std::string> parts) {
  return [parts](const std::exception& e) {
    bool ok = contains_all(e.what(), parts);
    BOOST_TEST(ok, "unexpected error message: " << e.what());
    return ok;
  };
}

/// Runs `fn` on another thread and waits at most kWaitLimit for it. A hang
/// is reported as a failure (the stuck thread is detached: the process is
/// then in a bad state, but the test run ends and says why).
template <class F>
auto bounded(F fn, std::chrono::seconds limit = kWaitLimit) -> decltype(fn()) {
  using R = decltype(fn());
  std::packaged_task<R()> pt(std::move(fn));
  auto fut = pt.get_future();
  std::thread th(std::move(pt));
  if (fut.wait_for(limit) != std::future_status::ready) {
    th.detach();
    BOOST_FAIL("operation did not finish within " << limit.count() << " s (hang)");
  }
  th.join();
  return fut.get();
}

/// y = x (a copy on x's device) whose backward is `fn`, recorded as a node
/// named `name`. The node runs on x's device. Returns y and the node.
inline std::pair<Tensor, std::shared_ptr<Node>> lambda_op(const Tensor& x, const std::string& name,
                                                          LambdaNode::Fn fn) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = clone(x);
  }
  auto node = make_node<LambdaNode>(name, std::move(fn), collect_next_edges({x}));
  set_history(y, node);
  return {y, node};
}

inline variable_list identity(variable_list&& g) { return std::move(g); }

/// Elementwise |a - b| <= tol * max(|a|, |b|, 1).
inline bool close(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i]))
      return false;
    double scale = std::max({std::abs(a[i]), std::abs(b[i]), 1.0});
    if (std::abs(a[i] - b[i]) > tol * scale)
      return false;
  }
  return true;
}

inline bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0)
      return false;
  return true;
}

} // namespace actorgrad::testing
