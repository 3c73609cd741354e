#define BOOST_TEST_MODULE stress_remote_kill
#include <boost/test/unit_test.hpp>

// Stress: a worker process is killed (SIGKILL) at a random point of the
// backward part it runs, while another context keeps using the surviving
// worker. The caller's dist_backward must fail within 2 s of the kill with
// an error naming the dead worker; the concurrent context is unaffected;
// the next backward, across the survivor and a fresh worker, gives the
// single-process gradients. Rounds for the time budget
// (ACTORGRAD_STRESS_SECONDS; 10 s by default, at least 2 rounds). Needs
// ACTORGRAD_BIN (set by ctest).

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <random>
#include <string>
#include <thread>

#include "actorgrad/actors/remote/dist_context.h"
#include "actorgrad/libengine/ops.h"
#include "tests/distributed/dist_test_util.h"
#include "tests/distributed/worker_process.h"
#include "tests/stress/stress_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

const Seconds kErrorLimit{2}; ///< from the kill to the caller's error
const Seconds kHangLimit{30}; ///< beyond this a backward is stuck

/// testing::two_layer_difference across `a` and `c`, with parameter
/// names unique to `seed`: "" when it is within 1e-12.
std::string two_worker_backward(remote::Runtime& rt, const remote::RemoteWorker& a,
                                const remote::RemoteWorker& c, std::uint64_t seed) {
  const double d = testing::two_layer_difference(rt, a, c, seed, "W" + std::to_string(seed),
                                                 "V" + std::to_string(seed));
  return d <= 1e-12 ? "" : "gradients differ from the single-process run by " + std::to_string(d);
}

/// A marker file path unique to this process and round.
std::string marker_path(int round) {
  return (std::filesystem::temp_directory_path() /
          ("actorgrad_stress_kill_" + std::to_string(::getpid()) + "_" + std::to_string(round)))
    .string();
}

} // namespace

BOOST_AUTO_TEST_SUITE(stress)

BOOST_AUTO_TEST_CASE(worker_killed_during_distributed_backward) {
  const Seconds length = budget(10);
  const auto deadline = after(length);
  std::mt19937_64 rng(99);
  WorkerProcess wa;
  remote::Runtime rt;
  auto a = rt.connect("127.0.0.1", wa.port());
  int rounds = 0, concurrent_ok = 0;
  double slowest = 0;
  for (; rounds < 2 || Clock::now() < deadline; ++rounds) {
    BOOST_TEST_CONTEXT("round " << rounds) {
      WorkerProcess wb;
      auto b = rt.connect("127.0.0.1", wb.port());
      a.create_param("W1", Tensor::randn({4, 8}, 1));
      b.create_param("W2", Tensor::randn({8, 2}, 2));
      const std::string marker = marker_path(rounds);
      std::filesystem::remove(marker);
      const double slow_ms = 200 + static_cast<double>(rng() % 300);

      // Meanwhile another thread keeps running contexts on the survivor only.
      std::atomic<bool> stop{false};
      auto others = std::async(std::launch::async, [&] {
        int ok = 0;
        for (std::uint64_t i = 0; !stop; ++i, ++ok)
          if (auto r = two_worker_backward(rt, a, a, 100 + i); !r.empty())
            throw std::runtime_error("survivor-only context: " + r);
        return ok;
      });

      std::string message;
      double seconds = -1;
      {
        remote::DistContext ctx(rt);
        Tensor x = Tensor::randn({3, 4}, 3).set_requires_grad();
        Tensor h = remote::remote_call(ctx, a, "linear", {x}, {{"W1"}})[0];
        // B's backward part writes the marker, then sleeps slow_ms.
        h = remote::remote_call(ctx, b, "test.slow_backward", {h}, {{}, {slow_ms}, marker})[0];
        h = remote::remote_call(ctx, b, "linear", {h}, {{"W2"}})[0];
        Tensor loss = mean(mul(h, h));
        auto backward = std::async(std::launch::async, [&] { remote::dist_backward(ctx, {loss}); });
        const auto started = Clock::now() + std::chrono::seconds(10);
        while (!std::filesystem::exists(marker) && Clock::now() < started)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        BOOST_TEST_REQUIRE(std::filesystem::exists(marker), "B never started its backward part");
        // Somewhere in the first half of B's part.
        const auto half_us = static_cast<std::uint64_t>(slow_ms * 500);
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % half_us));
        const auto killed = Clock::now();
        wb.kill();
        if (backward.wait_for(kHangLimit) != std::future_status::ready)
          exit_on_hang("dist_backward still running " + std::to_string(int(kHangLimit.count())) +
                       " s after its worker " + wb.name() + " was killed");
        seconds = Seconds(Clock::now() - killed).count();
        try {
          backward.get();
        } catch (const remote::DistError& e) {
          message = e.what();
        }
        std::filesystem::remove(marker);
      }
      stop = true;
      slowest = std::max(slowest, seconds);
      BOOST_TEST(!message.empty(), "dist_backward succeeded although its worker was killed");
      BOOST_TEST(contains(message, wb.name()), message);
      BOOST_TEST(seconds < kErrorLimit.count(),
                 "the error came " << seconds << " s after the kill");
      if (others.wait_for(kHangLimit) != std::future_status::ready)
        exit_on_hang("a survivor-only context after " + wb.name() + " was killed");
      try {
        concurrent_ok += others.get();
      } catch (const std::exception& e) {
        BOOST_ERROR(e.what());
      }

      // The next backward, on the survivor and a fresh worker, works.
      WorkerProcess wc;
      auto c = rt.connect("127.0.0.1", wc.port());
      BOOST_TEST(two_worker_backward(rt, a, c, 10 + rounds) == "");
    }
  }
  BOOST_TEST_MESSAGE(rounds << " rounds: slowest error " << slowest << " s after the kill; "
                            << concurrent_ok << " survivor-only contexts right meanwhile");
  BOOST_TEST(rt.stats().contexts == 0u);
  BOOST_TEST(a.stats().contexts == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
