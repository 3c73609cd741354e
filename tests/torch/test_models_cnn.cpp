/// @file test_models_cnn.cpp
/// Differential model test (issue #18): a CNN (Conv2d, BatchNorm2d,
/// MaxPool2d, Dropout in training mode, Linear) trained for 3 SGD steps with
/// momentum on the stock engine and on actorgrad's (actorgrad::torch::Scope)
/// from the same seed, so Dropout draws the same masks: losses, parameters,
/// last gradients, the input's gradient and BatchNorm's running statistics
/// bitwise equal.

// libtorch first: its headers are large and must not see our macros.
#include <torch/torch.h>

#define BOOST_TEST_MODULE torch_models_cnn
#include <boost/test/unit_test.hpp>

#include "tests/support/torch_diff.h"

using namespace actorgrad::testing;

BOOST_AUTO_TEST_CASE(cnn_conv_batchnorm_maxpool_dropout_sgd) {
  constexpr int steps = 3;
  auto program = [] {
    torch::nn::Sequential net(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)), torch::nn::BatchNorm2d(8),
      torch::nn::ReLU(), torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)),
      torch::nn::Dropout(0.3), torch::nn::Flatten(), torch::nn::Linear(8 * 4 * 4, 5));
    net->train();
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
    torch::Tensor x = torch::randn({4, 3, 8, 8}).requires_grad_(true);
    torch::Tensor y = torch::randint(0, 5, {4});
    NamedTensors out;
    for (int step = 0; step < steps; ++step) {
      opt.zero_grad();
      x.mutable_grad() = torch::Tensor();
      torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), y);
      loss.backward();
      opt.step();
      out.emplace_back("loss." + std::to_string(step), loss.detach().clone());
    }
    out.emplace_back("x.grad", x.grad().clone());
    add_parameters(out, *net);
    for (const auto& b : net->named_buffers())
      out.emplace_back(b.key(), b.value().clone());
    return out;
  };
  BOOST_TEST(differential_check(program, steps) == "");
}
