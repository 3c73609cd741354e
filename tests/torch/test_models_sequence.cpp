/// @file test_models_sequence.cpp
/// Differential model tests (issue #18): sequence models run on the stock
/// engine and on actorgrad's (actorgrad::torch::Scope) from the same seed
/// give bitwise-equal gradients: a 2-layer LSTM (weights shared by every
/// time step, so their gradients accumulate over the steps; the input's and
/// the initial state's gradients too), and a TransformerEncoderLayer in
/// training mode (Dropout with the same masks) with a padding mask, 2 Adam
/// steps.

// libtorch first: its headers are large and must not see our macros.
#include <torch/torch.h>

#define BOOST_TEST_MODULE torch_models_sequence
#include <boost/test/unit_test.hpp>

#include "tests/support/torch_diff.h"

using namespace actorgrad::testing;

BOOST_AUTO_TEST_CASE(lstm_two_layers) {
  auto program = [] {
    torch::nn::LSTM lstm(torch::nn::LSTMOptions(8, 16).num_layers(2));
    torch::Tensor x = torch::randn({10, 3, 8}).requires_grad_(true);
    torch::Tensor h0 = torch::randn({2, 3, 16}).requires_grad_(true);
    torch::Tensor c0 = torch::randn({2, 3, 16}).requires_grad_(true);
    auto [y, state] = lstm->forward(x, std::make_tuple(h0, c0));
    torch::Tensor loss = y.pow(2).mean() + std::get<0>(state).sum() - std::get<1>(state).mean();
    loss.backward();
    NamedTensors out{{"loss", loss.detach().clone()},
                     {"x.grad", x.grad().clone()},
                     {"h0.grad", h0.grad().clone()},
                     {"c0.grad", c0.grad().clone()}};
    add_parameters(out, *lstm);
    return out;
  };
  BOOST_TEST(differential_check(program, 1) == "");
}

BOOST_AUTO_TEST_CASE(transformer_encoder_layer_adam) {
  constexpr int steps = 2;
  auto program = [] {
    torch::nn::TransformerEncoderLayer layer(
      torch::nn::TransformerEncoderLayerOptions(32, 4).dim_feedforward(64).dropout(0.1));
    layer->train();
    torch::optim::Adam opt(layer->parameters(), torch::optim::AdamOptions(1e-3));
    torch::Tensor src = torch::randn({6, 3, 32}).requires_grad_(true); // (sequence, batch, d_model)
    torch::Tensor pad = torch::zeros({3, 6}, torch::kBool);
    pad.index_put_({1, torch::indexing::Slice(4)}, true); // the second sequence has 4 tokens
    NamedTensors out;
    for (int step = 0; step < steps; ++step) {
      opt.zero_grad();
      src.mutable_grad() = torch::Tensor();
      torch::Tensor loss = layer(src, /*src_mask=*/torch::Tensor(), pad).pow(2).mean();
      loss.backward();
      opt.step();
      out.emplace_back("loss." + std::to_string(step), loss.detach().clone());
    }
    out.emplace_back("src.grad", src.grad().clone());
    add_parameters(out, *layer);
    return out;
  };
  BOOST_TEST(differential_check(program, steps) == "");
}
