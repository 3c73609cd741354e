#define BOOST_TEST_MODULE actors_engine_threads
#include <boost/test/unit_test.hpp>

// The threads an Engine starts, counted through /proc/self/task: pooled
// async coordinators that stop when idle (Note [Coordinator threads come
// and go] in actors/detail/coordinator_pool.cpp), the cap on them, async
// calls made inside nodes (Note [Async calls made inside a node] in
// actors/detail/async_call.h), and ~Engine joining every thread it started
// (Note [Engine threads are joined] in actors/detail/actor_thread.h); CPU
// workers (EngineConfig::cpu_workers) start with the engine, not per call.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/engine/reference_executor.h"
#include "tests/actors/actor_test_util.h"
#include "tests/support/thread_count.h"

using namespace actorgrad;
using namespace actorgrad::testing;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

/// Gradient of sum(x * x) at x = (1, -2).
const std::vector<double> kGrad{2.0, -4.0};

/// A graph whose backward waits at a node until open() is called (its
/// backward then passes the gradient through). Counts the calls that
/// reached the gate in `arrived`.
struct GatedGraph {
  std::shared_ptr<std::promise<void>> opener = std::make_shared<std::promise<void>>();
  std::shared_future<void> opened = opener->get_future().share();
  std::shared_ptr<std::atomic<int>> arrived = std::make_shared<std::atomic<int>>(0);
  Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
  Tensor loss;

  GatedGraph() {
    auto [y, node] =
      lambda_op(mul(x, x), "Gate", [opened = opened, arrived = arrived](variable_list&& g) {
        arrived->fetch_add(1);
        if (opened.wait_for(kWaitLimit) != std::future_status::ready)
          throw std::runtime_error("the gate never opened");
        return std::move(g);
      });
    loss = sum(y);
  }

  void open() { opener->set_value(); }
  std::future<variable_list> call(Engine& e) {
    return e.grad_async({loss}, {x}, {.retain_graph = true});
  }
};

/// Waits (bounded) until `pred()` holds; false on timeout.
template <class Pred>
bool eventually(Pred pred, milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (!pred()) {
    if (Clock::now() > end)
      return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

void check_all(std::vector<std::future<variable_list>>& fs) {
  int wrong = 0;
  for (auto& f : fs) {
    BOOST_REQUIRE(f.wait_for(kWaitLimit) == std::future_status::ready);
    wrong += f.get().at(0).to_vector() != kGrad;
  }
  BOOST_TEST(wrong == 0, wrong << " calls gave a wrong gradient");
}

} // namespace

// A burst of 1,000 calls held in flight at once starts 1,000 coordinators;
// once they are done and idle, the pool stops all but the warm one within
// twice the idle time, and the next call starts no thread.
BOOST_AUTO_TEST_CASE(the_pool_shrinks_to_its_warm_minimum_after_a_burst) {
  const milliseconds idle{400 * testing::kThreadTimeScale};
  Engine engine{EngineConfig{.max_async_coordinators = 1000,
                             .min_async_coordinators = 1,
                             .async_coordinator_idle_time = idle}};
  GatedGraph open_gate;
  open_gate.open();
  std::vector<std::future<variable_list>> warm_up;
  warm_up.push_back(open_gate.call(engine));
  check_all(warm_up);
  const std::size_t warm = settled_threads(); // the engine's threads and one coordinator
  BOOST_TEST(engine.stats().async_coordinators == 1u);

  GatedGraph g;
  std::vector<std::future<variable_list>> burst;
  for (int i = 0; i < 1000; ++i)
    burst.push_back(g.call(engine));
  BOOST_TEST_REQUIRE(eventually([&] { return g.arrived->load() == 1000; }, milliseconds(60000)),
                     "all 1,000 calls running at once (" << g.arrived->load()
                                                         << " reached the gate)");
  const std::size_t peak = process_threads();
  BOOST_TEST(peak >= warm + 999,
             "1,000 calls at once run on 1,000 coordinators (" << peak - warm << " threads more)");
  g.open();
  check_all(burst);
  const auto done = Clock::now();
  BOOST_TEST(
    eventually([&] { return process_threads() == warm && engine.stats().async_coordinators == 1; },
               2 * idle),
    "back to " << warm << " threads within twice the idle time: " << process_threads() << " after "
               << std::chrono::duration_cast<milliseconds>(Clock::now() - done).count() << " ms");
  BOOST_TEST(engine.stats().peak_async_coordinators == 1000u);

  // A steady stream of calls finds the warm coordinator: no thread per call.
  std::vector<std::future<variable_list>> after;
  for (int i = 0; i < 200; ++i) {
    after.push_back(g.call(engine));
    check_all(after);
    after.clear();
  }
  BOOST_TEST(process_threads() == warm);
}

// With every coordinator busy and the pool at its cap, calls wait for one
// instead of starting threads: 10,000 calls from 4 threads on a cap of 4
// never make more than 4 coordinators, and all give the right gradient.
BOOST_AUTO_TEST_CASE(no_more_coordinators_than_the_cap) {
  Engine engine{EngineConfig{.max_async_coordinators = 4, .min_async_coordinators = 1}};
  GatedGraph g;
  g.open();
  const std::size_t before = settled_threads();
  testing::PeakThreads sampled;
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      std::vector<std::future<variable_list>> fs;
      for (int i = 0; i < 2500; ++i)
        fs.push_back(g.call(engine));
      for (auto& f : fs)
        wrong +=
          f.wait_for(kWaitLimit) != std::future_status::ready || f.get().at(0).to_vector() != kGrad;
    });
  for (auto& c : callers)
    c.join();
  const std::size_t most = sampled.peak();
  BOOST_TEST(wrong.load() == 0);
  const EngineStats s = engine.stats();
  BOOST_TEST(s.peak_async_coordinators <= 4u);
  BOOST_TEST(s.async_calls_waited > 0, "some of 10,000 calls waited for a coordinator");
  // The sampler and the 4 callers are threads of the test; no coordinator
  // existed before the first call.
  BOOST_TEST(most <= before + 1 + 4 + 4, "at most 4 coordinators (the cap): peak "
                                           << most << " threads, " << before
                                           << " before the calls");
}

// A call that finds the pool full waits (its future not ready) until a
// coordinator is free; then it runs.
BOOST_AUTO_TEST_CASE(a_call_beyond_the_cap_waits_for_a_coordinator) {
  Engine engine{EngineConfig{.max_async_coordinators = 1}};
  GatedGraph g;
  auto first = g.call(engine);
  BOOST_TEST_REQUIRE(eventually([&] { return g.arrived->load() == 1; }, kWaitLimit));
  auto second = g.call(engine);
  BOOST_TEST((second.wait_for(milliseconds(200)) == std::future_status::timeout),
             "the second call waits while the only coordinator is busy");
  BOOST_TEST(g.arrived->load() == 1);
  g.open();
  std::vector<std::future<variable_list>> both;
  both.push_back(std::move(first));
  both.push_back(std::move(second));
  check_all(both);
  BOOST_TEST(engine.stats().async_calls_waited == 1);
  BOOST_TEST(engine.stats().peak_async_coordinators == 1u);
}

// Note [Jobs that wait outside the engine]: a job never waits for a
// coordinator. With a cap of 1, 3 jobs that each wait until all 3 started
// (as the distributed passes of two processes wait for each other) all run
// at once, on coordinators past the cap, each coordinating the call it makes;
// the pool stops those past the cap once they are idle.
BOOST_AUTO_TEST_CASE(jobs_run_past_the_cap_and_coordinate_their_calls) {
  const milliseconds idle{200 * testing::kThreadTimeScale};
  Engine engine{EngineConfig{
    .max_async_coordinators = 1, .min_async_coordinators = 1, .async_coordinator_idle_time = idle}};
  constexpr int kJobs = 3;
  std::atomic<int> started{0}; // written by each job, read by all of them
  std::vector<std::promise<std::vector<double>>> results(kJobs);
  std::vector<std::future<std::vector<double>>> got;
  for (auto& r : results)
    got.push_back(r.get_future());
  for (int i = 0; i < kJobs; ++i)
    engine.run_on_coordinator([&, i](std::exception_ptr not_started) {
      if (not_started) {
        results[i].set_exception(not_started);
        return;
      }
      started.fetch_add(1);
      if (!eventually([&] { return started.load() == kJobs; }, kWaitLimit)) {
        results[i].set_value({}); // a job waited in the pool for this one's coordinator
        return;
      }
      Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
      results[i].set_value(engine.grad({sum(mul(x, x))}, {x}).at(0).to_vector());
    });
  for (auto& f : got) {
    BOOST_REQUIRE(f.wait_for(2 * kWaitLimit) == std::future_status::ready);
    BOOST_TEST(f.get() == kGrad);
  }
  const EngineStats s = engine.stats();
  BOOST_TEST(s.peak_async_coordinators == std::size_t{kJobs});
  BOOST_TEST(s.async_calls_waited == 0);
  BOOST_TEST(eventually([&] { return engine.stats().async_coordinators == 1; }, 2 * idle),
             "back to one coordinator within twice the idle time");
}

// Note [Async calls made inside a node]: with a single coordinator, busy
// with the outer call, a node that makes an async call and waits for it
// (three levels deep) does not wait for a coordinator its ancestor holds.
BOOST_AUTO_TEST_CASE(async_calls_made_inside_nodes_never_wait_for_their_ancestors_coordinator) {
  Engine engine{EngineConfig{.max_async_coordinators = 1}};
  Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
  // Level k's node runs level k + 1's call through grad_async and waits.
  std::function<Tensor(int)> level = [&](int k) -> Tensor {
    Tensor base = mul(x, x);
    if (k == 3)
      return sum(base);
    auto [y, node] =
      lambda_op(base, "Level" + std::to_string(k), [&engine, &level, &x, k](variable_list&& g) {
        AutoGradMode enable(true);
        auto inner = engine.grad_async({level(k + 1)}, {x});
        if (inner.wait_for(kWaitLimit) != std::future_status::ready)
          throw std::runtime_error("a nested async call never ran");
        if (inner.get().at(0).to_vector() != kGrad)
          throw std::runtime_error("a nested async call gave a wrong gradient");
        return std::move(g);
      });
    return sum(y);
  };
  auto outer = engine.grad_async({level(0)}, {x});
  BOOST_TEST_REQUIRE((outer.wait_for(kWaitLimit) == std::future_status::ready));
  BOOST_TEST(outer.get().at(0).to_vector() == kGrad);
  BOOST_TEST(engine.stats().async_calls_run_inline == 3);
  BOOST_TEST(engine.stats().peak_async_coordinators == 1u);
}

// Calls still waiting for a coordinator when the engine is destroyed fail
// with an error that says so; the busy one finishes.
BOOST_AUTO_TEST_CASE(calls_waiting_at_destruction_fail_with_a_clear_error) {
  auto engine = std::make_unique<Engine>(EngineConfig{.max_async_coordinators = 1});
  GatedGraph g;
  auto running = g.call(*engine);
  BOOST_TEST_REQUIRE(eventually([&] { return g.arrived->load() == 1; }, kWaitLimit));
  std::vector<std::future<variable_list>> waiting;
  for (int i = 0; i < 3; ++i)
    waiting.push_back(g.call(*engine));
  std::thread opener([&] {
    std::this_thread::sleep_for(milliseconds(100));
    g.open();
  });
  bounded([&] { engine.reset(); });
  opener.join();
  BOOST_TEST(running.get().at(0).to_vector() == kGrad);
  for (auto& f : waiting)
    BOOST_CHECK_EXCEPTION(f.get(), EngineError,
                          message_has({"destroyed", "waited for a coordinator"}));
}

namespace {

/// Calls from 8 threads on `engine` (synchronous and asynchronous, crossing
/// to sim:0 or sim:1 and staying on the cpu); the number of wrong gradients.
int calls_from_8_threads(Engine& engine) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t)
    callers.emplace_back([&, t] {
      const Device d = Device::sim(t % 2);
      Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
      Tensor cpu_loss = sum(mul(x, x));
      Tensor crossing_loss = sum(mul(x.to(d), x.to(d))).to(Device::cpu());
      std::vector<std::future<variable_list>> fs;
      for (int i = 0; i < 10; ++i)
        fs.push_back(
          engine.grad_async({i % 2 ? cpu_loss : crossing_loss}, {x}, {.retain_graph = true}));
      wrong += engine.grad({crossing_loss}, {x}, {.retain_graph = true}).at(0).to_vector() != kGrad;
      for (auto& f : fs)
        wrong +=
          f.wait_for(kWaitLimit) != std::future_status::ready || f.get().at(0).to_vector() != kGrad;
    });
  for (auto& c : callers)
    c.join();
  return wrong.load();
}

} // namespace

// Note [Engine threads are joined]: right after ~Engine the process has
// exactly the threads it had before the engine was made, after calls of 8
// threads, 50 times over ("right after": testing::threads_become allows the
// kernel its moment to unlist a joined thread; before the fix, hundreds of
// threads were still running seconds later).
BOOST_AUTO_TEST_CASE(engine_destruction_joins_every_thread_it_started) {
  const EngineConfig config{.devices = {Device::sim(0), Device::sim(1)},
                            .max_async_coordinators = 6};
  {
    Engine first{config}; // the sim streams' threads (the device backend's, for the process)
    BOOST_TEST(calls_from_8_threads(first) == 0);
  }
  const std::size_t before = settled_threads(); // every repetition ends with these
  for (int rep = 0; rep < 50; ++rep) {
    BOOST_TEST_CONTEXT("repetition " << rep) {
      auto engine = std::make_unique<Engine>(config);
      BOOST_TEST(calls_from_8_threads(*engine) == 0);
      bounded([&] { engine.reset(); });
      BOOST_TEST(testing::threads_become(before),
                 "threads right after ~Engine: " << process_threads() << ", before: " << before);
    }
  }
}

namespace {

/// 16 branches of 4 nodes each from one leaf, joined by a sum: a CPU-only
/// graph whose ready nodes can spread over CPU workers.
struct WideGraph {
  Tensor x = Tensor::uniform({8}, -1, 1, 3).set_requires_grad(true);
  Tensor loss;
  WideGraph() {
    std::vector<Tensor> branches;
    for (int b = 0; b < 16; ++b) {
      Tensor y = mul(x, 0.5 + 0.1 * b);
      for (int k = 0; k < 3; ++k)
        y = tanh(mul(y, 1.1));
      branches.push_back(sum(y));
    }
    loss = branches.front();
    for (std::size_t b = 1; b < branches.size(); ++b)
      loss = add(loss, branches[b]);
  }
  std::vector<double> gradient(Executor& e) {
    return grad({loss}, {x}, {.retain_graph = true}, e).at(0).to_vector();
  }
};

} // namespace

// EngineConfig::cpu_workers = N: the engine starts its N - 1 CPU worker
// threads when it is made (the caller is the N-th), and its calls share
// them: 200 calls of a wide CPU-only graph start no thread (the sampler of
// testing::PeakThreads is the only one more), and ~Engine joins them all.
BOOST_AUTO_TEST_CASE(cpu_workers_are_started_with_the_engine_not_per_call) {
  testing::start_runtime_threads();
  WideGraph g;
  ReferenceExecutor reference;
  const std::vector<double> expected = g.gradient(reference);
  const std::size_t before = settled_threads();
  std::size_t one_worker = 0; // threads an engine with cpu_workers = 1 starts
  for (std::size_t workers : {std::size_t{1}, std::size_t{2}, std::size_t{4}}) {
    BOOST_TEST_CONTEXT(workers << " cpu workers") {
      auto engine = std::make_unique<Engine>(EngineConfig{.cpu_workers = workers});
      const std::size_t made = process_threads() - before;
      if (workers == 1)
        one_worker = made;
      BOOST_TEST(made == one_worker + workers - 1, "threads the engine started: " << made);
      testing::PeakThreads sampled;
      int wrong = 0;
      for (int call = 0; call < 200; ++call)
        wrong += !close(g.gradient(*engine), expected, 1e-12);
      BOOST_TEST(wrong == 0, wrong << " calls gave a wrong gradient");
      BOOST_TEST(sampled.peak() <= before + made + 1, "no thread per call");
      bounded([&] { engine.reset(); });
      BOOST_TEST(testing::threads_become(before),
                 "threads right after ~Engine: " << process_threads() << ", before: " << before);
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_pool_settings_are_refused_by_name) {
  BOOST_CHECK_EXCEPTION(Engine(EngineConfig{.max_async_coordinators = 0}), std::invalid_argument,
                        message_has({"max_async_coordinators", "0"}));
  BOOST_CHECK_EXCEPTION(
    Engine(EngineConfig{.max_async_coordinators = 2, .min_async_coordinators = 3}),
    std::invalid_argument, message_has({"min_async_coordinators", "3", "max_async_coordinators"}));
  BOOST_CHECK_EXCEPTION(Engine(EngineConfig{.async_coordinator_idle_time = milliseconds(0)}),
                        std::invalid_argument, message_has({"async_coordinator_idle_time", "0"}));
}
