#define BOOST_TEST_MODULE stress_async_burst
#include <boost/test/unit_test.hpp>

// Stress: bursts of asynchronous calls, then ~Engine (Note [~Engine hung in
// CAF's cleanup] in actors/detail/actor_thread.h). Each round makes
// an engine, 1,000 grad_async calls from one thread over one shared cpu
// graph (retain_graph), waits for every result, leaves the engine idle for
// 300 ms, then destroys it under a watchdog: ~Engine must return, and the
// process must have exactly the threads it had before the engine was made.
// The pool may start a coordinator for every call (up to 1,000 threads), and
// the rounds take turns in how long an idle one stays: longer than the test
// (all of them end in ~Engine), about the idle phase (they stop while
// ~Engine runs) and shorter (most stopped before).
// Repeated for the time budget (ACTORGRAD_STRESS_SECONDS; 8 s by default,
// at least 3 rounds). Two more cases repeat the pool's bounds under bursts
// (Note [Coordinator threads come and go] in actors/detail/coordinator_pool.cpp):
// 10,000 calls from 8 threads never run on more coordinators than the cap,
// and after each burst the pool is back at its warm minimum within twice
// the idle time.

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/ops.h"
#include "tests/stress/stress_util.h"
#include "tests/support/thread_count.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

const Seconds kCallLimit{60};    ///< the burst's results
const Seconds kDestroyLimit{20}; ///< ~Engine

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(ExitAfterHang);

BOOST_AUTO_TEST_SUITE(stress)

BOOST_AUTO_TEST_CASE(engine_destroyed_after_a_burst_of_async_calls) {
  const auto deadline = after(budget(8));
  testing::start_runtime_threads();
  const std::size_t before = testing::settled_threads(); // every round ends with these
  int rounds = 0;
  for (; (rounds < 3 || Clock::now() < deadline) && !hung(); ++rounds) {
    BOOST_TEST_CONTEXT("round " << rounds) {
      const std::chrono::milliseconds idle_times[] = {std::chrono::milliseconds(10000),
                                                      std::chrono::milliseconds(300),
                                                      std::chrono::milliseconds(50)};
      auto engine = std::make_unique<Engine>(EngineConfig{
        .max_async_coordinators = 1000, .async_coordinator_idle_time = idle_times[rounds % 3]});
      {
        Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
        Tensor loss = sum(mul(x, x));
        std::vector<std::future<variable_list>> burst;
        for (int i = 0; i < 1000; ++i)
          burst.push_back(engine->grad_async({loss}, {x}, {.retain_graph = true}));
        int wrong = 0;
        for (auto& f : burst) {
          if (!ready_within(f, kCallLimit))
            exit_on_hang("a call of the burst gave no result within 60 s");
          wrong += f.get().at(0).to_vector() != std::vector<double>{2.0, -4.0};
        }
        BOOST_TEST(wrong == 0, wrong << " of 1,000 calls gave a wrong gradient");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(300)); // idle
      auto destroyed = run_bounded([e = engine.release()] { delete e; }, kDestroyLimit);
      if (!destroyed)
        exit_on_hang("~Engine did not return within 20 s after a burst of 1,000 async calls");
      BOOST_TEST(testing::threads_become(before),
                 "threads right after ~Engine: " << testing::process_threads()
                                                 << ", before the engine: " << before);
    }
  }
  BOOST_TEST_MESSAGE(rounds << " rounds of 1,000 async calls and a destroyed engine");
}

/// A shared cpu graph (retain_graph) and its gradient's check.
struct SharedGraph {
  Tensor x = Tensor::from_vector({1.0, -2.0}, {2}).set_requires_grad(true);
  Tensor loss = sum(mul(x, x));
  std::future<variable_list> call(Engine& e) {
    return e.grad_async({loss}, {x}, {.retain_graph = true});
  }
  /// 1 when `f` gave no result in time or a wrong one.
  static int wrong(std::future<variable_list>& f) {
    return !ready_within(f, kCallLimit) ||
           f.get().at(0).to_vector() != std::vector<double>{2.0, -4.0};
  }
};

BOOST_AUTO_TEST_CASE(bursts_never_run_on_more_coordinators_than_the_cap) {
  const auto deadline = after(budget(5));
  Engine engine{EngineConfig{.max_async_coordinators = 4}};
  SharedGraph g;
  const std::size_t before = testing::settled_threads();
  int rounds = 0;
  for (; rounds < 2 || Clock::now() < deadline; ++rounds) {
    testing::PeakThreads sampled;
    std::atomic<int> wrong{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 8; ++t)
      callers.emplace_back([&] {
        std::vector<std::future<variable_list>> fs;
        for (int i = 0; i < 1250; ++i)
          fs.push_back(g.call(engine));
        for (auto& f : fs)
          wrong += SharedGraph::wrong(f);
      });
    for (auto& c : callers)
      c.join();
    const std::size_t most = sampled.peak();
    BOOST_TEST(wrong.load() == 0, "round " << rounds << ": " << wrong.load() << " of 10,000 calls");
    // 8 callers and the sampler are the test's; the cap allows 4 coordinators.
    BOOST_TEST(most <= before + 8 + 1 + 4, "round " << rounds << ": " << most
                                                    << " threads at the peak, " << before
                                                    << " before");
  }
  BOOST_TEST(engine.stats().peak_async_coordinators <= 4u);
  BOOST_TEST_MESSAGE(rounds << " bursts of 10,000 calls from 8 threads on a cap of 4");
}

BOOST_AUTO_TEST_CASE(the_pool_shrinks_to_its_warm_minimum_after_each_burst) {
  const auto deadline = after(budget(5));
  const std::chrono::milliseconds idle{300 * testing::kThreadTimeScale};
  Engine engine{EngineConfig{.max_async_coordinators = 1000, .async_coordinator_idle_time = idle}};
  SharedGraph g;
  {
    auto first = g.call(engine);
    BOOST_TEST_REQUIRE(SharedGraph::wrong(first) == 0);
  }
  const std::size_t warm = testing::settled_threads(); // one coordinator kept
  int rounds = 0;
  for (; rounds < 2 || Clock::now() < deadline; ++rounds) {
    std::vector<std::future<variable_list>> burst;
    for (int i = 0; i < 1000; ++i)
      burst.push_back(g.call(engine));
    int wrong = 0;
    for (auto& f : burst)
      wrong += SharedGraph::wrong(f);
    BOOST_TEST(wrong == 0, "round " << rounds);
    const auto limit = Clock::now() + 2 * idle;
    while ((testing::process_threads() != warm || engine.stats().async_coordinators != 1) &&
           Clock::now() < limit)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    BOOST_TEST(testing::process_threads() == warm,
               "round " << rounds << ": " << testing::process_threads() << " threads "
                        << 2 * idle.count() << " ms after the burst, " << warm << " when warm");
  }
  BOOST_TEST_MESSAGE(rounds << " bursts of 1,000 calls, peak "
                            << engine.stats().peak_async_coordinators << " coordinators");
}

BOOST_AUTO_TEST_SUITE_END()
