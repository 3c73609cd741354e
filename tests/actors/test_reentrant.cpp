#define BOOST_TEST_MODULE reentrant
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actorgrad/actors/detail/runner.h"
#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/custom_function.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/engine/detail/graph_task.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/engine/queue_callback.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "tests/actors/actor_test_util.h"

using namespace actorgrad;

namespace {

// Identity in forward; its backward checks one nested backward of depth
// `levels - 1` (d/dz sum(3 * F(z)) == 3) before passing the gradient on.
// So backward through F with `levels` = n runs n nested backward calls,
// each from inside the node of the one before.
variable_list reentrant(const Tensor& x, int levels, std::atomic<int>* nested_ok) {
  auto forward = [levels, nested_ok](FunctionContext& ctx, const variable_list& in) {
    ctx.saved_data["levels"] = levels;
    ctx.saved_data["ok"] = nested_ok;
    return variable_list{in[0].detach()};
  };
  auto backward = [](FunctionContext& ctx, const variable_list& g) {
    int n = std::any_cast<int>(ctx.saved_data["levels"]);
    auto* ok = std::any_cast<std::atomic<int>*>(ctx.saved_data["ok"]);
    if (n > 0) {
      AutoGradMode enable(true); // backward runs with grad mode off (no create_graph)
      Tensor z = Tensor::ones({2}, DType::f64, g[0].device()).set_requires_grad();
      Tensor w = reentrant(z, n - 1, ok)[0] * 3.0;
      Tensor dz = grad({sum(w)}, {z})[0];
      if (dz.to_vector() == std::vector<double>{3.0, 3.0})
        ok->fetch_add(1);
    }
    return variable_list{g[0]};
  };
  return apply_custom_function("ReentrantBackward", {x}, forward, backward);
}

struct DepthCase {
  int depth;
  Device device;
};

/// What one backward through `depth` nested calls gave (no assertion here:
/// several threads run it at once, and Boost.Test is not thread-safe).
struct DepthResult {
  std::vector<double> grad;
  int nested_ok = 0;
  int max_frames = 0;
};

DepthResult run_depth(Engine& engine, int depth, Device device) {
  std::atomic<int> ok{0};
  Tensor x = Tensor::from_vector({1, 2}, {2}, DType::f64, device).set_requires_grad();
  Tensor y = reentrant(x, depth, &ok)[0] * 2.0;
  auto g = grad({sum(y)}, {x}, {}, engine)[0];
  return {g.to_vector(), ok.load(), engine.stats().max_reentrant_frames_per_stack};
}

void check_depth(Engine& engine, int depth, const DepthResult& r) {
  BOOST_TEST(r.grad == std::vector<double>({2.0, 2.0}));
  BOOST_TEST(r.nested_ok == depth, "nested backward calls that gave the right gradient");
  BOOST_TEST(r.max_frames <= engine.config().max_recursion_depth);
}

void check_depth(Engine& engine, int depth, Device device) {
  check_depth(engine, depth, run_depth(engine, depth, device));
}

EngineConfig sim_config() { return EngineConfig{{Device::sim(0), Device::sim(1)}}; }

} // namespace

BOOST_AUTO_TEST_CASE(nested_depths_on_cpu_and_sim) {
  Engine engine(sim_config());
  for (int depth : {1, 59, 60, 61, 200})
    for (Device d : {Device::cpu(), Device::sim(0)}) {
      BOOST_TEST_CONTEXT("depth " << depth << " on " << d.str()) {
        check_depth(engine, depth, d);
      }
    }
  auto stats = engine.stats();
  BOOST_TEST(stats.max_reentrant_frames_per_stack == 60);
  BOOST_TEST(stats.fresh_stacks > 0);
}

BOOST_AUTO_TEST_CASE(configurable_depth_limit) {
  EngineConfig cfg = sim_config();
  cfg.max_recursion_depth = 5;
  Engine engine(cfg);
  check_depth(engine, 23, Device::cpu());
  BOOST_TEST(engine.stats().max_reentrant_frames_per_stack == 5);
  BOOST_TEST(engine.stats().fresh_stacks >= 4);
}

BOOST_AUTO_TEST_CASE(four_threads_each_reentrant_to_depth_100) {
  Engine engine(sim_config());
  std::vector<std::future<DepthResult>> runs;
  for (int i = 0; i < 4; ++i)
    runs.push_back(std::async(std::launch::async, [&engine, i] {
      return run_depth(engine, 100, i % 2 ? Device::sim(i / 2) : Device::cpu());
    }));
  for (auto& r : runs) {
    BOOST_REQUIRE(r.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
    check_depth(engine, 100, r.get());
  }
}

BOOST_AUTO_TEST_CASE(checkpointed_mlp_matches_plain_mlp) {
  Engine engine(sim_config());
  const int blocks = 8, width = 6;
  std::vector<Tensor> ws, bs;
  for (int i = 0; i < blocks; ++i) {
    ws.push_back(Tensor::randn({width, width}, 100 + i).set_requires_grad());
    bs.push_back(Tensor::randn({width}, 200 + i).set_requires_grad());
  }
  // The input requires grad so every checkpointed block records its node.
  Tensor input = Tensor::randn({4, width}, 7).set_requires_grad();
  auto block = [&](int i) {
    return
      [&, i](const variable_list& in) { return variable_list{tanh(matmul(in[0], ws[i]) + bs[i])}; };
  };
  auto params = ws;
  params.insert(params.end(), bs.begin(), bs.end());

  Tensor h = input;
  for (int i = 0; i < blocks; ++i)
    h = block(i)({h})[0];
  auto plain = grad({sum(h * h)}, params, {}, engine);

  Tensor c = input;
  for (int i = 0; i < blocks; ++i)
    c = checkpoint(block(i), {c})[0];
  // The weights are captured by the blocks, not inputs of the checkpointed
  // functions: their gradients reach .grad through the nested backward
  // calls (as with torch.utils.checkpoint's reentrant variant).
  backward({sum(c * c)}, {}, engine);
  for (std::size_t i = 0; i < params.size(); ++i) {
    BOOST_REQUIRE(params[i].grad().defined());
    BOOST_TEST(kernels::max_abs_diff(plain[i], params[i].grad()) < 1e-12);
  }
}

namespace {

// A custom function whose backward runs `nested` (a nested backward).
Tensor with_nested_backward(const Tensor& x, std::function<void()> nested, const char* name) {
  auto forward = [](FunctionContext&, const variable_list& in) { return variable_list{in[0]}; };
  auto backward = [nested](FunctionContext&, const variable_list& g) {
    nested();
    return variable_list{g[0]};
  };
  return apply_custom_function(name, {x}, forward, backward)[0];
}

// A custom function whose backward throws.
Tensor throwing(const Tensor& x) {
  auto forward = [](FunctionContext&, const variable_list& in) { return variable_list{in[0]}; };
  auto backward = [](FunctionContext&, const variable_list&) -> variable_list {
    throw std::runtime_error("inner failure");
  };
  return apply_custom_function("InnerThrowBackward", {x}, forward, backward)[0];
}

} // namespace

BOOST_AUTO_TEST_CASE(error_in_nested_backward_names_both_nodes) {
  Engine engine(sim_config());
  for (Device d : {Device::cpu(), Device::sim(0)}) {
    Tensor x = Tensor::ones({2}, DType::f64, d).set_requires_grad();
    Tensor y = with_nested_backward(
      x,
      [d] {
        AutoGradMode enable(true);
        Tensor z = Tensor::ones({2}, DType::f64, d).set_requires_grad();
        backward({sum(throwing(z))});
      },
      "OuterReentrantBackward");
    BOOST_CHECK_EXCEPTION(grad({sum(y)}, {x}, {}, engine), EngineError, [](const EngineError& e) {
      std::string m = e.what();
      return m.find("OuterReentrantBackward") != std::string::npos &&
             m.find("InnerThrowBackward") != std::string::npos &&
             m.find("inner failure") != std::string::npos;
    });
    // The engine is still usable.
    Tensor a = Tensor::ones({2}, DType::f64, d).set_requires_grad();
    BOOST_TEST(grad({sum(a * 5.0)}, {a}, {}, engine)[0].to_vector() ==
               std::vector<double>({5.0, 5.0}));
  }
}

BOOST_AUTO_TEST_CASE(nested_tasks_run_before_the_parents_waiting_tasks) {
  std::mutex m; // guards `order`: the hook runs on the actors' threads
  std::vector<std::pair<std::string, int>> order;
  EngineConfig cfg = sim_config();
  cfg.observer = testing::on_node_start([&](Device, const GraphTaskBase& t, const NodeInfo& n) {
    std::lock_guard<std::mutex> lock(m);
    order.emplace_back(n.name, t.reentrant_depth);
  });
  Engine engine(cfg);
  Tensor x = Tensor::ones({2}).set_requires_grad();
  // Branch b is created first (lower sequence_nr): it waits in the heap
  // while the reentrant node (created later, so it runs first) runs its
  // nested backward, whose nodes (depth 1) must all run before b's.
  Tensor b = exp(x);
  Tensor a = with_nested_backward(
    x,
    [] {
      AutoGradMode enable(true);
      Tensor z = Tensor::ones({2}).set_requires_grad();
      backward({sum(tanh(z * 2.0))});
    },
    "ParentReentrantBackward");
  grad({sum(a + b)}, {x}, {}, engine);
  auto pos = [&](const std::string& name, int depth) {
    for (std::size_t i = 0; i < order.size(); ++i)
      if (order[i].first == name && order[i].second == depth)
        return static_cast<int>(i);
    return -1;
  };
  int parent = pos("ParentReentrantBackward", 0), waiting = pos("ExpBackward", 0);
  BOOST_REQUIRE(parent >= 0);
  BOOST_REQUIRE(waiting > parent);
  int nested = 0;
  for (int i = parent + 1; i < waiting; ++i)
    nested += order[i].second == 1;
  BOOST_TEST(nested >= 3, "nested nodes (TanhBackward, MulBackward, AccumulateGrad...) between");
  for (std::size_t i = waiting; i < order.size(); ++i)
    BOOST_TEST(order[i].second == 0);
}

BOOST_AUTO_TEST_CASE(final_callbacks_belong_to_their_own_graph_task) {
  Engine engine(sim_config());
  std::vector<std::string> log;
  Tensor x = Tensor::ones({2}).set_requires_grad();
  Tensor y = with_nested_backward(
    x,
    [&] {
      queue_callback([&] { log.push_back("parent"); });
      AutoGradMode enable(true);
      Tensor z = Tensor::ones({2}).set_requires_grad();
      Tensor w = with_nested_backward(
        z, [&] { queue_callback([&] { log.push_back("child"); }); }, "ChildNode");
      backward({sum(w)});
      log.push_back("after nested");
    },
    "ParentNode");
  grad({sum(y)}, {x}, {}, engine);
  BOOST_TEST(log == std::vector<std::string>({"child", "after nested", "parent"}),
             boost::test_tools::per_element());
}

// A CPU call of engine A whose node calls engine B, whose node calls A
// again, then A once more from A's node after B returned: every gradient
// right, and both engines usable after. The Runners made for the nested
// calls must end in the reverse order of their making (Note [A top-level
// CPU call needs no Runner]); sim nodes in the innermost calls make them
// wait for messages with two Runners current in turn.
BOOST_AUTO_TEST_CASE(engines_nested_in_each_other) {
  Engine a(sim_config());
  Engine b(sim_config());
  std::vector<std::string> log;
  // d/dz sum(k * z) on `device`, checked, by `engine`.
  auto nested_grad = [&log](Engine& engine, Device device, double k, const char* who) {
    AutoGradMode enable(true);
    Tensor z = Tensor::ones({2}, DType::f64, device).set_requires_grad();
    Tensor dz = grad({sum(z * k)}, {z}, {}, engine)[0];
    const bool ok = dz.to_vector() == std::vector<double>{k, k};
    log.push_back(std::string(who) + (ok ? " ok" : " wrong"));
  };
  Tensor x = Tensor::ones({2}, DType::f64).set_requires_grad();
  Tensor y = with_nested_backward(
    x,
    [&] {
      AutoGradMode enable(true);
      Tensor u = Tensor::ones({2}, DType::f64).set_requires_grad();
      Tensor v = with_nested_backward(
        u, [&] { nested_grad(a, Device::sim(0), 3.0, "A in B"); }, "InB");
      Tensor du = grad({sum(v * 2.0)}, {u}, {}, b)[0];
      log.push_back(du.to_vector() == std::vector<double>{2, 2} ? "B ok" : "B wrong");
      nested_grad(a, Device::sim(1), 5.0, "A after B");
    },
    "InA");
  Tensor dx = grad({sum(y * 7.0)}, {x}, {}, a)[0];
  BOOST_TEST(dx.to_vector() == std::vector<double>({7.0, 7.0}), boost::test_tools::per_element());
  BOOST_TEST(log == std::vector<std::string>({"A in B ok", "B ok", "A after B ok"}),
             boost::test_tools::per_element());
  BOOST_TEST(detail::Runner::current() == nullptr, "no Runner stays current after the call");
  for (Engine* e : {&a, &b}) {
    Tensor w = Tensor::ones({2}, DType::f64, Device::sim(0)).set_requires_grad();
    BOOST_TEST(grad({sum(w * 4.0)}, {w}, {}, *e)[0].to_vector() == std::vector<double>({4.0, 4.0}),
               boost::test_tools::per_element());
  }
}

// Note [A fresh stack past the depth limit]: past the depth limit, a
// nested call runs on a fresh stack of its thread, with the same Runner,
// queue and mailbox, and so do the calls nested in it, down to the next
// fresh stack. Here the parent call's gradient comes back from sim:0 while
// the innermost call runs two fresh stacks down: it waits in the caller's
// mailbox and heap until the nested calls return. Every gradient right,
// the nested calls' too, pass after pass.
BOOST_AUTO_TEST_CASE(cpu_calls_past_the_depth_limit_while_the_parent_waits_on_a_device) {
  EngineConfig cfg = sim_config();
  cfg.max_recursion_depth = 2;
  Engine engine(cfg);
  constexpr int passes = 10, depth = 6;
  for (int pass = 0; pass < passes; ++pass) {
    BOOST_TEST_CONTEXT("pass " << pass) {
      std::atomic<bool> innermost_runs{false};
      int right = 0; // nested calls that gave the right gradient
      // Level `level` nests `level` more calls, each checked.
      std::function<void(int)> nest = [&](int level) {
        AutoGradMode enable(true);
        Tensor z = Tensor::ones({2}, DType::f64).set_requires_grad();
        Tensor w = level == 0 ? z
                              : with_nested_backward(
                                  z, [&, level] { nest(level - 1); }, "Nest");
        if (level == 0) { // two fresh stacks down: let sim:0's gradient come meanwhile
          innermost_runs = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        right += grad({sum(w * 3.0)}, {z})[0].to_vector() == std::vector<double>{3.0, 3.0};
      };
      Tensor x = Tensor::from_vector({1, 2}, {2}, DType::f64).set_requires_grad();
      Tensor nested = with_nested_backward(
                        x, [&] { nest(depth - 1); }, "Outer") *
                      2.0;
      // Made after `nested`, so its first node runs first; its sim:0 node
      // waits for the innermost nested call (bounded: no hang if it never comes).
      auto wait_for_innermost = [&](variable_list&& g) {
        for (int i = 0; i < 10000 && !innermost_runs; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return std::move(g);
      };
      Tensor on_sim =
        testing::lambda_op(mul(x.to(Device::sim(0)), 5.0), "WaitsOnSim", wait_for_innermost)
          .first.to(Device::cpu());
      Tensor g = grad({sum(nested + on_sim)}, {x}, {}, engine)[0];
      BOOST_TEST(g.to_vector() == std::vector<double>({7.0, 7.0}),
                 boost::test_tools::per_element());
      BOOST_TEST(right == depth, "nested backward calls that gave the right gradient");
      BOOST_TEST(innermost_runs.load());
    }
  }
  BOOST_TEST(engine.stats().fresh_stacks >= 2 * passes, "two fresh stacks a pass");
  BOOST_TEST(engine.stats().max_reentrant_frames_per_stack <= 2);
}

namespace {

/// What each level of a CPU nest saw: its thread, and an address on its stack.
struct Level {
  std::thread::id thread;
  std::uintptr_t stack;
};

/// Nests `levels` backward calls on `engine`, each from the node of the one
/// before, recording each level; the innermost throws when `fail` is set.
void nest(Engine& engine, int levels, bool fail, std::vector<Level>& seen) {
  char here;
  seen.push_back({std::this_thread::get_id(), reinterpret_cast<std::uintptr_t>(&here)});
  if (levels == 0) {
    if (fail)
      throw std::runtime_error("failure at the bottom of the nest");
    return;
  }
  AutoGradMode enable(true);
  Tensor z = Tensor::ones({2}, DType::f64).set_requires_grad();
  Tensor w = with_nested_backward(
    z, [&, levels] { nest(engine, levels - 1, fail, seen); }, "Nest");
  BOOST_REQUIRE(grad({sum(w * 3.0)}, {z}, {}, engine)[0].to_vector() ==
                std::vector<double>({3.0, 3.0}));
}

/// How often consecutive levels of `seen` are on different stacks (more
/// than 1 MiB apart: a nested call's frames take a few KiB).
std::size_t stack_switches(const std::vector<Level>& seen) {
  std::size_t switches = 0;
  for (std::size_t i = 1; i < seen.size(); ++i) {
    const std::uintptr_t apart =
      std::max(seen[i].stack, seen[i - 1].stack) - std::min(seen[i].stack, seen[i - 1].stack);
    switches += apart > (1u << 20);
  }
  return switches;
}

/// An engine with max_recursion_depth 3, and its fresh-stack count at the start.
struct DepthLimitOf3 {
  static EngineConfig config() {
    EngineConfig cfg;
    cfg.max_recursion_depth = 3;
    return cfg;
  }
  Engine engine{config()};
  const std::int64_t fresh_before = engine.stats().fresh_stacks;

  /// At least `n` fresh stacks since the start, none holding more than 3 calls.
  void check_fresh_stacks(std::int64_t n) {
    BOOST_TEST(engine.stats().fresh_stacks - fresh_before >= n);
    BOOST_TEST(engine.stats().max_reentrant_frames_per_stack <= 3);
  }
};

} // namespace

// Note [A fresh stack past the depth limit]: past the limit a nested call
// stays on its thread (for a CPU nest, the caller's) and moves to a stack
// of its own, a new one every max_recursion_depth levels; an error thrown
// on such a stack reaches the outermost call with its message, and the
// engine goes on.
BOOST_FIXTURE_TEST_CASE(calls_past_the_depth_limit_stay_on_their_thread, DepthLimitOf3) {
  std::vector<Level> seen;
  nest(engine, 12, false, seen);
  BOOST_REQUIRE(seen.size() == 13u);
  for (std::size_t i = 0; i < seen.size(); ++i)
    BOOST_TEST((seen[i].thread == std::this_thread::get_id()), "level " << i << " on the caller");
  BOOST_TEST(stack_switches(seen) >= 3u, "a fresh stack at least every 3 levels");
  check_fresh_stacks(3);

  std::vector<Level> failing;
  BOOST_CHECK_EXCEPTION(
    nest(engine, 12, true, failing), std::exception, [](const std::exception& e) {
      return std::string(e.what()).find("failure at the bottom of the nest") != std::string::npos;
    });
  BOOST_TEST(failing.size() == 13u);
  seen.clear();
  nest(engine, 12, false, seen); // the engine and the thread's kept stacks still serve
  BOOST_TEST(seen.size() == 13u);
}

// The same past the limit under an async coordinator: every nested level
// runs on the coordinator's thread, on fresh stacks, and none on the caller's.
BOOST_FIXTURE_TEST_CASE(calls_past_the_depth_limit_under_an_async_call_stay_on_its_coordinator,
                        DepthLimitOf3) {
  std::vector<Level> seen;
  AutoGradMode enable(true);
  Tensor z = Tensor::ones({2}, DType::f64).set_requires_grad();
  Tensor w = with_nested_backward(
    z, [&] { nest(engine, 11, false, seen); }, "Nest");
  BOOST_TEST(engine.grad_async({sum(w * 3.0)}, {z}).get()[0].to_vector() ==
               std::vector<double>({3.0, 3.0}),
             boost::test_tools::per_element());
  BOOST_REQUIRE(seen.size() == 12u);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    BOOST_TEST((seen[i].thread == seen[0].thread), "level " << i << " on the coordinator");
    BOOST_TEST((seen[i].thread != std::this_thread::get_id()), "level " << i << " off the caller");
  }
  BOOST_TEST(stack_switches(seen) >= 3u, "a fresh stack at least every 3 levels");
  check_fresh_stacks(3);
}

namespace {

/// Records the names of the nodes fed locally (its hook runs on the actors'
/// threads).
struct FeedLog final : EngineObserver {
  void node_fed(const ObservedActor&, const GraphTaskBase&, const NodeInfo& node,
                std::uint32_t) override {
    const std::lock_guard<std::mutex> lock(m);
    fed.push_back(node.name);
  }
  /// How many times a node named `name` was fed.
  std::size_t feeds_of(const std::string& name) {
    const std::lock_guard<std::mutex> lock(m);
    return std::count(fed.begin(), fed.end(), name);
  }
  std::mutex m;
  std::vector<std::string> fed;
};

/// d/da of sum(tanh(a)) at a = 0.5, by a nested call of CPU nodes (each
/// feeds the next on the caller's runner; no MulBackward among them).
std::vector<double> nested_tanh_grad(Engine& engine) {
  AutoGradMode enable(true);
  Tensor a = Tensor::from_vector({0.5}, {1}, DType::f64).set_requires_grad();
  return grad({sum(tanh(a))}, {a}, {}, engine)[0].to_vector();
}

const double kNestedTanhGrad = 1.0 - std::tanh(0.5) * std::tanh(0.5);

} // namespace

// Note [Feeds of nested calls] (runner_observed.cpp): a nested call that has no
// observer, made inside an observed node, runs on the same runner, which
// wants feeds while that node runs. It crashed on the first gradient its
// nodes passed each other.
BOOST_AUTO_TEST_CASE(a_nested_call_without_an_observer_inside_an_observed_node) {
  Engine engine(sim_config());
  for (Device d : {Device::cpu(), Device::sim(0)}) {
    BOOST_TEST_CONTEXT(d.str()) {
      engine.set_observer(std::make_shared<FeedLog>());
      std::vector<double> nested;
      Tensor x = Tensor::from_vector({1, 2}, {2}, DType::f64, d).set_requires_grad();
      Tensor y = with_nested_backward(
        x * 3.0,
        [&] {
          engine.set_observer(nullptr); // the nested call starts without one
          nested = nested_tanh_grad(engine);
        },
        "NestingBackward");
      BOOST_TEST(grad({sum(y)}, {x}, {}, engine)[0].to_vector() == std::vector<double>({3.0, 3.0}),
                 boost::test_tools::per_element());
      BOOST_REQUIRE(nested.size() == 1u);
      BOOST_TEST(nested[0] == kNestedTanhGrad, boost::test_tools::tolerance(1e-12));
    }
  }
}

// ... and a nested call with an observer does not silence the feeds of the
// node that made it: the node's own gradient, passed on after the nested
// call, is still recorded as fed.
BOOST_AUTO_TEST_CASE(a_nested_observed_call_keeps_its_callers_feeds_recorded) {
  Engine engine(sim_config());
  for (Device d : {Device::cpu(), Device::sim(0)}) {
    BOOST_TEST_CONTEXT(d.str()) {
      auto log = std::make_shared<FeedLog>();
      engine.set_observer(log);
      std::vector<double> nested;
      Tensor x = Tensor::from_vector({1, 2}, {2}, DType::f64, d).set_requires_grad();
      Tensor y = with_nested_backward(
        x * 3.0, [&] { nested = nested_tanh_grad(engine); }, "NestingBackward");
      const std::string mul_name = y.grad_fn()->next_edges()[0].function->name();
      BOOST_TEST(grad({sum(y)}, {x}, {}, engine)[0].to_vector() == std::vector<double>({3.0, 3.0}),
                 boost::test_tools::per_element());
      BOOST_REQUIRE(nested.size() == 1u);
      BOOST_TEST(nested[0] == kNestedTanhGrad, boost::test_tools::tolerance(1e-12));
      BOOST_TEST(log->feeds_of("TanhBackward") >= 1u, "the nested call's feeds are recorded");
      BOOST_TEST(log->feeds_of(mul_name) == 1u,
                 mul_name << ", fed by the nesting node: " << log->feeds_of(mul_name) << " times");
      engine.set_observer(nullptr);
    }
  }
}
