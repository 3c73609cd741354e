/// @file test_engine_streams.cpp
/// The actor engine on asynchronous sim streams: a forward pass spread over
/// several streams of two devices (with a branch that joins streams) gives
/// the synchronous run's gradients and no race report, over 200 seeded runs
/// with random kernel delays, and the same through backward_async; without
/// the engine's waits the detector reports races, so both the detector and
/// this test can fail.

#define BOOST_TEST_MODULE streams_engine_streams
#include <boost/test/unit_test.hpp>

#include "actorgrad/device/event.h"
#include "actorgrad/device/guards.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/detail/stream_sync.h"
#include "actorgrad/libengine/ops.h"
#include "tests/actors/actor_test_util.h"
#include "tests/streams/sim_test_util.h"

using namespace actorgrad;
using testing::engine;
using testing::SimSettings;

using Engine2 = testing::SharedEngine<2>;
BOOST_TEST_GLOBAL_FIXTURE(Engine2);

namespace {

const Device d0 = Device::sim(0);
const Device d1 = Device::sim(1);

/// Orders the current stream of `s.device` (about to be replaced by `s`)
/// before `s`, as a careful user does when switching streams.
void switch_to(Stream s) { Event::recorded_on(current_stream(s.device)).block(s); }

struct Leaves {
  Tensor x, w_a, w_b, w_1;
};

Leaves make_leaves() {
  Leaves l;
  l.x = Tensor::randn({16, 32}, 1, DType::f64, d0).set_requires_grad();
  l.w_a = Tensor::randn({32, 32}, 2, DType::f64, d0).set_requires_grad();
  l.w_b = Tensor::randn({32, 32}, 3, DType::f64, d0).set_requires_grad();
  l.w_1 = Tensor::randn({32, 8}, 4, DType::f64, d1).set_requires_grad();
  return l;
}

/// Forward over streams A and B of sim:0 (two branches), joined on stream C,
/// copied to sim:1 and finished on its stream D; backward with the engine
/// (`async`: backward_async, waited for). Returns the leaves' gradients,
/// read on the host.
std::vector<std::vector<double>> forward_backward(const Leaves& l, bool async = false) {
  const Stream a = Stream(d0, 1), b = Stream(d0, 2), c = Stream(d0, 3), d = Stream(d1, 1);
  Tensor h1, h2, h, loss;
  switch_to(a);
  {
    StreamGuard on_a(a);
    h1 = tanh(matmul(l.x, l.w_a));
  }
  switch_to(b);
  {
    StreamGuard on_b(b);
    h2 = sigmoid(matmul(l.x, l.w_b));
  }
  switch_to(c);
  Event::recorded_on(a).block(c);
  Event::recorded_on(b).block(c);
  {
    StreamGuard on_c(c);
    h = to_device(mul(h1, h2), d1); // the copy waits for c, runs on sim:1's default stream
  }
  switch_to(d);
  {
    StreamGuard on_d(d);
    Tensor y = relu(matmul(h, l.w_1));
    loss = sum(mul(y, y));
    if (async) {
      // A current stream of sim:0 other than its default, on which a kernel
      // reads x's gradient: the call's end must make it wait for the
      // stream that accumulated it.
      const Stream e(d0, 4);
      switch_to(e);
      StreamGuard on_e(e);
      engine().backward_async({loss}).get();
      return {mul(l.x.grad(), 1.0).to_vector(), l.w_a.grad().to_vector(), l.w_b.grad().to_vector(),
              l.w_1.grad().to_vector()};
    }
    backward({loss}, {}, engine());
    // The gradients are safe to use on the caller's current streams: d on
    // sim:1, the default stream on sim:0. A host read synchronizes those.
    return {l.x.grad().to_vector(), l.w_a.grad().to_vector(), l.w_b.grad().to_vector(),
            l.w_1.grad().to_vector()};
  }
}

bool close(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < a[i].size(); ++j)
      if (std::abs(a[i][j] - b[i][j]) > 1e-12 * (1 + std::abs(b[i][j])))
        return false;
  return true;
}

std::vector<std::vector<double>> synchronous_reference() {
  sim::configure({.async = false});
  auto grads = forward_backward(make_leaves());
  sim::configure({});
  return grads;
}

} // namespace

BOOST_AUTO_TEST_CASE(gradients_match_and_no_race_over_200_seeded_runs) {
  const auto expected = synchronous_reference();
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    SimSettings sim(seed, 50);
    const auto grads = forward_backward(make_leaves());
    BOOST_TEST_CONTEXT("seed " << seed) {
      BOOST_TEST(close(grads, expected));
      BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
    }
  }
}

// An async call's task is made on its coordinator's thread (Note [Async
// tasks made on their coordinator]): it must still make the caller's
// current streams wait, not the coordinator's.
BOOST_AUTO_TEST_CASE(async_calls_make_the_callers_streams_wait_over_100_seeded_runs) {
  const auto expected = synchronous_reference();
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    SimSettings sim(seed, 50);
    const auto grads = forward_backward(make_leaves(), true);
    BOOST_TEST_CONTEXT("seed " << seed) {
      BOOST_TEST(close(grads, expected));
      BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
    }
  }
}

BOOST_AUTO_TEST_CASE(without_the_engine_waits_the_detector_reports_races) {
  const auto expected = synchronous_reference();
  std::size_t runs_with_reports = 0;
  std::size_t wrong = 0;
  detail::set_stream_sync_for_testing(false);
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    SimSettings sim(seed, 50);
    wrong += close(forward_backward(make_leaves()), expected) ? 0 : 1;
    runs_with_reports += sim::race_reports().empty() ? 0 : 1;
    if (seed == 0)
      BOOST_TEST_MESSAGE("reports without the engine's waits:\n" << testing::joined_reports());
  }
  detail::set_stream_sync_for_testing(true);
  BOOST_TEST(runs_with_reports == 20u);
  BOOST_TEST_MESSAGE(wrong << " of 20 runs also computed wrong gradients");
}

BOOST_AUTO_TEST_CASE(nodes_run_on_the_stream_their_forward_ran_on) {
  SimSettings sim;
  const Stream a = stream_from_pool(d0);
  Tensor x = Tensor::randn({4, 4}, 9, DType::f64, d0).set_requires_grad();
  Tensor y;
  switch_to(a);
  {
    StreamGuard on_a(a);
    y = tanh(x);
  }
  BOOST_REQUIRE(y.grad_fn());
  BOOST_TEST((y.grad_fn()->stream() == a));
  BOOST_TEST(!sum(x.to(Device::cpu())).grad_fn()->stream().has_value());
}
