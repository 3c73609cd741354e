/// @file test_pending_reads.cpp
/// Note [Pending reads]: a gradient that a copy to another device read
/// asynchronously is written in place (InputBuffer::add, AccumulateGrad)
/// only after that read, though the host holds it alone by then. Checked
/// with the race detector, deterministically: the copy's kernel has run
/// (its stream is queried, which orders nothing for the detector, as on a
/// GPU nothing would order it) before the in-place add is enqueued.

#define BOOST_TEST_MODULE streams_pending_reads
#include <boost/test/unit_test.hpp>

#include <thread>
#include <tuple>

#include "actorgrad/device/guards.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/accumulate_grad.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/engine/detail/actorgrad_graph.h"
#include "actorgrad/libengine/engine/detail/input_buffer.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "actorgrad/libengine/tensor/pending_reads.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"
#include "tests/streams/sim_test_util.h"

using namespace actorgrad;
using actorgrad::detail::ActorgradGraph;
using actorgrad::detail::InputBuffer;
using testing::SimSettings;

namespace {

const Device a = Device::sim(0);
const Device b = Device::sim(1);

/// A gradient of `value`s made on stream `s` of device A.
Tensor produce_on(Stream s, double value) {
  StreamGuard guard(s);
  return kernels::add_scalar(Tensor::zeros({256}, DType::f64, a), value);
}

/// Copies `g` to device B on `reader` (a to_device, as ToCopyBackward does;
/// the source's current stream is `producer`, so the copy follows it), and
/// returns the copy once its kernel ran and dropped its handle of `g`.
Tensor copy_to_b_and_let_it_run(const Tensor& g, Stream producer, Stream reader) {
  Tensor copy;
  {
    StreamGuard on_producer(producer);
    StreamGuard on_reader(reader);
    copy = kernels::to_device(g, b);
  }
  while (!query(reader)) // no synchronize: that would order the host after the read
    std::this_thread::yield();
  return copy;
}

/// The copy's values, read on its own stream (the host synchronizes it).
std::vector<double> values_on(const Tensor& t, Stream s) {
  StreamGuard guard(s);
  return t.to_vector();
}

/// No race report, and `sum` (on `consumer`) and `copy` (on `reader`) hold
/// the values they should: the copy read the gradient before the add.
void expect_ordered(const Tensor& sum, Stream consumer, double sum_value, const Tensor& copy,
                    Stream reader, double copy_value) {
  BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
  BOOST_TEST(values_on(sum, consumer) == std::vector<double>(256, sum_value));
  BOOST_TEST(values_on(copy, reader) == std::vector<double>(256, copy_value));
}

/// An asynchronous sim with the detector, no kernel delay, grad mode off
/// (a backward without create_graph), and the streams of a case: the
/// gradient's producer and consumer on device A, the copy's reader on B.
struct Setup {
  explicit Setup(std::uint64_t seed) : sim(seed, 0) {}
  SimSettings sim;
  NoGradGuard no_grad;
  const Stream producer = stream_from_pool(a);
  const Stream consumer = stream_from_pool(a);
  const Stream reader = stream_from_pool(b);
};

} // namespace

BOOST_AUTO_TEST_CASE(a_gradient_copied_to_another_device_is_added_in_place_after_the_copy) {
  const Setup s(3);
  const auto [producer, consumer, reader] = std::tuple(s.producer, s.consumer, s.reader);
  BOOST_REQUIRE(producer != consumer);

  InputBuffer buffer(1);
  Tensor g = produce_on(producer, 1.0);
  buffer.add(0, Tensor(g), producer, consumer); // the buffer and the copy share it
  const Tensor copy = copy_to_b_and_let_it_run(g, producer, reader);
  const TensorImpl* in_buffer = g.impl();
  g = Tensor(); // the buffer holds it alone: InputBuffer adds in place
  buffer.add(0, produce_on(producer, 2.0), producer, consumer);

  const Tensor sum = InputBuffer::variables(std::move(buffer))[0];
  BOOST_TEST(sum.impl() == in_buffer); // in place, the case under test
  expect_ordered(sum, consumer, 3.0, copy, reader, 1.0);
}

BOOST_AUTO_TEST_CASE(a_new_gradient_copied_to_another_device_is_added_into_after_the_copy) {
  // InputBuffer's other in-place case: the arriving gradient is the sole
  // owner, the one in the slot is shared, so the sum goes into the new one.
  const Setup s(4);
  const auto [producer, consumer, reader] = std::tuple(s.producer, s.consumer, s.reader);

  InputBuffer buffer(1);
  const Tensor first = produce_on(producer, 1.0);
  buffer.add(0, Tensor(first), producer, consumer); // stays shared
  Tensor g = produce_on(producer, 2.0);
  const Tensor copy = copy_to_b_and_let_it_run(g, producer, reader);
  const TensorImpl* arriving = g.impl();
  buffer.add(0, std::move(g), producer, consumer);

  const Tensor sum = InputBuffer::variables(std::move(buffer))[0];
  BOOST_TEST(sum.impl() == arriving); // in place, the case under test
  expect_ordered(sum, consumer, 3.0, copy, reader, 2.0);
}

BOOST_AUTO_TEST_CASE(a_leaf_gradient_copied_to_another_device_is_accumulated_after_the_copy) {
  const Setup s(5);
  const auto [producer, reader] = std::pair(s.producer, s.reader);
  Tensor leaf = Tensor::zeros({256}, DType::f64, a).set_requires_grad();
  AccumulateGrad acc(leaf);

  Tensor g = produce_on(producer, 1.0);
  const Tensor copy = copy_to_b_and_let_it_run(g, producer, reader);
  const Storage* memory = g.impl()->storage.get();
  {
    StreamGuard on_producer(producer);
    variable_list grads;
    grads.push_back(std::move(g)); // no initializer list: it would copy the handle
    acc.apply(std::move(grads));   // stolen: the leaf's .grad is now that memory
    grads.clear();
    grads.push_back(produce_on(producer, 2.0));
    acc.apply(std::move(grads)); // added in place on the producer
  }
  BOOST_TEST(leaf.grad().impl()->storage.get() == memory); // in place, the case under test
  expect_ordered(leaf.grad(), producer, 3.0, copy, reader, 1.0);
}

BOOST_AUTO_TEST_CASE(reads_are_recorded_once_per_stream_and_only_on_devices_with_streams) {
  SimSettings sim(6, 0);
  const Stream reader = stream_from_pool(b);
  const Tensor g = produce_on(default_stream(a), 1.0);
  BOOST_TEST(pending_read_streams(g).empty());
  {
    StreamGuard on_reader(reader);
    for (int i = 0; i < 3; ++i)
      (void)kernels::to_device(g, b);
  }
  BOOST_TEST((pending_read_streams(g) == std::vector<Stream>{reader}));
  const Tensor on_cpu = Tensor::zeros({4});
  (void)kernels::to_device(on_cpu, a);
  BOOST_TEST(pending_read_streams(on_cpu).empty());
}

// A node's backward may hand one gradient to two consumers (AddBackward of
// a + b returns its incoming gradient twice). One consumer's node reads it
// with kernels on its own stream and drops it; the other's buffer then
// holds it alone and adds into it in place on another stream: the engine
// records the reading node's stream first.
BOOST_AUTO_TEST_CASE(a_gradient_two_nodes_share_is_added_in_place_after_the_other_read_it) {
  const Setup s(7);
  const Stream reading_node = stream_from_pool(a);
  Tensor x = Tensor::ones({256}, DType::f64, a).set_requires_grad();
  Tensor u;
  Event::recorded_on(default_stream(a)).block(reading_node); // x was made there
  {
    StreamGuard on_node(reading_node);
    AutoGradMode recording(true);
    u = mul(x, 2.0); // MulBackward runs on reading_node
  }
  Node& reader_fn = *u.grad_fn();
  BOOST_REQUIRE((reader_fn.stream() == reading_node));

  InputBuffer buffer(1); // the other consumer's
  Tensor g = produce_on(s.producer, 1.0);
  buffer.add(0, Tensor(g), s.producer, s.consumer);
  const TensorImpl* in_buffer = g.impl();
  Tensor dx;
  {
    Event::recorded_on(s.producer).block(reading_node); // the engine's wait for g
    StreamGuard on_node(reading_node);                  // the engine's run_scope
    variable_list in;
    in.push_back(std::move(g));
    dx = ActorgradGraph::call_function(reader_fn, std::move(in))[0];
  }
  while (!query(reading_node))
    std::this_thread::yield();
  buffer.add(0, produce_on(s.producer, 2.0), s.producer, s.consumer);

  const Tensor sum = InputBuffer::variables(std::move(buffer))[0];
  BOOST_TEST(sum.impl() == in_buffer); // in place, the case under test
  expect_ordered(sum, s.consumer, 3.0, dx, reading_node, 2.0);
}
