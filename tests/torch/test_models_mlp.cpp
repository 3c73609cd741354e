/// @file test_models_mlp.cpp
/// Differential model tests (issue #18): libtorch programs run on the stock
/// engine and on actorgrad's (actorgrad::torch::Scope) in one process give
/// bitwise-equal results: an MLP trained with cross-entropy and Adam for 5
/// steps (losses, parameters and last gradients), and Embedding + LayerNorm
/// (repeated indices, so the embedding's gradient accumulates). Also checks
/// that the harness (tests/support/torch_diff.h) reports a one-ulp
/// difference by name, a program that never ran on actorgrad, a wrong call
/// count and a missing gradient.

// libtorch first: its headers are large and must not see our macros.
#include <torch/torch.h>

#define BOOST_TEST_MODULE torch_models_mlp
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

#include "tests/support/torch_diff.h"

using namespace actorgrad::testing;

BOOST_AUTO_TEST_CASE(harness_names_the_first_mismatch) {
  torch::Tensor a = torch::randn({3, 4}, torch::kFloat64);
  torch::Tensor b = a.clone();
  auto* p = b.data_ptr<double>();
  p[5] = std::nextafter(p[5], std::numeric_limits<double>::infinity());
  NamedTensors stock{{"same", a}, {"w.grad", a}}, actor{{"same", a}, {"w.grad", b}};
  const std::string msg = compare(stock, actor);
  BOOST_TEST(msg.find("w.grad") == 0, msg);
  BOOST_TEST(msg.find("max abs diff") != std::string::npos, msg);
  BOOST_TEST(compare(stock, actor, 1e-12) == "");
  BOOST_TEST(compare(stock, stock) == "");
  BOOST_TEST(compare(stock, {{"same", a}, {"w.grad", torch::Tensor()}}).find("defined on stock") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(harness_fails_a_program_that_did_not_run_on_actorgrad) {
  // No backward at all: the two runs could only be equal.
  BOOST_CHECK_THROW(run_both([] {
                      return NamedTensors{{"x", torch::ones({2})}};
                    }),
                    std::logic_error);
  // One backward where two are expected; a leaf without a gradient.
  auto one_call = [] {
    torch::Tensor w = torch::randn({3}).requires_grad_(true);
    torch::Tensor unused = torch::randn({3}).requires_grad_(true);
    (w * w).sum().backward();
    return NamedTensors{{"w.grad", w.grad()}, {"unused.grad", unused.grad()}};
  };
  const std::string msg = differential_check(one_call, 2);
  BOOST_TEST(msg.find("expected 2 backward calls on actorgrad, got 1") != std::string::npos, msg);
  BOOST_TEST(msg.find("unused.grad is undefined") != std::string::npos, msg);
}

BOOST_AUTO_TEST_CASE(mlp_cross_entropy_adam_5_steps) {
  constexpr int steps = 5;
  auto program = [] {
    torch::nn::Sequential net(torch::nn::Linear(20, 64), torch::nn::ReLU(),
                              torch::nn::Linear(64, 64), torch::nn::Tanh(),
                              torch::nn::Linear(64, 10));
    torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-2));
    torch::Tensor x = torch::randn({32, 20});
    torch::Tensor y = torch::randint(0, 10, {32});
    NamedTensors out;
    for (int step = 0; step < steps; ++step) {
      opt.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), y);
      loss.backward();
      opt.step();
      out.emplace_back("loss." + std::to_string(step), loss.detach().clone());
    }
    add_parameters(out, *net);
    return out;
  };
  BOOST_TEST(differential_check(program, steps) == "");
}

BOOST_AUTO_TEST_CASE(embedding_layer_norm) {
  auto program = [] {
    torch::nn::Embedding emb(50, 16);
    torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({16}));
    torch::nn::Linear head(16, 1);
    // 4 x 7 indices out of 5: every row is used several times.
    torch::Tensor idx = torch::randint(0, 5, {4, 7}, torch::kLong);
    torch::Tensor loss = head(norm(emb(idx))).pow(2).mean();
    loss.backward();
    NamedTensors out{{"loss", loss.detach().clone()}};
    add_parameters(out, *emb, "emb.");
    add_parameters(out, *norm, "norm.");
    add_parameters(out, *head, "head.");
    return out;
  };
  BOOST_TEST(differential_check(program, 1) == "");
}
