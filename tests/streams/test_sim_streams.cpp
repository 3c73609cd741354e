/// @file test_sim_streams.cpp
/// Sim streams and events: asynchronous in-order execution, event ordering,
/// host synchronization, and the race detector's reports.

#define BOOST_TEST_MODULE streams_sim_streams
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <thread>

#include "actorgrad/device/event.h"
#include "actorgrad/device/guards.h"
#include "actorgrad/device/sim/sim_backend.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "tests/streams/sim_test_util.h"

using namespace actorgrad;
using testing::SimSettings;

namespace {

const Device dev = Device::sim(0);

bool mentions(const std::string& report, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    if (report.find(p) == std::string::npos) {
      BOOST_TEST_MESSAGE("report '" << report << "' lacks '" << p << "'");
      return false;
    }
  return true;
}

} // namespace

BOOST_AUTO_TEST_CASE(kernels_on_one_stream_run_in_order_after_random_delays) {
  SimSettings sim(7);
  auto x = Tensor::zeros({64}, DType::f64, dev);
  for (int i = 0; i < 50; ++i)
    kernels::add_(x, kernels::add_scalar(kernels::mul_scalar(x, 0.0), 1.0), 1.0);
  // An in-place chain: any reordering would lose increments.
  for (double v : x.to_vector())
    BOOST_TEST(v == 50.0);
  BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
}

BOOST_AUTO_TEST_CASE(a_kernel_runs_after_launch_returns) {
  SimSettings sim;
  const Stream s = stream_from_pool(dev);
  StreamGuard guard(s);
  auto x = Tensor::ones({4}, DType::f64, dev);
  std::atomic<bool> open{false};
  sim::launch(s, "gate", DeviceWork::kernel, {}, [&open] {
    while (!open.load())
      std::this_thread::yield();
  });
  auto y = kernels::mul_scalar(x, 2.0);
  Event done = Event::recorded_on(s);
  BOOST_TEST(!done.query()); // the launches returned; the stream is held at the gate
  BOOST_TEST(!query(s));
  open = true;
  done.synchronize();
  BOOST_TEST(done.query());
  BOOST_TEST(y.to_vector() == std::vector<double>(4, 2.0));
}

BOOST_AUTO_TEST_CASE(an_event_wait_orders_another_stream_after_the_write) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    SimSettings sim(seed);
    const Stream a = stream_from_pool(dev);
    const Stream b = stream_from_pool(dev);
    Tensor x, y;
    {
      StreamGuard on_a(a);
      x = kernels::add_scalar(Tensor::zeros({256}, DType::f64, dev), 3.0);
    }
    Event::recorded_on(a).block(b);
    {
      StreamGuard on_b(b);
      y = kernels::mul_scalar(x, 2.0);
      BOOST_TEST(y.to_vector() == std::vector<double>(256, 6.0)); // host read on b: synchronizes b
    }
    BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
  }
}

BOOST_AUTO_TEST_CASE(a_read_on_an_unordered_stream_is_reported_with_tensor_streams_and_ops) {
  SimSettings sim;
  const Stream a = stream_from_pool(dev);
  const Stream b = stream_from_pool(dev);
  BOOST_REQUIRE(a != b);
  Tensor x;
  {
    StreamGuard on_a(a);
    x = kernels::add_scalar(Tensor::zeros({2, 3}, DType::f32, dev), 1.0);
  }
  {
    StreamGuard on_b(b);
    (void)kernels::tanh(x);
  }
  const auto reports = sim::race_reports();
  BOOST_REQUIRE_EQUAL(reports.size(), 1u);
  BOOST_TEST(mentions(reports[0], {"float32[2, 3] on sim:0", "tanh", "add_scalar", a.str().c_str(),
                                   b.str().c_str()}));
  synchronize(a);
  synchronize(b);
}

BOOST_AUTO_TEST_CASE(a_host_read_synchronizes_the_current_stream_only) {
  SimSettings sim;
  const Stream a = stream_from_pool(dev);
  Tensor x;
  {
    StreamGuard on_a(a);
    x = kernels::add_scalar(Tensor::zeros({8}, DType::f64, dev), 1.0);
  }
  // The host reads on the default stream, which knows nothing of `a`.
  (void)x.to_vector();
  auto reports = sim::race_reports();
  BOOST_REQUIRE_EQUAL(reports.size(), 1u);
  BOOST_TEST(mentions(reports[0], {"the host reads", a.str().c_str(), "add_scalar"}));

  sim::clear_race_reports();
  auto y = [&] {
    StreamGuard on_a(a);
    return kernels::add_scalar(x, 1.0);
  }();
  synchronize(a);
  BOOST_TEST(y.to_vector() == std::vector<double>(8, 2.0));
  BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
}

BOOST_AUTO_TEST_CASE(host_synchronize_of_an_event_orders_the_host) {
  SimSettings sim;
  const Stream a = stream_from_pool(dev);
  Tensor x;
  Event e;
  {
    StreamGuard on_a(a);
    x = kernels::add_scalar(Tensor::zeros({8}, DType::f64, dev), 5.0);
    e.record(a);
  }
  e.synchronize();
  BOOST_TEST(e.query());
  BOOST_TEST(x.to_vector() == std::vector<double>(8, 5.0));
  BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
}

BOOST_AUTO_TEST_CASE(a_copy_between_devices_follows_the_source_stream) {
  SimSettings sim(11);
  const Stream a = stream_from_pool(dev);
  Tensor x;
  {
    StreamGuard on_a(a);
    x = kernels::add_scalar(Tensor::zeros({16}, DType::f64, dev), 4.0);
    Tensor y = kernels::to_device(x, Device::sim(1)); // waits for `a`, runs on sim:1's stream
    BOOST_TEST(y.to_vector() == std::vector<double>(16, 4.0));
    BOOST_TEST(kernels::to_device(x, Device::cpu()).to_vector() == std::vector<double>(16, 4.0));
  }
  BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
}

// The copy orders itself after the source device's *current* stream; a
// source written on another stream of that device is read unordered, and
// the detector checks the read although it runs on another device's stream.
BOOST_AUTO_TEST_CASE(a_copy_reading_a_source_its_stream_does_not_follow_is_reported) {
  SimSettings sim;
  const Stream a = Stream(dev, 1);
  Tensor x;
  {
    StreamGuard on_a(a);
    x = kernels::add_scalar(Tensor::zeros({16}, DType::f64, dev), 4.0);
  }
  (void)kernels::to_device(x, Device::sim(1)); // follows sim:0's default stream, not `a`
  const auto reports = sim::race_reports();
  BOOST_REQUIRE_EQUAL(reports.size(), 1u);
  BOOST_TEST(mentions(reports[0], {"input 0 of to_device", "float64[16] on sim:0", "reads",
                                   "sim:1/default", "add_scalar", a.str().c_str()}));
  synchronize(a);
  synchronize(default_stream(Device::sim(1)));
}

// A kernel that overwrites a buffer while another stream may still read it
// (an in-place accumulation, say) is a race too; an event wait orders it.
BOOST_AUTO_TEST_CASE(a_write_after_an_unordered_read_is_reported) {
  SimSettings sim;
  const Stream a = Stream(dev, 1);
  const Stream b = Stream(dev, 2);
  auto x = Tensor::zeros({32}, DType::f64, dev);
  for (Stream s : {a, b})
    Event::recorded_on(default_stream(dev)).block(s);
  {
    StreamGuard on_a(a);
    (void)kernels::tanh(x);
  }
  {
    StreamGuard on_b(b);
    kernels::add_(x, x, 1.0);
  }
  auto reports = sim::race_reports();
  BOOST_REQUIRE_EQUAL(reports.size(), 1u);
  const std::string writer = "add_ on " + b.str() + " writes";
  const std::string reader = "tanh on " + a.str() + " read it";
  BOOST_TEST(mentions(reports[0], {writer.c_str(), reader.c_str(), "after that read"}));

  sim::clear_race_reports();
  Event::recorded_on(b).block(a);
  {
    StreamGuard on_a(a);
    (void)kernels::tanh(x);
  }
  Event::recorded_on(a).block(b);
  {
    StreamGuard on_b(b);
    kernels::add_(x, x, 1.0);
  }
  synchronize(a);
  synchronize(b);
  BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
}

BOOST_AUTO_TEST_CASE(the_detector_is_off_by_default) {
  sim::configure({});
  sim::clear_race_reports();
  const Stream a = stream_from_pool(dev);
  Tensor x;
  {
    StreamGuard on_a(a);
    x = kernels::add_scalar(Tensor::zeros({8}, DType::f64, dev), 1.0);
  }
  synchronize(a);
  (void)kernels::tanh(x);
  synchronize(default_stream(dev));
  BOOST_TEST(sim::race_reports().empty());
  BOOST_TEST(!sim::config().detect_races);
}

BOOST_AUTO_TEST_CASE(streams_and_guards_have_value_semantics) {
  BOOST_TEST(!has_streams(Device::cpu()));
  BOOST_TEST(has_streams(dev));
  BOOST_TEST(current_stream(dev) == default_stream(dev));
  const Stream s = stream_from_pool(dev);
  BOOST_TEST(!s.is_default());
  {
    StreamGuard g(s);
    BOOST_TEST(current_stream(dev) == s);
    BOOST_TEST(current_stream(Device::sim(1)) == default_stream(Device::sim(1)));
  }
  BOOST_TEST(current_stream(dev) == default_stream(dev));
  BOOST_CHECK_THROW(stream_from_pool(Device::cpu()), std::invalid_argument);
  Event never;
  BOOST_TEST(never.query());
  never.block(s); // a never-recorded event orders nothing
}

BOOST_AUTO_TEST_CASE(
  guards_restore_what_their_scope_changed_and_streams_past_the_limit_are_refused) {
  // On a fresh thread, whose current devices and streams start at the
  // defaults; the checks run here, on the test's thread.
  struct Seen {
    bool guard_sets = false, inner_guard_sets = false, device_restored = false,
         stream_restored = false, limit_kept = false, update_kept = false;
    std::string refused;
  } seen;
  std::thread([&seen] {
    const Device d2 = Device::sim(2);
    const Stream s = stream_from_pool(d2);
    {
      StreamGuard g(s);
      seen.guard_sets = current_device(DeviceType::sim) == d2 && current_stream(d2) == s;
      set_current_stream(stream_from_pool(d2)); // changed inside the scope, without a guard
      DeviceGuard other(Device::sim(3));
      seen.inner_guard_sets = current_device(DeviceType::sim) == Device::sim(3);
    }
    seen.device_restored = current_device(DeviceType::sim) == Device::sim(0);
    seen.stream_restored = current_stream(d2) == default_stream(d2);
    for (int i = 0; i < 64; ++i) // one current stream per device, 64 devices a thread
      set_current_stream(Stream(Device::sim(i), 1));
    seen.limit_kept = current_stream(Device::sim(63)) == Stream(Device::sim(63), 1);
    try {
      set_current_stream(Stream(Device::sim(64), 1));
    } catch (const std::length_error& e) {
      seen.refused = e.what();
    }
    set_current_stream(Stream(Device::sim(5), 2)); // a known device is still updated
    seen.update_kept = current_stream(Device::sim(5)) == Stream(Device::sim(5), 2);
  }).join();
  BOOST_TEST(seen.guard_sets);
  BOOST_TEST(seen.inner_guard_sets);
  BOOST_TEST(seen.device_restored);
  BOOST_TEST(seen.stream_restored);
  BOOST_TEST(seen.limit_kept);
  BOOST_TEST(seen.refused.find("sim:64") != std::string::npos, "refused: '" << seen.refused << "'");
  BOOST_TEST(seen.update_kept);
}
