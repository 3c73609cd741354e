#pragma once
/// @file bridge_compare.h
/// Helpers of the torch bridge's tests: run the same libtorch code on the
/// stock engine and on actorgrad (install/uninstall in one process) and
/// compare the results bitwise.

#include <torch/torch.h>

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "actorgrad/actors/torch/install.h"

namespace bridge_test {

/// The results of one run of a test body (gradients, outputs).
using Results = std::vector<torch::Tensor>;

/// Runs `body` on the stock engine, then with actorgrad installed (checking
/// that it did run on actorgrad), and returns {stock, actorgrad}.
template <class Body>
std::pair<Results, Results> run_both(Body body, actorgrad::EngineConfig config = {}) {
  BOOST_REQUIRE(!actorgrad::torch::installed());
  Results stock = body();
  const auto before = actorgrad::torch::stats().calls;
  Results ours;
  {
    actorgrad::torch::Scope scope(config);
    ours = body();
  }
  BOOST_CHECK_GT(actorgrad::torch::stats().calls, before);
  return {std::move(stock), std::move(ours)};
}

/// Bitwise equality of two lists (undefined tensors must match too).
inline void check_equal(const Results& stock, const Results& ours) {
  BOOST_REQUIRE_EQUAL(stock.size(), ours.size());
  for (std::size_t i = 0; i < stock.size(); ++i) {
    BOOST_TEST_CONTEXT("result " << i) {
      BOOST_REQUIRE_EQUAL(stock[i].defined(), ours[i].defined());
      if (!stock[i].defined())
        continue;
      BOOST_CHECK(stock[i].sizes() == ours[i].sizes());
      BOOST_CHECK(torch::equal(stock[i], ours[i]));
    }
  }
}

/// run_both + check_equal.
template <class Body>
void check_same(Body body, actorgrad::EngineConfig config = {}) {
  auto [stock, ours] = run_both(body, std::move(config));
  check_equal(stock, ours);
}

/// Detached copies of every gradient in `tensors` (undefined stays undefined).
inline Results grads_of(const std::vector<torch::Tensor>& tensors) {
  Results r;
  for (const auto& t : tensors)
    r.push_back(t.grad().defined() ? t.grad().detach().clone() : torch::Tensor());
  return r;
}

} // namespace bridge_test
