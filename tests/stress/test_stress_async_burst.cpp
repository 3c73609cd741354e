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
// at least 3 rounds).

#include <future>
#include <memory>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/ops.h"
#include "tests/stress/stress_util.h"
#include "tests/support/thread_count.h"

using namespace actorgrad;
using namespace actorgrad::stress;

namespace {

const Seconds kCallLimit{60};    ///< the burst's results
const Seconds kDestroyLimit{20}; ///< ~Engine

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(ExitAfterHang);

BOOST_AUTO_TEST_SUITE(stress)

BOOST_AUTO_TEST_CASE(engine_destroyed_after_a_burst_of_async_calls) {
  const auto deadline = after(budget(8));
  int rounds = 0;
  for (; (rounds < 3 || Clock::now() < deadline) && !hung(); ++rounds) {
    BOOST_TEST_CONTEXT("round " << rounds) {
      const std::size_t before = testing::process_threads();
      const std::chrono::milliseconds idle_times[] = {std::chrono::milliseconds(10000),
                                                       std::chrono::milliseconds(300),
                                                       std::chrono::milliseconds(50)};
      auto engine = std::make_unique<Engine>(
        EngineConfig{.max_async_coordinators = 1000,
                     .async_coordinator_idle_time = idle_times[rounds % 3]});
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
      BOOST_TEST(testing::process_threads() == before,
                 "threads after ~Engine: " << testing::process_threads() << ", before the engine: " << before);
    }
  }
  BOOST_TEST_MESSAGE(rounds << " rounds of 1,000 async calls and a destroyed engine");
}

BOOST_AUTO_TEST_SUITE_END()
