#define BOOST_TEST_MODULE cuda_mlp
#include <boost/test/unit_test.hpp>

// The MLP of the `actorgrad` CLI, forward and backward with the actor
// Engine, once on the CPU and once with its layers on cuda:0 (the input
// moves there and the logits back, so the backward crosses from the
// caller's CPU shard to the cuda:0 DeviceWorker and back). Loss and every
// parameter gradient agree to 1e-5 in float32, and every block of cuda:0
// the case allocated is free at its end. Exits 77 (skipped) without
// a GPU.

#include <cstdint>
#include <string>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/ops.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/require_gpu.h"
#include "tools/cli/mlp.h"

using namespace actorgrad;
using namespace actorgrad::testing;

BOOST_TEST_GLOBAL_FIXTURE(RequireGpu);

namespace {

/// Copies every parameter of `from` into the matching one of `to`.
void copy_parameters(const cli::Mlp& from, const cli::Mlp& to) {
  NoGradGuard no_grad;
  const auto src = from.parameters();
  auto dst = to.parameters();
  for (std::size_t i = 0; i < src.size(); ++i)
    dst[i].copy_(kernels::cuda::to_device(src[i], dst[i].device()));
}

void check_mlp(cli::Activation act, DType dtype) {
  const std::vector<std::int64_t> sizes = {12, 32, 32, 5};
  const std::int64_t batch = 64;
  cli::Mlp on_cpu(sizes, act, dtype, {Device::cpu()}, 7);
  cli::Mlp on_gpu(sizes, act, dtype, {gpu}, 7);
  copy_parameters(on_cpu, on_gpu);
  const auto x = Tensor::randn({batch, sizes.front()}, 11, dtype);
  std::vector<std::int64_t> targets;
  for (std::int64_t i = 0; i < batch; ++i)
    targets.push_back((i * 7 + 3) % sizes.back());

  EngineConfig config;
  config.devices = {gpu};
  Engine engine(config);
  const auto cpu_loss = cross_entropy(on_cpu.forward(x), targets);
  const auto gpu_loss = cross_entropy(on_gpu.forward(x), targets);
  backward({cpu_loss}, {}, engine);
  backward({gpu_loss}, {}, engine);

  BOOST_TEST(gpu_loss.item() == cpu_loss.item(), boost::test_tools::tolerance(tolerance(dtype)));
  const auto want = on_cpu.parameters();
  const auto got = on_gpu.parameters();
  for (std::size_t i = 0; i < want.size(); ++i) {
    BOOST_TEST_REQUIRE(got[i].grad().defined());
    check_close(got[i].grad(), want[i].grad(), "grad of parameter " + std::to_string(i));
  }
}

} // namespace

BOOST_AUTO_TEST_CASE(mlp_tanh_float32_matches_cpu) {
  check_frees_its_memory([] { check_mlp(cli::Activation::tanh, DType::f32); });
}

BOOST_AUTO_TEST_CASE(mlp_relu_float32_matches_cpu) {
  check_frees_its_memory([] { check_mlp(cli::Activation::relu, DType::f32); });
}

BOOST_AUTO_TEST_CASE(mlp_tanh_float64_matches_cpu) {
  check_frees_its_memory([] { check_mlp(cli::Activation::tanh, DType::f64); });
}
