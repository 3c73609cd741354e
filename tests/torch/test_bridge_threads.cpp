/// @file test_bridge_threads.cpp
/// Concurrent callers on the torch bridge: 8 threads x 200 backward/grad
/// calls on separate models at once, every gradient bitwise equal to the
/// stock engine's (computed before, one call at a time); time-bounded, so a
/// hang fails the test instead of blocking it.

#define BOOST_TEST_MODULE torch_bridge_threads
#include "tests/support/torch_diff.h" // libtorch, then Boost.Test

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>

namespace {

constexpr int kThreads = 8;
constexpr int kCalls = 200;
const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);

/// One thread's model (two layers and a shared bias) and its inputs.
struct Model {
  torch::Tensor w1, w2, b;
  std::vector<torch::Tensor> inputs;
};

Model make_model(int seed) {
  torch::manual_seed(seed);
  Model m{torch::randn({6, 8}, f64).requires_grad_(true),
          torch::randn({8, 1}, f64).requires_grad_(true),
          torch::randn({8}, f64).requires_grad_(true),
          {}};
  for (int i = 0; i < kCalls; ++i)
    m.inputs.push_back(torch::randn({4, 6}, f64));
  return m;
}

/// Call `i` on `m`: backward() on even calls, grad() on odd ones; returns
/// the parameters' gradients.
actorgrad::testing::Results call(Model& m, int i) {
  const auto& x = m.inputs[i];
  auto h = torch::tanh(x.mm(m.w1) + m.b);
  auto loss = (torch::relu(h + m.b).mm(m.w2)).pow(2).mean() + h.sum() * 1e-3;
  if (i % 2 == 1)
    return torch::autograd::grad({loss}, {m.w1, m.w2, m.b});
  for (auto* p : {&m.w1, &m.w2, &m.b})
    p->mutable_grad() = torch::Tensor();
  loss.backward();
  return actorgrad::testing::grads_of({m.w1, m.w2, m.b});
}

} // namespace

BOOST_AUTO_TEST_CASE(eight_threads_times_200_calls_equal_to_stock) {
  at::set_num_threads(1); // intra-op threads: the callers are the parallelism here
  std::vector<Model> models;
  std::vector<std::vector<actorgrad::testing::Results>> expected(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    models.push_back(make_model(100 + t));
    for (int i = 0; i < kCalls; ++i)
      expected[t].push_back(call(models[t], i));
  }

  actorgrad::torch::Scope scope(actorgrad::testing::bridge_config());
  const auto calls_before = actorgrad::torch::stats().calls;
  std::atomic<int> mismatches{0}; // written by the workers, read after they end
  std::atomic<int> errors{0};
  std::vector<std::future<void>> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.push_back(std::async(std::launch::async, [&, t] {
      try {
        for (int i = 0; i < kCalls; ++i) {
          auto got = call(models[t], i);
          for (std::size_t k = 0; k < got.size(); ++k)
            if (!torch::equal(got[k], expected[t][i][k]))
              mismatches.fetch_add(1);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "thread %d: %s\n", t, e.what());
        errors.fetch_add(1);
      }
    }));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (auto& w : workers)
    if (w.wait_until(deadline) != std::future_status::ready) {
      std::fprintf(stderr, "FAILED: 8 threads x 200 calls did not finish within 120 s (hang)\n");
      std::_Exit(1); // the workers cannot be joined
    }
  BOOST_CHECK_EQUAL(errors.load(), 0);
  BOOST_CHECK_EQUAL(mismatches.load(), 0);
  BOOST_CHECK_EQUAL(actorgrad::torch::stats().calls - calls_before,
                    static_cast<std::uint64_t>(kThreads * kCalls));
}
