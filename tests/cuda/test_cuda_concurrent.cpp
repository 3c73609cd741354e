#define BOOST_TEST_MODULE cuda_concurrent
#include <boost/test/unit_test.hpp>

// Backward passes from several threads at once on one actor Engine serving
// cuda:0. Each graph crosses between the CPU and cuda:0 four times, and each
// thread runs its forward on a pool stream of its own, so its backward's
// CUDA nodes run on that stream while other threads' run on theirs, the
// gradients hop between the cuda:0 worker and the calling threads with
// their ready events, and freed blocks pass between streams in the caching
// allocator. In every iteration every gradient must equal the one the same
// graph gives on the CPU alone: a missing stream wait shows up as a wrong
// value, a lost message as a hang (ctest's timeout). Exits 77 (skipped)
// without a GPU.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/device/guards.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/require_gpu.h"

using namespace actorgrad;
using namespace actorgrad::testing;

BOOST_TEST_GLOBAL_FIXTURE(RequireGpu);

namespace {

constexpr int threads = 4;
constexpr int iterations = 25;

/// The leaves of one graph: x on the CPU, the weights on `weights_on`.
struct Leaves {
  Tensor x, w1, w2;
};

Leaves leaves(std::uint64_t seed, Device weights_on) {
  const auto leaf = [&](const Tensor& t) {
    Tensor on = weights_on.is_cpu() ? t.detach() : to_gpu(t);
    on.set_requires_grad();
    return on;
  };
  Leaves l;
  l.x = Tensor::randn({64, 32}, seed).set_requires_grad();
  l.w1 = leaf(Tensor::randn({32, 128}, seed + 1));
  l.w2 = leaf(Tensor::randn({128, 16}, seed + 2));
  return l;
}

/// sum(tanh(((relu(x @ w1) on the CPU) * 0.5 + 1) @ w2)), each product on
/// the weights' device: with weights on cuda:0, four device crossings.
Tensor loss_of(const Leaves& l) {
  const Device d = l.w1.device();
  Tensor h = relu(matmul(to_device(l.x, d), l.w1));
  h = to_device(h, Device::cpu()) * 0.5 + 1.0;
  h = tanh(matmul(to_device(h, d), l.w2));
  return sum(to_device(h, Device::cpu()));
}

/// worst_difference, infinite for a missing gradient, another shape, or
/// any NaN (the CPU graph's gradients have none).
double gradient_difference(const Tensor& got, const Tensor& want) {
  if (!got.defined() || got.shape() != want.shape() || kernels::any_nan(want))
    return INFINITY;
  return worst_difference(got, want);
}

/// What one thread saw (Boost.Test's assertions are for the main thread).
struct Outcome {
  double worst = 0.0;
  int iterations_done = 0;
  std::string error;
};

void run_thread(Engine& engine, std::uint64_t seed, Outcome& out) {
  try {
    const Leaves want = leaves(seed, Device::cpu());
    backward({loss_of(want)}, {}, engine);
    StreamGuard own_stream(stream_from_pool(gpu));
    for (int i = 0; i < iterations; ++i) {
      const Leaves got = leaves(seed, gpu);
      backward({loss_of(got)}, {}, engine);
      out.worst = std::max({out.worst, gradient_difference(got.x.grad(), want.x.grad()),
                            gradient_difference(got.w1.grad(), want.w1.grad()),
                            gradient_difference(got.w2.grad(), want.w2.grad())});
      ++out.iterations_done;
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
}

} // namespace

BOOST_AUTO_TEST_CASE(threads_on_their_own_streams_get_the_cpu_gradients) {
  check_frees_its_memory([] {
    EngineConfig config;
    config.devices = {gpu};
    Engine engine(config);
    std::vector<Outcome> outcomes(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back(run_thread, std::ref(engine), 100 * (t + 1), std::ref(outcomes[t]));
    for (auto& th : pool)
      th.join();
    for (int t = 0; t < threads; ++t) {
      BOOST_TEST_CONTEXT("thread " << t) {
        BOOST_TEST(outcomes[t].error == "");
        BOOST_TEST(outcomes[t].iterations_done == iterations);
        BOOST_TEST(outcomes[t].worst <= tolerance(DType::f64));
      }
    }
  });
}
