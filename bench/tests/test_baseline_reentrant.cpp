/// The baseline engine's reentrant backward (PyTorch's nesting up to
/// max_recursion_depth, then the reentrant thread pool), on the workload the
/// benchmarks time: bench/common/reentrant.h.
#define BOOST_TEST_MODULE baseline_reentrant
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <vector>

#include "bench/baseline/baseline_engine.h"
#include "bench/common/reentrant.h"

using namespace actorgrad;
using namespace actorgrad::bench;

namespace {

std::vector<Device> sims() { return {Device::sim(0), Device::sim(1)}; }

// ReentrantCase::run throws unless every nested call gave the right gradient.
void check_depth(BaselineEngine& engine, int depth, Device device) {
  ReentrantCase c(depth, &engine, device);
  BOOST_CHECK_NO_THROW(c.run());
  BOOST_CHECK_NO_THROW(c.run()); // the retained top-level graph runs again
  BOOST_TEST(engine.max_frames_per_thread() <= BaselineEngine::default_max_recursion_depth);
}

} // namespace

BOOST_AUTO_TEST_CASE(nested_depths_on_cpu_and_on_a_device_thread) {
  BaselineEngine engine(sims());
  for (int depth : {1, 59, 60, 61, 200})
    for (Device d : {Device::cpu(), Device::sim(0)}) {
      BOOST_TEST_CONTEXT("depth " << depth << " on " << d.str()) {
        check_depth(engine, depth, d);
      }
    }
  BOOST_TEST(engine.max_frames_per_thread() == 60);
  BOOST_TEST(engine.handoffs() > 0);
  BOOST_TEST(engine.pool_threads() >= 1);
}

BOOST_AUTO_TEST_CASE(configurable_depth_limit) {
  BaselineEngine engine(sims(), 5);
  ReentrantCase c(23, &engine);
  BOOST_CHECK_NO_THROW(c.run());
  BOOST_TEST(engine.max_frames_per_thread() == 5);
  // 23 nested calls: 5 on the caller, then 5 per pool thread (the handed-off
  // call itself is not a nested frame there, as in PyTorch).
  BOOST_TEST(engine.handoffs() >= 3);
}

BOOST_AUTO_TEST_CASE(four_threads_each_reentrant_to_depth_100) {
  BaselineEngine engine(sims());
  std::vector<std::future<void>> runs;
  for (int i = 0; i < 4; ++i)
    runs.push_back(std::async(std::launch::async, [&engine, i] {
      ReentrantCase c(100, &engine, i % 2 ? Device::sim(i / 2) : Device::cpu());
      c.run();
    }));
  for (auto& r : runs) {
    BOOST_REQUIRE(r.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
    BOOST_CHECK_NO_THROW(r.get());
  }
}
