#define BOOST_TEST_MODULE actors_faults
#include <boost/test/unit_test.hpp>

// Faults: an exception in a node (cpu and sim:0) reaches the caller as an
// EngineError naming the node and stops the rest of that GraphTask on every
// actor; a DeviceWorker that dies fails the GraphTask (naming the device)
// instead of hanging, and is respawned; asynchronous calls deliver results
// and errors through their futures. After each fault the same Engine runs
// the next backward correctly.

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/engine/detail/graph_task.h"
#include "actorgrad/libengine/engine/errors.h"
#include "tests/actors/actor_test_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

/// The engine of this test binary: created and destroyed by the global
/// fixture, inside main. (A static Engine destroyed by exit() crashes in
/// ~actor_system after an async call from the main thread: see the report.)
/// A fresh backward on `d` (and across to the cpu) gives the right gradient.
void check_engine_works(Device d) {
  Tensor x = Tensor::from_vector({1, 2, 3}, {3}, DType::f64, d).set_requires_grad(true);
  Tensor y = Tensor::from_vector({0.5, -1, 2}, {3}).set_requires_grad(true);
  Tensor loss = add(sum(mul(x, x)).to(Device::cpu()), sum(mul(y, x.to(Device::cpu()))));
  bounded([&] { backward({loss}, {}, engine()); });
  BOOST_REQUIRE(x.grad().defined());
  BOOST_TEST((x.grad().device() == d));
  // d/dx = 2x + y, d/dy = x
  BOOST_TEST(x.grad().to_vector() == (std::vector<double>{2.5, 3, 8}),
             boost::test_tools::per_element());
  BOOST_TEST(y.grad().to_vector() == (std::vector<double>{1, 2, 3}),
             boost::test_tools::per_element());
}

/// Waits (at most 10 s) until the GraphTask whose node runs on this thread
/// has an error. Returns false on timeout.
bool wait_for_task_error() {
  GraphTaskBase* task = detail::current_graph_task();
  if (!task)
    return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!task->has_error()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

/// A graph with a throwing node on `thrower_dev` and a long chain of
/// counting nodes on `chain_dev`. Chain node 5 tells the thrower to throw
/// (so the chain is running when the error happens) and waits until the
/// GraphTask has the error; the nodes after it must not run.
struct FaultGraph {
  static constexpr int kChain = 50;
  static constexpr int kWaitAt = 5;
  std::atomic<int> chain_calls{0};
  std::atomic<bool> waits_ok{true};
  std::promise<void> chain_started;
  std::shared_future<void> chain_started_f = chain_started.get_future().share();
  Tensor x = Tensor::uniform({2, 2}, -1, 1, 42).set_requires_grad(true);
  Tensor loss;
  std::uint64_t thrower_seq = 0;

  FaultGraph(Device thrower_dev, Device chain_dev) {
    // The branch that lives on the cpu is created first: its nodes have
    // lower sequence_nr, so the cpu sends the other branch its gradient
    // before it runs its own (ready order), and neither wait can block it.
    const bool thrower_first = thrower_dev.is_cpu();
    Tensor a, b;
    if (thrower_first) {
      a = thrower_branch(thrower_dev);
      b = chain_branch(chain_dev);
    } else {
      b = chain_branch(chain_dev);
      a = thrower_branch(thrower_dev);
    }
    loss = add(a, b);
  }

  Tensor thrower_branch(Device d) {
    auto [y, node] = lambda_op(x.to(d), "ThrowingNode", [this](variable_list&&) -> variable_list {
      if (chain_started_f.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
        waits_ok = false;
      throw std::runtime_error("deliberate failure in a custom node");
    });
    thrower_seq = node->sequence_nr();
    return sum(y).to(Device::cpu());
  }

  Tensor chain_branch(Device d) {
    Tensor h = x.to(d);
    for (int i = 0; i < kChain; ++i) {
      int at = kChain - 1 - i; // execution position: the last created runs first
      h = lambda_op(h, "Chain" + std::to_string(at), [this, at](variable_list&& g) {
            chain_calls.fetch_add(1);
            if (at == kWaitAt) {
              chain_started.set_value(); // the thrower may throw now
              if (!wait_for_task_error())
                waits_ok = false;
            }
            return std::move(g);
          }).first;
    }
    return sum(h).to(Device::cpu());
  }
};

} // namespace

using SharedEngineFixture = SharedEngine<2>;
BOOST_TEST_GLOBAL_FIXTURE(SharedEngineFixture);

namespace {

/// Runs backward of `loss` on `eng` (bounded in time): whether it threw an
/// EngineError, and its message (or what happened instead).
std::pair<bool, std::string> backward_error(const Tensor& loss, Engine& eng) {
  std::pair<bool, std::string> result{false, "backward returned normally"};
  bounded([&] {
    try {
      backward({loss}, {}, eng);
    } catch (const EngineError& e) {
      result = {true, e.what()};
    } catch (const std::exception& e) {
      result = {false, std::string("not an EngineError: ") + e.what()};
    }
  });
  return result;
}

} // namespace

BOOST_AUTO_TEST_CASE(node_exception_reaches_caller_and_stops_the_task) {
  struct Case {
    Device thrower, chain;
  };
  for (Case c : {Case{Device::cpu(), Device::sim(1)}, Case{Device::sim(0), Device::sim(1)},
                 Case{Device::sim(0), Device::cpu()}}) {
    BOOST_TEST_CONTEXT("thrower on " << c.thrower.str() << ", chain on " << c.chain.str()) {
      FaultGraph g(c.thrower, c.chain);
      const auto t0 = std::chrono::steady_clock::now();
      const auto [engine_error, message] = backward_error(g.loss, engine());
      const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      BOOST_TEST(engine_error, message);
      BOOST_TEST(contains_all(
                   message, {"ThrowingNode", "deliberate failure", std::to_string(g.thrower_seq)}),
                 message);
      BOOST_TEST(g.waits_ok.load(), "a wait inside a node timed out");
      // The chain stopped at the node that waited for the error.
      BOOST_TEST(g.chain_calls.load() < FaultGraph::kChain);
      BOOST_TEST(g.chain_calls.load() == FaultGraph::kWaitAt + 1);
      BOOST_TEST(secs < 10.0);
      BOOST_TEST(!g.x.grad().defined()); // the leaf's AccumulateGrad never ran
      check_engine_works(Device::sim(0));
      check_engine_works(Device::sim(1));
    }
  }
}

// A DeviceWorker killed while the task has work queued on it (and on
// another device): the call fails naming the device, in bounded time; the
// worker is respawned and serves the next call.
BOOST_AUTO_TEST_CASE(killed_device_worker_fails_the_task_and_is_respawned) {
  Engine& eng = engine();
  const Device sim0 = Device::sim(0);
  for (int round = 0; round < 3; ++round) {
    BOOST_TEST_CONTEXT("round " << round) {
      caf::actor before = eng.worker(sim0);
      // State the nodes use lives on the heap: after the call fails, a node
      // of the failed task may still be running on sim:1.
      struct Shared {
        std::promise<void> killed;
        std::shared_future<void> killed_f = killed.get_future().share();
        std::atomic<int> other_calls{0}, chain_calls{0};
      };
      auto sh = std::make_shared<Shared>();
      Engine* e = &eng;

      Tensor x = Tensor::uniform({2, 2}, -1, 1, 3).set_requires_grad(true);
      Tensor xs = x.to(sim0);
      // Other (lower sequence_nr) is queued on sim:0 when Killer runs.
      Tensor other = lambda_op(xs, "OtherOnSim0", [sh](variable_list&& g) {
                       sh->other_calls.fetch_add(1);
                       return std::move(g);
                     }).first;
      Tensor killer = lambda_op(xs, "Killer", [sh, e](variable_list&& g) {
                        caf::anon_send_exit(e->worker(Device::sim(0)), caf::exit_reason::kill);
                        sh->killed.set_value();
                        return std::move(g);
                      }).first;
      // Work on sim:1 that is still going when sim:0 dies.
      Tensor h = x.to(Device::sim(1));
      for (int i = 0; i < 5; ++i)
        h = lambda_op(h, "ChainOnSim1", [sh](variable_list&& g) {
              sh->chain_calls.fetch_add(1);
              sh->killed_f.wait_for(std::chrono::seconds(10));
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
              return std::move(g);
            }).first;
      Tensor loss = add(sum(add(other, killer)).to(Device::cpu()), sum(h).to(Device::cpu()));

      const auto t0 = std::chrono::steady_clock::now();
      const auto [engine_error, message] = backward_error(loss, eng);
      const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      BOOST_TEST(engine_error, message);
      BOOST_TEST(contains_all(message, {"sim:0"}), message);
      BOOST_TEST(contains_all(message, {"worker"}), message);
      // A worker told to exit runs no further node.
      BOOST_TEST(sh->other_calls.load() == 0, "OtherOnSim0 ran after its worker was killed");
      BOOST_TEST(secs < 10.0);

      // Right after the failure the engine must not hand out the dead
      // worker's handle (its replacement may not be installed yet).
      try {
        check_engine_works(sim0);
      } catch (const std::exception& e) {
        BOOST_ERROR("backward on sim:0 right after the worker died failed: " << e.what());
      }
      // Once the replacement is in place, sim:0 must work.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (eng.worker(sim0) == before && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      // The engine respawned the worker; it serves sim:0 again.
      check_engine_works(sim0);
      BOOST_TEST((eng.worker(sim0) != before), "the worker of sim:0 was not replaced");
      check_engine_works(Device::sim(1));
    }
  }
}

// A worker killed from outside while it is idle: the next call works.
BOOST_AUTO_TEST_CASE(idle_worker_killed_from_outside_is_respawned) {
  Engine& eng = engine();
  caf::actor before = eng.worker(Device::sim(1));
  caf::anon_send_exit(before, caf::exit_reason::kill);
  // Wait (bounded) until the replacement is in place.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (eng.worker(Device::sim(1)) == before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  BOOST_TEST((eng.worker(Device::sim(1)) != before));
  check_engine_works(Device::sim(1));
}

BOOST_AUTO_TEST_CASE(backward_async_and_grad_async_return_results) {
  Engine& eng = engine();
  Tensor x = Tensor::from_vector({1, -2, 3, 0.5}, {2, 2}).set_requires_grad(true);
  Tensor w = Tensor::from_vector({0.5, 1, -1, 2}, {2, 2}, DType::f64, Device::sim(0))
               .set_requires_grad(true);
  Tensor loss = sum(mul(x.to(Device::sim(0)), w)).to(Device::cpu());

  auto g = eng.grad_async({loss}, {x, w}, {.retain_graph = true});
  BOOST_REQUIRE(g.wait_for(kWaitLimit) == std::future_status::ready);
  auto r = g.get();
  BOOST_REQUIRE_EQUAL(r.size(), 2u);
  BOOST_TEST(r[0].to_vector() == w.to_vector(), boost::test_tools::per_element());
  BOOST_TEST(r[1].to_vector() == x.to_vector(), boost::test_tools::per_element());
  BOOST_TEST((r[1].device() == Device::sim(0)));
  BOOST_TEST(!x.grad().defined());

  auto b = eng.backward_async({loss}, {.retain_graph = false});
  BOOST_REQUIRE(b.wait_for(kWaitLimit) == std::future_status::ready);
  b.get();
  BOOST_TEST(x.grad().to_vector() == w.to_vector(), boost::test_tools::per_element());
  BOOST_TEST(w.grad().to_vector() == x.to_vector(), boost::test_tools::per_element());

  // Several at once.
  std::vector<std::future<variable_list>> many;
  std::vector<Tensor> leaves;
  for (int i = 0; i < 16; ++i) {
    Tensor l = Tensor::full({3}, i, DType::f64, Device::sim(i % 2)).set_requires_grad(true);
    leaves.push_back(l);
    many.push_back(eng.grad_async({sum(mul(l, l)).to(Device::cpu())}, {l}));
  }
  for (int i = 0; i < 16; ++i) {
    BOOST_REQUIRE(many[i].wait_for(kWaitLimit) == std::future_status::ready);
    auto gi = many[i].get();
    BOOST_TEST(gi[0].to_vector() == (std::vector<double>(3, 2.0 * i)),
               boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(async_errors_arrive_through_the_future) {
  Engine& eng = engine();
  for (Device d : {Device::cpu(), Device::sim(0)}) {
    BOOST_TEST_CONTEXT("node on " << d.str()) {
      Tensor x = Tensor::uniform({2}, -1, 1, 5, DType::f64, d).set_requires_grad(true);
      auto [y, node] = lambda_op(x, "AsyncThrower", [](variable_list&&) -> variable_list {
        throw std::runtime_error("async failure");
      });
      Tensor loss = sum(y).to(Device::cpu());

      auto b = eng.backward_async({loss}, {.retain_graph = true});
      BOOST_REQUIRE(b.wait_for(kWaitLimit) == std::future_status::ready);
      BOOST_CHECK_EXCEPTION(b.get(), EngineError, message_has({"AsyncThrower", "async failure"}));

      auto g = eng.grad_async({loss}, {x}, {.retain_graph = true});
      BOOST_REQUIRE(g.wait_for(kWaitLimit) == std::future_status::ready);
      BOOST_CHECK_EXCEPTION(g.get(), EngineError, message_has({"AsyncThrower", "async failure"}));

      // An unused input is reported through the future too.
      Tensor unused = Tensor::ones({1}).set_requires_grad(true);
      Tensor ok = sum(mul(x, x)).to(Device::cpu());
      auto u = eng.grad_async({ok}, {x, unused}, {.retain_graph = true});
      BOOST_REQUIRE(u.wait_for(kWaitLimit) == std::future_status::ready);
      BOOST_CHECK_EXCEPTION(u.get(), EngineError, message_has({"inputs[1]", "not have been used"}));
    }
  }
  check_engine_works(Device::sim(0));
}

// A worker killed during an asynchronous call: the future carries the error.
BOOST_AUTO_TEST_CASE(killed_worker_during_async_call_fails_the_future) {
  Engine& eng = engine();
  caf::actor before = eng.worker(Device::sim(0));
  Tensor x = Tensor::uniform({2}, -1, 1, 9).set_requires_grad(true);
  Engine* e = &eng;
  Tensor k = lambda_op(x.to(Device::sim(0)), "KillerAsync", [e](variable_list&& g) {
               caf::anon_send_exit(e->worker(Device::sim(0)), caf::exit_reason::kill);
               return std::move(g);
             }).first;
  Tensor after = lambda_op(k, "AfterKill", identity).first; // never runs
  Tensor loss = sum(mul(after, 2.0)).to(Device::cpu());
  auto f = eng.backward_async({loss});
  BOOST_REQUIRE_MESSAGE(f.wait_for(kWaitLimit) == std::future_status::ready,
                        "backward_async did not complete after its worker was killed");
  BOOST_CHECK_EXCEPTION(f.get(), EngineError, message_has({"sim:0"}));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (eng.worker(Device::sim(0)) == before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  check_engine_works(Device::sim(0));
}
