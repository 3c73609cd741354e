#define BOOST_TEST_MODULE stress_worker_kills
#include <boost/test/unit_test.hpp>

// Stress: device workers are killed (an exit message, as in
// tests/actors/test_faults.cpp) while synchronous and asynchronous calls
// whose nodes run nested backward calls (reentrant, past the recursion
// limit; on the node's device, or from the cpu across to the devices) are
// running on them. Every call either returns the right
// gradients, with every nested call right, or fails with an EngineError
// naming the killed device's worker; no call may hang (each is bounded);
// afterwards the engine serves every device again. Time-bounded
// (ACTORGRAD_STRESS_SECONDS per case; 8 s by default).

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/custom_function.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/ops.h"
#include "tests/stress/stress_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

const Seconds kCallLimit{30};    ///< one call (TSan builds are slow)
const Seconds kReplaceLimit{10}; ///< a killed worker's replacement
const Device kSim0 = Device::sim(0), kSim1 = Device::sim(1);
constexpr int kSimLevels = 3;     ///< nested calls under each sim branch
constexpr int kCallsPerRound = 4; ///< half synchronous, half grad_async

using Counter = std::shared_ptr<std::atomic<int>>;

/// Identity in forward; its backward checks one nested backward of depth
/// `levels - 1` on `nested_on` (d/dz sum(3 * F(z)) == 3) and counts it in
/// `ok` when right. `levels` = n runs n nested calls.
variable_list reentrant(const Tensor& x, int levels, Device nested_on, Counter ok) {
  auto forward = [levels, nested_on, ok](FunctionContext& ctx, const variable_list& in) {
    ctx.saved_data["levels"] = levels;
    ctx.saved_data["on"] = nested_on;
    ctx.saved_data["ok"] = ok;
    return variable_list{in[0].detach()};
  };
  auto backward = [](FunctionContext& ctx, const variable_list& g) {
    const int n = std::any_cast<int>(ctx.saved_data["levels"]);
    const auto on = std::any_cast<Device>(ctx.saved_data["on"]);
    auto ok = std::any_cast<Counter>(ctx.saved_data["ok"]);
    std::this_thread::sleep_for(std::chrono::microseconds(200)); // a wider window for kills
    if (n > 0) {
      AutoGradMode enable(true);
      Tensor z = Tensor::ones({2}, DType::f64, on).set_requires_grad();
      Tensor dz = grad({sum(mul(reentrant(z, n - 1, on, ok)[0], 3.0))}, {z})[0];
      if (dz.to_vector() == std::vector<double>{3.0, 3.0})
        ok->fetch_add(1);
    }
    return variable_list{g[0]};
  };
  return apply_custom_function("ReentrantBackward", {x}, forward, backward);
}

/// A call's graph: reentrant branches on sim:0 and sim:1 (kSimLevels deep,
/// nested calls on the same device) and two on the cpu whose nested calls
/// run on the cpu or, with `cross`, cross to sim:0 and to sim:1 (so a nested
/// call's coordinator watches a worker that the outer call still needs after
/// the nested call is done); d loss / d x = 2 + 3 + 1 + 1 per element.
struct Call {
  Counter ok = std::make_shared<std::atomic<int>>(0);
  Tensor x = Tensor::from_vector({1, 2}, {2}).set_requires_grad();
  Tensor loss;
  static constexpr int kNested = 2 * kSimLevels + 2;

  explicit Call(bool cross) {
    Tensor a = reentrant(x.to(kSim0), kSimLevels, kSim0, ok)[0];
    Tensor b = reentrant(x.to(kSim1), kSimLevels, kSim1, ok)[0];
    Tensor c0 = reentrant(x, 1, cross ? kSim0 : Device::cpu(), ok)[0];
    Tensor c1 = reentrant(x, 1, cross ? kSim1 : Device::cpu(), ok)[0];
    Tensor on_sims = add(sum(mul(a, 2.0)).to(Device::cpu()), sum(mul(b, 3.0)).to(Device::cpu()));
    loss = add(on_sims, add(sum(c0), sum(c1)));
  }
  /// "" when `g` and the nested calls are right.
  std::string check(const variable_list& g) const {
    if (g.size() != 1 || !g[0].defined() || g[0].to_vector() != std::vector<double>{7.0, 7.0})
      return "wrong gradient";
    if (ok->load() != kNested)
      return std::to_string(ok->load()) + " of " + std::to_string(kNested) + " nested calls right";
    return {};
  }
};

/// One call in flight: synchronous (on its own thread) or grad_async.
struct InFlight {
  std::shared_ptr<Call> call;
  std::future<variable_list> result;
  std::thread thread; ///< the synchronous caller, if any
};

InFlight start_call(Engine& eng, bool cross, bool async) {
  InFlight f;
  f.call = std::make_shared<Call>(cross);
  auto call = f.call;
  if (async) {
    f.result = eng.grad_async({call->loss}, {call->x});
  } else {
    std::packaged_task<variable_list()> task(
      [call, &eng] { return grad({call->loss}, {call->x}, {}, eng); });
    f.result = task.get_future();
    f.thread = std::thread(std::move(task));
  }
  return f;
}

/// Waits for `f` until `limit`: false on a timeout (hung() set, its
/// thread detached), else true with its thread joined.
bool settle(InFlight& f, Clock::time_point limit) {
  const bool ready = f.result.wait_until(limit) == std::future_status::ready;
  if (!ready)
    hung() = true;
  if (f.thread.joinable())
    ready ? f.thread.join() : f.thread.detach();
  return ready;
}

/// Waits (bounded) until `eng` serves `d` with another worker than `before`.
bool replaced(Engine& eng, Device d, const caf::actor& before) {
  const auto deadline = after(kReplaceLimit);
  while (eng.worker(d) == before) {
    if (Clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

/// How long one round's calls take without a kill: the median of a few
/// rounds (each must be right, or `failures` says so). A TSan build runs
/// them ~10-50x slower than a release build.
Seconds unkilled_round_time(Engine& eng, bool cross, Failures& failures) {
  std::vector<double> times;
  for (int r = 0; r < 5; ++r) {
    const auto start = Clock::now();
    std::vector<InFlight> calls;
    for (int k = 0; k < kCallsPerRound; ++k)
      calls.push_back(start_call(eng, cross, k % 2 == 1));
    for (auto& f : calls) {
      if (!settle(f, after(kCallLimit))) {
        failures.add("a call without kills gave no result within " +
                     std::to_string(int(kCallLimit.count())) + " s (hang)");
        continue;
      }
      try {
        if (auto d = f.call->check(f.result.get()); !d.empty())
          failures.add("a call without kills returned, but " + d);
      } catch (const std::exception& e) {
        failures.add(std::string("a call without kills failed: ") + e.what());
      }
    }
    times.push_back(Seconds(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return Seconds(times[times.size() / 2]);
}

/// Rounds of kCallsPerRound calls, each round killing one worker while
/// they run, until the time budget is spent; then fresh calls.
///
/// The kill comes at a random point within twice the time the round's
/// calls take without one (at least 3 ms), measured first: so in any build
/// (TSan's too, where a call takes tens of ms) some calls finish before
/// the kill and some are hit by it, and both are asserted.
void run_kills(bool cross) {
  EngineConfig config{{kSim0, kSim1}};
  config.max_recursion_depth = 2; // nested calls also take fresh stacks
  auto eng = std::make_unique<Engine>(config);
  Failures failures;
  const Seconds round_time = unkilled_round_time(*eng, cross, failures);
  const auto kill_window_us =
    std::max<std::uint64_t>(3000, static_cast<std::uint64_t>(2e6 * round_time.count()));
  const Seconds length = budget(8);
  const auto deadline = after(length);
  const auto began = Clock::now();
  std::mt19937_64 rng(2024);
  int rounds = 0, succeeded = 0, failed_naming_device = 0;

  while ((rounds < 5 || Clock::now() < deadline) && !hung()) {
    const Device victim = rounds % 2 ? kSim1 : kSim0;
    const caf::actor before = eng->worker(victim);
    std::vector<InFlight> calls;
    for (int k = 0; k < kCallsPerRound; ++k)
      calls.push_back(start_call(*eng, cross, k % 2 == 1));
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % kill_window_us));
    caf::anon_send_exit(before, caf::exit_reason::kill);
    const auto round_limit = after(kCallLimit);
    for (int k = 0; k < kCallsPerRound; ++k) {
      auto& f = calls[k];
      const std::string what = "round " + std::to_string(rounds) +
                               (k % 2 ? " grad_async" : " grad") + " (" + victim.str() + " killed)";
      if (!settle(f, round_limit)) {
        failures.add(what + ": no result " + std::to_string(int(kCallLimit.count())) +
                     " s after the kill (hang)");
        continue;
      }
      try {
        if (auto d = f.call->check(f.result.get()); !d.empty())
          failures.add(what + ": returned, but " + d);
        else
          ++succeeded;
      } catch (const EngineError& e) {
        const std::string m = e.what();
        if (contains(m, victim.str()) && contains(m, "worker"))
          ++failed_naming_device;
        else
          failures.add(what + ": error not naming the killed worker: " + m);
      } catch (const std::exception& e) {
        failures.add(what + ": not an EngineError: " + e.what());
      }
    }
    if (!hung() && !replaced(*eng, victim, before))
      failures.add("round " + std::to_string(rounds) + ": the worker of " + victim.str() +
                   " was not replaced within " + std::to_string(int(kReplaceLimit.count())) + " s");
    ++rounds;
  }
  const double elapsed = Seconds(Clock::now() - began).count();
  BOOST_TEST_MESSAGE(rounds << " rounds of " << kCallsPerRound << " calls: " << succeeded
                            << " right, " << failed_naming_device
                            << " failed naming the killed worker; a round without kills takes "
                            << round_time.count() * 1e3 << " ms, kills within "
                            << kill_window_us / 1e3 << " ms of its start, one every "
                            << elapsed / std::max(rounds, 1) * 1e3 << " ms");
  BOOST_TEST(failures.count() == 0, failures.count() << " failures; first:\n" << failures.text());
  if (hung()) {
    (void)eng.release(); // its destructor would wait for the stuck calls
    return;
  }
  BOOST_TEST(succeeded > 0);
  BOOST_TEST(failed_naming_device > 0, "no kill ever hit a running call");

  // The engine serves every device again: a fresh call is right.
  for (int k = 0; k < 2; ++k) {
    InFlight f = start_call(*eng, cross, k == 1);
    if (!settle(f, after(kCallLimit))) {
      (void)eng.release();
      BOOST_FAIL("a call after the kills hung");
    }
    BOOST_TEST(f.call->check(f.result.get()) == "");
  }
}

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(ExitAfterHang);

BOOST_AUTO_TEST_SUITE(stress)

BOOST_AUTO_TEST_CASE(killed_workers_under_same_device_reentrant_calls) { run_kills(false); }

// Runs last: on a hang its engine and calls are left behind.
BOOST_AUTO_TEST_CASE(killed_workers_under_cpu_to_device_reentrant_calls) { run_kills(true); }

BOOST_AUTO_TEST_SUITE_END()
