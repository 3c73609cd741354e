/// @file test_bridge_cuda.cpp
/// The torch bridge on CUDA tensors: a call whose graph reaches a CUDA
/// device goes to libtorch's stock engine whole (install.h), counted in
/// Stats::delegated, with the stock gradients. Exits 77 (skipped) when
/// libtorch sees no CUDA device; Debian's libtorch 1.13 is built without
/// CUDA, so with it this test always skips.

#define BOOST_TEST_MODULE torch_bridge_cuda
#include "tests/support/torch_diff.h" // libtorch, then Boost.Test

#include <cstdio>
#include <cstdlib>

namespace {

struct RequireTorchCuda {
  RequireTorchCuda() {
    if (torch::cuda::is_available())
      return;
    std::puts("libtorch sees no CUDA device: skipped");
    std::fflush(stdout);
    std::exit(77);
  }
};
BOOST_TEST_GLOBAL_FIXTURE(RequireTorchCuda);

const auto cuda64 = torch::TensorOptions().dtype(torch::kFloat64).device(torch::kCUDA);

/// A CUDA MLP's backward and a graph that crosses from CPU to CUDA: both
/// delegated, none run on actors, gradients as with the stock engine.
actorgrad::testing::Results cuda_graphs() {
  torch::manual_seed(3);
  auto w = torch::randn({8, 8}, cuda64).requires_grad_(true);
  auto x = torch::randn({4, 8}, cuda64);
  torch::tanh(x.mm(w)).sum().backward();
  auto c = torch::randn({8}, torch::kFloat64).requires_grad_(true);
  (c.to(torch::kCUDA) * 2.0).sum().backward();
  return actorgrad::testing::grads_of({w, c});
}

} // namespace

BOOST_AUTO_TEST_CASE(cuda_calls_are_delegated_whole) {
  const auto stock = cuda_graphs();
  actorgrad::torch::Scope scope;
  const auto before = actorgrad::torch::stats();
  const auto ours = cuda_graphs();
  const auto after = actorgrad::torch::stats();
  BOOST_CHECK_EQUAL(after.delegated - before.delegated, 2u);
  BOOST_CHECK_EQUAL(after.calls, before.calls);
  actorgrad::testing::check_equal(stock, ours);
}
