#define BOOST_TEST_MODULE actors_concurrency
#include <boost/test/unit_test.hpp>

// Many threads calling one Engine at once: separate graphs, one shared graph
// with retain_graph (grad() checked per call), and backward() accumulating
// into a shared leaf. Graphs cross sim devices in some iterations. Every
// wait is bounded: a deadlock fails the test instead of hanging CI.

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/reference_executor.h"
#include "tests/actors/actor_test_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

constexpr int kThreads = 8;
constexpr int kIterations = 1000;
constexpr auto kLimit = std::chrono::seconds(60);

/// The engine of this test binary: created and destroyed by the global
/// fixture, inside main. (A static Engine destroyed by exit() crashes in
/// ~actor_system after an async call from the main thread: see the report.)
/// Runs `body(thread_index)` on kThreads threads at once (released
/// together) and waits at most kLimit for all. A deadlock ends the process
/// with a message (a test stuck in a join would hang CI). Exceptions of the
/// threads are rethrown. Returns the wall time in seconds.
template <class Body>
double run_threads(Body body) {
  std::promise<void> go;
  std::shared_future<void> start = go.get_future().share();
  std::vector<std::future<void>> done;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    std::packaged_task<void()> pt([&body, start, t] {
      start.wait();
      body(t);
    });
    done.push_back(pt.get_future());
    threads.emplace_back(std::move(pt));
  }
  const auto t0 = std::chrono::steady_clock::now();
  go.set_value();
  const auto deadline = t0 + kLimit;
  for (auto& f : done)
    if (f.wait_until(deadline) != std::future_status::ready) {
      std::cerr << "FATAL: concurrent backward calls did not finish within " << kLimit.count()
                << " s (deadlock?)" << std::endl;
      std::_Exit(3);
    }
  for (auto& th : threads)
    th.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& f : done)
    f.get();
  return secs;
}

/// Device of iteration `i` of thread `t`: cpu, or one of the sim devices.
Device device_for(int t, int i) {
  switch ((t + i) % 4) {
  case 0: return Device::cpu();
  default: return Device::sim((t + i) % 3);
  }
}

std::string show(const std::vector<double>& v) {
  std::ostringstream os;
  for (double x : v)
    os << x << " ";
  return os.str();
}

} // namespace

using SharedEngineFixture = SharedEngine<3>;
BOOST_TEST_GLOBAL_FIXTURE(SharedEngineFixture);

// 8 threads x 1,000 backward calls, each on its own graph; every other
// iteration the graph crosses from the cpu to a sim device and back.
BOOST_AUTO_TEST_CASE(separate_graphs_in_parallel) {
  Engine& eng = engine();
  std::atomic<int> wrong{0}, crossing{0};
  std::string first_wrong;
  std::atomic<bool> reported{false};

  double secs = run_threads([&](int t) {
    ReferenceExecutor reference;
    for (int i = 0; i < kIterations; ++i) {
      const Device d = device_for(t, i);
      const std::uint64_t seed = static_cast<std::uint64_t>(t * 100000 + i);
      Tensor x = Tensor::uniform({2, 2}, -1, 1, seed).set_requires_grad(true);
      Tensor w = Tensor::uniform({2, 2}, -1, 1, seed + 7, DType::f64, d).set_requires_grad(true);
      // x (cpu) -> d: h = tanh(x_d @ w) * w ; loss on cpu: sum(h) + sum(sigmoid(x))
      Tensor xd = x.to(d);
      Tensor h = mul(tanh(matmul(xd, w)), w);
      Tensor loss = add(sum(h.to(Device::cpu())), sum(sigmoid(x)));
      if (!d.is_cpu())
        crossing.fetch_add(1, std::memory_order_relaxed);

      auto expected = grad({loss}, {x, w}, {.retain_graph = true}, reference);
      variable_list got;
      if (i % 2 == 0) {
        got = grad({loss}, {x, w}, {}, eng);
      } else { // backward() into the leaves' .grad
        backward({loss}, {}, eng);
        got = {x.grad(), w.grad()};
      }
      bool ok = got.size() == 2;
      for (std::size_t k = 0; ok && k < 2; ++k)
        ok = got[k].defined() && got[k].device() == expected[k].device() &&
             bitwise_equal(got[k].to_vector(), expected[k].to_vector());
      if (!ok) {
        wrong.fetch_add(1);
        if (!reported.exchange(true)) {
          std::ostringstream os;
          os << "thread " << t << " iteration " << i << " on " << d.str() << ": expected "
             << show(expected[0].to_vector()) << "| " << show(expected[1].to_vector()) << " got "
             << (got.size() == 2 && got[0].defined() ? show(got[0].to_vector()) : "?");
          first_wrong = os.str();
        }
      }
    }
  });
  BOOST_TEST_MESSAGE("separate graphs: " << kThreads * kIterations << " calls in " << secs << " s");
  BOOST_TEST(wrong.load() == 0, first_wrong);
  BOOST_TEST(crossing.load() > kThreads * kIterations / 2);
}

namespace {

/// A graph shared by every thread: x (cpu leaf), v (sim:1 leaf); branches
/// on sim:0, sim:1 and cpu meet on cpu. Its gradients are small dyadic
/// numbers (exact in float64 even when added 8,000 times).
struct SharedGraph {
  Tensor x = Tensor::from_vector({0.5, -1.25, 2.0, 0.75}, {2, 2}).set_requires_grad(true);
  Tensor v =
    Tensor::from_vector({1.5, -0.5}, {2}, DType::f64, Device::sim(1)).set_requires_grad(true);
  Tensor w0 = Tensor::from_vector({0.25, 0.5, -0.75, 1.0}, {2, 2}, DType::f64, Device::sim(0));
  Tensor w1 = Tensor::from_vector({-0.125, 0.375}, {2}, DType::f64, Device::sim(1));
  Tensor w2 = Tensor::from_vector({2.0, -1.0, 0.5, 0.25}, {2, 2});
  Tensor loss;

  SharedGraph() {
    Tensor a = sum(mul(x.to(Device::sim(0)), w0)).to(Device::cpu()); // d/dx = w0
    Tensor xv = sum(x, {0}, false).to(Device::sim(1));               // [2] on sim:1
    Tensor b = sum(add(mul(xv, w1), mul(v, w1))).to(Device::cpu());  // d/dx = w1 per col, d/dv = w1
    Tensor c = sum(mul(x, w2));                                      // d/dx = w2
    loss = add(add(a, b), c);
  }
  std::vector<double> expected_x() const {
    auto a = w0.to_vector(), c = w2.to_vector(), b = w1.to_vector();
    return {a[0] + b[0] + c[0], a[1] + b[1] + c[1], a[2] + b[0] + c[2], a[3] + b[1] + c[3]};
  }
  std::vector<double> expected_v() const { return w1.to_vector(); }
};

} // namespace

// 8 threads x 1,000 grad() calls on ONE graph (retain_graph): every result
// is checked; nodes on sim:0 and sim:1 are run by the shared workers for
// several GraphTasks at once.
BOOST_AUTO_TEST_CASE(shared_graph_grad_retain_graph) {
  Engine& eng = engine();
  SharedGraph g;
  const auto ex = g.expected_x();
  const auto ev = g.expected_v();
  std::atomic<int> wrong{0};
  double secs = run_threads([&](int) {
    for (int i = 0; i < kIterations; ++i) {
      auto r = grad({g.loss}, {g.x, g.v}, {.retain_graph = true}, eng);
      if (r.size() != 2 || !r[0].defined() || !r[1].defined() || r[1].device() != Device::sim(1) ||
          r[0].to_vector() != ex || r[1].to_vector() != ev)
        wrong.fetch_add(1);
    }
  });
  BOOST_TEST_MESSAGE("shared graph grad(): " << kThreads * kIterations << " calls in " << secs
                                             << " s");
  BOOST_TEST(wrong.load() == 0);
  BOOST_TEST(!g.x.grad().defined()); // grad() leaves .grad alone
}

// The same with backward(): 8,000 calls accumulate into the shared leaves
// x (cpu: accumulated by the 8 callers' threads at once) and v (sim:1: by
// its worker). The final .grad is exactly 8,000 times one gradient.
BOOST_AUTO_TEST_CASE(shared_graph_backward_accumulates_into_shared_leaf) {
  Engine& eng = engine();
  SharedGraph g;
  auto ex = g.expected_x();
  auto ev = g.expected_v();
  double secs = run_threads([&](int) {
    for (int i = 0; i < kIterations; ++i)
      backward({g.loss}, {.retain_graph = true}, eng);
  });
  BOOST_TEST_MESSAGE("shared graph backward(): " << kThreads * kIterations << " calls in " << secs
                                                 << " s");
  const double n = kThreads * kIterations;
  for (auto& e : ex)
    e *= n;
  for (auto& e : ev)
    e *= n;
  BOOST_REQUIRE(g.x.grad().defined());
  BOOST_REQUIRE(g.v.grad().defined());
  BOOST_TEST(g.x.grad().to_vector() == ex, boost::test_tools::per_element());
  BOOST_TEST(g.v.grad().to_vector() == ev, boost::test_tools::per_element());
  BOOST_TEST((g.v.grad().device() == Device::sim(1)));
}

// 8 threads x 1,000 grad() calls on ONE cpu graph of diamonds, whose nodes
// the dependency pass meets twice each: the calls number the same nodes at
// once and rewrite one another's hints (Note [Node table hints]), so some
// must number the graph again through the index, and lookups fall back to
// it. Every result is exact.
BOOST_AUTO_TEST_CASE(shared_cpu_graph_numbered_by_many_calls_at_once) {
  Engine& eng = engine();
  Tensor x = Tensor::from_vector({0.5, -1.25}, {2}).set_requires_grad(true);
  Tensor y = x;
  for (int k = 0; k < 16; ++k)
    y = add(mul(y, 0.25), mul(y, 0.75));
  const Tensor loss = sum(y);
  std::atomic<int> wrong{0};
  run_threads([&](int) {
    for (int i = 0; i < kIterations; ++i) {
      auto r = grad({loss}, {x}, {.retain_graph = true}, eng);
      if (r.size() != 1 || !r[0].defined() || r[0].to_vector() != std::vector<double>{1, 1})
        wrong.fetch_add(1);
    }
  });
  BOOST_TEST(wrong.load() == 0);
}

// Two calls at once on one graph without retain_graph (Note [Saved
// variables of a graph run twice at once]). Each gets the gradient or fails
// with PyTorch's "a second time" error, when the other call released the
// saved tensors first; at least one of each pair gets it. This used to
// crash (a saved tensor copied on one thread while the other reset it).
BOOST_AUTO_TEST_CASE(shared_graph_without_retain_graph_run_by_two_calls_at_once) {
  Engine& eng = engine();
  const std::vector<double> at{0.5, -1.25, 2.0};
  std::vector<double> expected; // d/dx of sum(x * tanh(x * x))
  for (double v : at) {
    const double t = std::tanh(v * v);
    expected.push_back(t + 2.0 * v * v * (1.0 - t * t));
  }
  int got = 0, second_time = 0;
  std::vector<std::string> other;
  for (int round = 0; round < 2000; ++round) {
    const Device d = round % 2 ? Device::sim(1) : Device::cpu();
    Tensor x = Tensor::from_vector(at, {3}, DType::f64, d).set_requires_grad(true);
    const Tensor loss = sum(mul(tanh(mul(x, x)), x)); // every node saves tensors
    std::atomic<int> arrived{0};
    std::array<std::string, 2> outcome;
    auto call = [&](int k) {
      arrived.fetch_add(1);
      while (arrived.load() < 2) {
      }
      try {
        const auto g = grad({loss}, {x}, {}, eng).at(0).to(Device::cpu()).to_vector();
        outcome[k] = close(g, expected, 1e-12) ? "gradient" : "wrong gradient " + show(g);
      } catch (const std::exception& e) {
        outcome[k] = std::string(e.what()).find("a second time") != std::string::npos
                       ? "second time"
                       : e.what();
      }
    };
    std::thread a(call, 0), b(call, 1);
    a.join();
    b.join();
    for (const auto& o : outcome)
      if (o == "gradient")
        ++got;
      else if (o == "second time")
        ++second_time;
      else
        other.push_back(d.str() + ": " + o);
    if (outcome[0] != "gradient" && outcome[1] != "gradient")
      other.push_back(d.str() + ": neither call got the gradient");
  }
  BOOST_TEST_MESSAGE(got << " calls got the gradient, " << second_time << " failed a second time");
  BOOST_TEST(other.empty(), other.size() << " unexpected outcomes, first: "
                                         << (other.empty() ? std::string() : other.front()));
}

// Synchronous and asynchronous calls mixed on the shared graph.
BOOST_AUTO_TEST_CASE(sync_and_async_calls_mixed) {
  Engine& eng = engine();
  SharedGraph g;
  const auto ex = g.expected_x();
  std::atomic<int> wrong{0};
  run_threads([&](int t) {
    for (int i = 0; i < kIterations / 4; ++i) {
      variable_list r;
      if ((t + i) % 2) {
        auto f = eng.grad_async({g.loss}, {g.x}, {.retain_graph = true});
        if (f.wait_for(kWaitLimit) != std::future_status::ready) {
          std::cerr << "FATAL: grad_async did not complete" << std::endl;
          std::_Exit(3);
        }
        r = f.get();
      } else {
        r = grad({g.loss}, {g.x}, {.retain_graph = true}, eng);
      }
      if (r.size() != 1 || !r[0].defined() || r[0].to_vector() != ex)
        wrong.fetch_add(1);
    }
  });
  BOOST_TEST(wrong.load() == 0);
}
