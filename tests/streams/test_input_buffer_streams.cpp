/// @file test_input_buffer_streams.cpp
/// InputBuffer::add on sim streams: the accumulation stream and the waits of
/// each of PyTorch's four cases, checked as a plan and by the race detector
/// with random kernel delays.

#define BOOST_TEST_MODULE streams_input_buffer_streams
#include <boost/test/unit_test.hpp>

#include "actorgrad/device/guards.h"
#include "actorgrad/libengine/engine/detail/actorgrad_graph.h"
#include "actorgrad/libengine/engine/detail/input_buffer.h"
#include "actorgrad/libengine/engine/detail/stream_sync.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "tests/streams/sim_test_util.h"
#include "tests/support/lambda_node.h"

using namespace actorgrad;
using actorgrad::detail::AccumulationPlan;
using actorgrad::detail::ActorgradGraph;
using actorgrad::detail::InputBuffer;
using actorgrad::detail::plan_accumulation;
using actorgrad::detail::producer_stream;
using actorgrad::detail::set_stream_sync_for_testing;
using testing::SimSettings;

namespace {

const Device d0 = Device::sim(0);
const Device d1 = Device::sim(1);

struct Case {
  const char* name;
  Device var;
  std::optional<Stream> producer;
  std::optional<Stream> consumer;
  AccumulationPlan expected;
};

std::vector<Case> four_cases() {
  const Stream p = stream_from_pool(d0);
  const Stream c = stream_from_pool(d0);
  const Stream other = stream_from_pool(d1);
  return {
    {"(1) producer and consumer on the var's device", d0, p, c, {c, p}},
    {"(2) consumer only on the var's device", d0, other, c, {c, default_stream(d0)}},
    {"(3) producer only on the var's device", d0, p, other, {default_stream(d0), p}},
    {"(4) neither on the var's device", d0, other, other, {default_stream(d0), std::nullopt}},
  };
}

/// A gradient of `value` on `c.var`, made where that case's producer makes it:
/// on the producer's stream when it is on the var's device, else on the var
/// device's default stream (where a copy from another device lands).
Tensor produce(const Case& c, double value) {
  const Stream s = c.producer && c.producer->device == c.var ? *c.producer : default_stream(c.var);
  StreamGuard guard(s);
  return kernels::add_scalar(Tensor::zeros({512}, DType::f64, c.var), value);
}

/// Adds two gradients into one slot as the case says, then uses the sum on
/// the accumulation stream the way the consumer would; returns its values.
std::vector<double> accumulate_and_use(const Case& c) {
  InputBuffer buffer(1);
  buffer.add(0, produce(c, 1.0), c.producer, c.consumer);
  buffer.add(0, produce(c, 2.0), c.producer, c.consumer);
  const Tensor sum = InputBuffer::variables(std::move(buffer))[0];
  StreamGuard guard(*c.expected.accumulate);
  return kernels::mul_scalar(sum, 10.0).to_vector();
}

} // namespace

BOOST_AUTO_TEST_CASE(each_case_plans_the_accumulation_stream_and_wait_of_pytorch) {
  for (const Case& c : four_cases()) {
    BOOST_TEST_CONTEXT(c.name) {
      const auto plan = plan_accumulation(c.var, c.producer, c.consumer);
      BOOST_TEST((plan.accumulate == c.expected.accumulate));
      BOOST_TEST((plan.wait_for == c.expected.wait_for));
    }
  }
  const auto cpu = plan_accumulation(Device::cpu(), std::nullopt, std::nullopt);
  BOOST_TEST(!cpu.accumulate.has_value());
  BOOST_TEST(!cpu.wait_for.has_value());
}

BOOST_AUTO_TEST_CASE(each_case_makes_the_sum_safe_on_its_accumulation_stream) {
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    SimSettings sim(seed);
    for (const Case& c : four_cases()) {
      BOOST_TEST_CONTEXT(c.name << ", seed " << seed) {
        BOOST_TEST(accumulate_and_use(c) == std::vector<double>(512, 30.0));
        BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
        sim::clear_race_reports();
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(without_the_waits_the_detector_reports_the_cases_that_need_them) {
  SimSettings sim;
  set_stream_sync_for_testing(false);
  for (const Case& c : four_cases()) {
    BOOST_TEST_CONTEXT(c.name) {
      (void)accumulate_and_use(c);
      const bool needs_wait = c.expected.wait_for && *c.expected.wait_for != *c.expected.accumulate;
      BOOST_TEST(sim::race_reports().empty() == !needs_wait, testing::joined_reports());
      sim::clear_race_reports();
    }
  }
  set_stream_sync_for_testing(true);
}

BOOST_AUTO_TEST_CASE(a_ready_event_from_the_producer_is_used_instead_of_a_new_one) {
  SimSettings sim(5);
  const Case c = four_cases()[0];
  Tensor g = produce(c, 1.0);
  const Event ready = Event::recorded_on(*c.producer);
  {
    // Work the producer enqueues after the gradient was ready: the consumer
    // must not wait for it, and does not need to.
    StreamGuard on_producer(*c.producer);
    (void)kernels::add_scalar(Tensor::zeros({4}, DType::f64, d0), 1.0);
  }
  InputBuffer buffer(1);
  buffer.add(0, std::move(g), c.producer, c.consumer, &ready);
  const Tensor sum = InputBuffer::variables(std::move(buffer))[0];
  StreamGuard guard(*c.consumer);
  BOOST_TEST(kernels::mul_scalar(sum, 2.0).to_vector() == std::vector<double>(512, 2.0));
  BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
}

// Note [Producer streams]: a gradient on the node's own device was made on
// the node's stream; one on another device by a copy on the calling
// thread's current stream there (a pool stream on a caller that set one).
BOOST_AUTO_TEST_CASE(the_producer_of_a_gradient_is_the_stream_that_made_it) {
  const Stream node = Stream(d0, 1);
  const Stream caller = Stream(d1, 3);
  StreamGuard on_caller(caller);
  const Tensor on_d0 = Tensor::zeros({2}, DType::f64, d0);
  const Tensor on_d1 = Tensor::zeros({2}, DType::f64, d1);
  const Tensor on_cpu = Tensor::zeros({2});
  BOOST_TEST((producer_stream(node, on_d0) == node));
  BOOST_TEST((producer_stream(node, on_d1) == caller));
  BOOST_TEST((producer_stream(std::nullopt, on_d1) == caller)); // a CPU node's copy
  BOOST_TEST(!producer_stream(node, on_cpu).has_value());
  BOOST_TEST(!producer_stream(std::nullopt, on_cpu).has_value());
  // The copy's consumer on its device now waits for the caller's stream: case (1).
  const auto plan = plan_accumulation(d1, producer_stream(std::nullopt, on_d1), Stream(d1, 1));
  BOOST_TEST((plan.wait_for == caller));
}

// A gradient sent to another actor carries an event recorded on its
// producer's stream right after it was made (ActorgradGraph::make_in_flight),
// but only when its receiver's accumulation stream will wait for that
// stream from another one: the receiver makes the same plan.
BOOST_AUTO_TEST_CASE(a_sent_gradient_carries_an_event_only_when_its_receiver_waits_across_streams) {
  SimSettings sim;
  const Stream p = stream_from_pool(d0);
  const Stream c = stream_from_pool(d0);
  auto node_on = [](Stream s) {
    auto n = std::make_shared<testing::LambdaNode>("n", [](variable_list&& g) { return g; });
    StreamGuard on(s);
    n->add_input_metadata(Tensor::zeros({1}, DType::f64, s.device));
    BOOST_TEST_REQUIRE((n->stream() == s));
    return n;
  };
  struct Hop {
    const char* name;
    Stream producer, consumer;
    bool event;
  };
  for (const Hop& h :
       {Hop{"case (1), two streams of the var's device", p, c, true},
        Hop{"case (1), one stream", p, p, false},
        Hop{"case (3), from a device's default stream to another device", default_stream(d0),
            default_stream(d1), false},
        Hop{"case (3), from a pool stream to another device", p, default_stream(d1), true}}) {
    BOOST_TEST_CONTEXT(h.name) {
      const auto from = node_on(h.producer);
      const auto to = node_on(h.consumer);
      Tensor g;
      {
        StreamGuard on(h.producer);
        g = kernels::add_scalar(Tensor::zeros({8}, DType::f64, d0), 1.0);
      }
      auto f = ActorgradGraph::make_in_flight(*from, *to, std::move(g));
      BOOST_TEST((f.producer == h.producer));
      BOOST_TEST(f.ready.recorded() == h.event);
      // The receiver's accumulation is safe either way.
      InputBuffer buffer(1);
      const auto source = ActorgradGraph::sent_source(f);
      buffer.add(0, std::move(ActorgradGraph::sent_value(f)), source.producer, to->stream(),
                 source.ready);
      const Tensor sum = InputBuffer::variables(std::move(buffer))[0];
      const auto plan = plan_accumulation(d0, h.producer, h.consumer);
      StreamGuard on(*plan.accumulate);
      BOOST_TEST(kernels::mul_scalar(sum, 2.0).to_vector() == std::vector<double>(8, 2.0));
      BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
    }
  }
}
