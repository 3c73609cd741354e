#define BOOST_TEST_MODULE actors_engine_calls
#include <boost/test/unit_test.hpp>

// Plain calls on an owned engine: engine.backward(tensors, BackwardOptions)
// and engine.grad(outputs, inputs, GradOptions), and their async twins,
// with torch's defaults, run on that engine (its observer sees the nodes)
// and give the gradients of a hand computation.

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <caf/logger.hpp>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/errors.h"
#include "tests/actors/actor_test_util.h"
#include "tests/support/thread_count.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

const Device sim0 = Device::sim(0);

/// An engine serving sim:0 that counts the nodes it starts.
struct CountingEngine {
  // Written by the engine's actors and callers (node starts), read by the test.
  std::shared_ptr<std::atomic<int>> nodes = std::make_shared<std::atomic<int>>(0);
  Engine engine{EngineConfig{.devices = {sim0},
                             .observer = on_node_start([n = nodes](Device, const GraphTaskBase&,
                                                                   const NodeInfo&) { ++*n; })}};
};

std::vector<double> v(std::initializer_list<double> xs) { return xs; }

} // namespace

// loss = sum(x^2 * w) over sim:0: dloss/dx = 2 x w, dloss/dw = x^2.
BOOST_AUTO_TEST_CASE(backward_with_options_and_torch_defaults) {
  CountingEngine ce;
  Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
  Tensor w = Tensor::from_vector({3.0, 0.5}, {2}).set_requires_grad(true);
  Tensor loss = sum(mul(mul(x.to(sim0), x.to(sim0)), w.to(sim0))).to(Device::cpu());

  // Only the named input accumulates; the graph is kept when asked.
  ce.engine.backward({loss}, {.retain_graph = true, .inputs = {w}});
  BOOST_TEST(ce.nodes->load() > 0); // ran on this engine
  BOOST_TEST(w.grad().to_vector() == v({1.0, 4.0}), boost::test_tools::per_element());
  BOOST_TEST(!x.grad().defined());

  // Defaults: every leaf, graph freed afterwards, so a second pass fails.
  ce.engine.backward({loss});
  BOOST_TEST(x.grad().to_vector() == v({6.0, -2.0}), boost::test_tools::per_element());
  BOOST_TEST(w.grad().to_vector() == v({2.0, 8.0}), boost::test_tools::per_element());
  BOOST_CHECK_EXCEPTION(ce.engine.backward({loss}), EngineError,
                        message_has({"backward through the graph a second time"}));

  // grad_tensors scale the root gradient.
  Tensor y = mul(x.to(sim0), w.to(sim0));
  ce.engine.backward(
    {y}, {.grad_tensors = {Tensor::from_vector({1.0, 10.0}, {2}).to(sim0)}, .inputs = {x}});
  BOOST_TEST(x.grad().to_vector() == v({6.0 + 3.0, -2.0 + 5.0}), boost::test_tools::per_element());
}

// Note [CAF's thread-local logger]: a thread whose call crossed devices (so
// it made a caller mailbox) keeps no reference to the engine's logger,
// which would make ~Engine wait for that thread to exit.
BOOST_AUTO_TEST_CASE(a_cross_device_call_leaves_no_logger_reference_on_its_thread) {
  auto engine = std::make_unique<Engine>(EngineConfig{.devices = {sim0}});
  bool had_before = true, had_after = true;
  std::vector<double> grad;
  std::thread caller([&] {
    had_before = caf::logger::current_logger() != nullptr;
    Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
    engine->backward({sum(mul(x.to(sim0), x.to(sim0))).to(Device::cpu())});
    grad = x.grad().to_vector();
    had_after = caf::logger::current_logger() != nullptr;
  });
  caller.join();
  BOOST_TEST(!had_before);
  BOOST_TEST(grad == v({2.0, -4.0}), boost::test_tools::per_element());
  BOOST_TEST(!had_after);
}

BOOST_AUTO_TEST_CASE(grad_with_options_and_torch_defaults) {
  CountingEngine ce;
  Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
  Tensor cube = sum(pow(x.to(sim0), 3.0)).to(Device::cpu());

  // create_graph: the gradient 3 x^2 is differentiable again (6 x).
  variable_list g = ce.engine.grad({cube}, {x}, {.create_graph = true});
  BOOST_TEST(g.at(0).to_vector() == v({3.0, 12.0}), boost::test_tools::per_element());
  BOOST_TEST(!x.grad().defined()); // grad never touches .grad
  variable_list gg = ce.engine.grad({sum(g[0])}, {x});
  BOOST_TEST(gg.at(0).to_vector() == v({6.0, -12.0}), boost::test_tools::per_element());
  BOOST_TEST(ce.nodes->load() > 0);

  // grad_outputs; an unused input: an error, or undefined with allow_unused.
  Tensor unused = Tensor::ones({1}).set_requires_grad(true);
  Tensor y = mul(x, x);
  Tensor scale = Tensor::from_vector({1.0, 0.5}, {2});
  const GradOptions keep{.grad_outputs = {scale}, .retain_graph = true};
  BOOST_CHECK_EXCEPTION(ce.engine.grad({y}, {x, unused}, keep), EngineError,
                        message_has({"inputs[1]", "not have been used"}));
  variable_list r =
    ce.engine.grad({y}, {x, unused}, {.grad_outputs = {scale}, .allow_unused = true});
  BOOST_TEST(r.at(0).to_vector() == v({2.0, -2.0}), boost::test_tools::per_element());
  BOOST_TEST(!r.at(1).defined());
}

BOOST_AUTO_TEST_CASE(async_calls_take_the_same_options) {
  CountingEngine ce;
  Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
  Tensor w = Tensor::from_vector({3.0, 0.5}, {2}).set_requires_grad(true);
  Tensor loss = sum(mul(x.to(sim0), w.to(sim0))).to(Device::cpu());

  auto g = ce.engine.grad_async({loss}, {x}, {.retain_graph = true});
  BOOST_REQUIRE(g.wait_for(kWaitLimit) == std::future_status::ready);
  BOOST_TEST(g.get().at(0).to_vector() == v({3.0, 0.5}), boost::test_tools::per_element());

  auto b = ce.engine.backward_async({loss}, {.inputs = {x}});
  BOOST_REQUIRE(b.wait_for(kWaitLimit) == std::future_status::ready);
  b.get();
  BOOST_TEST(x.grad().to_vector() == v({3.0, 0.5}), boost::test_tools::per_element());
  BOOST_TEST(!w.grad().defined());
}

// Note [Async tasks made on their coordinator]: the task is made on the
// coordinator's thread with the caller's anomaly mode, which names the node
// that produced a NaN; the coordinator keeps its own mode for the next call.
BOOST_AUTO_TEST_CASE(async_calls_take_the_callers_anomaly_mode) {
  Engine engine;
  // x = 0: y = x^0.5 is fine forward; backward gets 0 * inf = NaN in PowBackward.
  Tensor x = Tensor::from_vector({0.0, 1.0}, {2}).set_requires_grad(true);
  Tensor y = pow(x, 0.5);
  Tensor loss = sum(mul(y, Tensor::from_vector({0.0, 1.0}, {2})));
  const std::string node = y.grad_fn()->name();
  {
    DetectAnomalyGuard anomaly;
    auto f = engine.backward_async({loss}, {.retain_graph = true});
    BOOST_REQUIRE(f.wait_for(kWaitLimit) == std::future_status::ready);
    BOOST_CHECK_EXCEPTION(f.get(), EngineError, message_has({node, "nan"}));
  }
  auto f = engine.backward_async({loss});
  BOOST_REQUIRE(f.wait_for(kWaitLimit) == std::future_status::ready);
  BOOST_CHECK_NO_THROW(f.get());
  BOOST_TEST(std::isnan(x.grad().to_vector().at(0)));
}

// Note [Pooled async coordinators]: async calls run on pooled coordinator
// actors, so 1,000 of them, one after another, run their CPU nodes on one
// thread and leave the process with the threads it had; 8 at a time, on at
// most 8 threads. Each gives the right gradient.
BOOST_AUTO_TEST_CASE(async_calls_start_no_thread_per_call) {
  // The threads that ran CPU nodes (the coordinators'), by the engine's
  // actors; read by the test after the calls.
  auto mutex = std::make_shared<std::mutex>();
  auto cpu_threads = std::make_shared<std::set<pid_t>>();
  Engine engine{EngineConfig{
    .devices = {sim0},
    .observer =
      on_node_start([mutex, cpu_threads](Device d, const GraphTaskBase&, const NodeInfo&) {
        if (d.is_cpu()) {
          std::lock_guard lock(*mutex);
          cpu_threads->insert(::gettid());
        }
      })}};
  Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
  Tensor loss = sum(mul(x.to(sim0), x.to(sim0))).to(Device::cpu());
  auto check = [&](std::future<variable_list>& f) {
    BOOST_REQUIRE(f.wait_for(kWaitLimit) == std::future_status::ready);
    const auto g = f.get().at(0).to_vector();
    BOOST_TEST_REQUIRE(g == v({2.0, -4.0}), boost::test_tools::per_element());
  };
  auto seen = [&] {
    std::lock_guard lock(*mutex);
    return std::exchange(*cpu_threads, {}).size();
  };
  for (int i = 0; i < 10; ++i) { // warm-up: the pool, its first coordinator
    auto f = engine.grad_async({loss}, {x}, {.retain_graph = true});
    check(f);
  }
  seen();
  const std::size_t before = testing::settled_threads();
  for (int i = 0; i < 1000; ++i) {
    auto f = engine.grad_async({loss}, {x}, {.retain_graph = true});
    check(f);
  }
  BOOST_TEST(seen() == 1u, "1,000 sequential calls coordinated on one thread");
  BOOST_TEST(testing::process_threads() == before, "and no thread left behind");
  for (int round = 0; round < 125; ++round) {
    std::vector<std::future<variable_list>> fs;
    for (int i = 0; i < 8; ++i)
      fs.push_back(engine.grad_async({loss}, {x}, {.retain_graph = true}));
    for (auto& f : fs)
      check(f);
  }
  BOOST_TEST(seen() <= 8u, "8 overlapping calls at a time: at most 8 coordinators");
  BOOST_TEST(testing::process_threads() <= before + 7);
}

// Note [Idle coordinator slot]: calls from several threads at once take the
// parked coordinator or go through the pool, and every one completes with
// the right gradient. The engine is destroyed with a coordinator parked:
// its shutdown must stop it and drop the slot's reference (a hang here, or
// a leak under the sanitizers' run, is the failure).
BOOST_AUTO_TEST_CASE(async_calls_from_several_threads_share_the_parked_coordinator) {
  auto engine = std::make_unique<Engine>(EngineConfig{.devices = {sim0}});
  Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
  Tensor loss = sum(mul(x.to(sim0), x.to(sim0))).to(Device::cpu());
  // Written by each caller thread, read by the test after joining them.
  std::atomic<int> right{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int i = 0; i < 250; ++i) {
        auto f = engine->grad_async({loss}, {x}, {.retain_graph = true});
        if (f.wait_for(kWaitLimit) == std::future_status::ready &&
            f.get().at(0).to_vector() == v({2.0, -4.0}))
          ++right;
      }
    });
  for (auto& c : callers)
    c.join();
  BOOST_TEST(right.load() == 1000);
  auto last = engine->grad_async({loss}, {x}, {.retain_graph = true}); // parks its coordinator
  BOOST_REQUIRE(last.wait_for(kWaitLimit) == std::future_status::ready);
  BOOST_TEST(last.get().at(0).to_vector() == v({2.0, -4.0}), boost::test_tools::per_element());
  engine.reset();
}

// Note [CPU calls on a caller]: an async call whose nodes are all CPU nodes
// runs straight through on its coordinator. A node of it that makes a
// nested call crossing to sim:0 still gets that call's gradient (the nested
// call takes the coordinator's dispatch loop), and CPU-only calls before
// and after it give theirs.
BOOST_AUTO_TEST_CASE(async_cpu_calls_run_straight_through_and_still_nest) {
  Engine engine{EngineConfig{.devices = {sim0}}};
  Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
  Tensor cpu_loss = sum(mul(x, x));
  // Written by the nested call's node, read by the test after the call.
  auto nested = std::make_shared<std::vector<double>>();
  Tensor y = lambda_op(x, "NestsOnSim", [nested](variable_list&& g) {
               AutoGradMode enable(true);
               Tensor z = Tensor::from_vector({3.0}, {1}).set_requires_grad(true);
               *nested = grad({sum(mul(z.to(sim0), 5.0)).to(Device::cpu())}, {z})[0].to_vector();
               return std::move(g);
             }).first;
  Tensor nesting_loss = sum(mul(y, 2.0));
  for (int i = 0; i < 3; ++i) {
    auto before = engine.grad_async({cpu_loss}, {x}, {.retain_graph = true});
    auto outer = engine.grad_async({nesting_loss}, {x}, {.retain_graph = true});
    auto after = engine.grad_async({cpu_loss}, {x}, {.retain_graph = true});
    for (auto* f : {&before, &outer, &after})
      BOOST_REQUIRE(f->wait_for(kWaitLimit) == std::future_status::ready);
    BOOST_TEST(before.get().at(0).to_vector() == v({2.0, -4.0}), boost::test_tools::per_element());
    BOOST_TEST(outer.get().at(0).to_vector() == v({2.0, 2.0}), boost::test_tools::per_element());
    BOOST_TEST(*nested == v({5.0}), boost::test_tools::per_element());
    BOOST_TEST(after.get().at(0).to_vector() == v({2.0, -4.0}), boost::test_tools::per_element());
    nested->clear();
  }
}

// An engine destroyed right after an async call through sim:0 was accepted:
// its coordinator makes the task once the device worker has stopped. It
// used to start a new worker then, which no Shutdown reached, so ~Engine
// never returned (Note [Workers replaced during shutdown]). Now the call
// ends, with its gradient or an error, and so does the teardown.
BOOST_AUTO_TEST_CASE(engine_destroyed_right_after_an_async_call_through_a_device) {
  std::size_t failed = 0;
  for (int round = 0; round < 20; ++round) {
    auto engine = std::make_unique<Engine>(EngineConfig{.devices = {sim0}});
    Tensor x = Tensor::from_vector({1.0, -2.0}, {2}, DType::f64, sim0).set_requires_grad(true);
    auto f = engine->grad_async({sum(mul(x, x))}, {x});
    BOOST_TEST_CONTEXT("round " << round) {
      bounded([&engine] { engine.reset(); });
      BOOST_REQUIRE(f.wait_for(kWaitLimit) == std::future_status::ready);
    }
    try {
      BOOST_TEST(f.get().at(0).to(Device::cpu()).to_vector() == v({2.0, -4.0}),
                 boost::test_tools::per_element());
    } catch (const EngineError& e) {
      ++failed;
      BOOST_TEST(std::string(e.what()).find("sim:0") != std::string::npos, e.what());
    }
  }
  BOOST_TEST_MESSAGE(failed << " of 20 calls failed, the others gave their gradient");
}

// An engine destroyed while an async CPU-only call runs on its coordinator
// (straight through, so the coordinator reads no message until the call
// ends): the call completes with its gradient, and the teardown completes
// after it (a hang here, or a use after free under the sanitizers' run, is
// the failure).
BOOST_AUTO_TEST_CASE(engine_destroyed_during_an_async_cpu_call_lets_it_finish) {
  auto engine = std::make_unique<Engine>(EngineConfig{.devices = {sim0}});
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
  Tensor y = lambda_op(x, "WaitsForRelease", [&started, released](variable_list&& g) {
               started.set_value();
               released.wait_for(kWaitLimit);
               return std::move(g);
             }).first;
  auto f = engine->grad_async({sum(mul(y, 3.0))}, {x});
  BOOST_REQUIRE(started.get_future().wait_for(kWaitLimit) == std::future_status::ready);
  std::thread teardown([&] { engine.reset(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20)); // the Shutdown is on its way
  release.set_value();
  BOOST_REQUIRE(f.wait_for(kWaitLimit) == std::future_status::ready);
  BOOST_TEST(f.get().at(0).to_vector() == v({3.0, 3.0}), boost::test_tools::per_element());
  teardown.join();
  BOOST_TEST(!engine);
}
