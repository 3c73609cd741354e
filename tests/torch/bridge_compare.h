#pragma once
/// @file bridge_compare.h
/// The torch bridge's tests on tests/support/torch_diff.h with Boost.Test
/// checks: the same libtorch code run on the stock engine and on actorgrad
/// (install/uninstall in one process), its results compared bitwise.

#include "tests/support/torch_diff.h" // libtorch first

#include <boost/test/unit_test.hpp>

#include <string>
#include <utility>
#include <vector>

namespace bridge_test {

/// The results of one run of a test body (gradients, outputs).
using Results = std::vector<torch::Tensor>;

/// `r` named by position ("result 0", ...), for torch_diff's compare.
inline actorgrad::test::NamedTensors named(Results r) {
  actorgrad::test::NamedTensors out;
  for (std::size_t i = 0; i < r.size(); ++i)
    out.emplace_back("result " + std::to_string(i), std::move(r[i]));
  return out;
}

/// The tensors of `t`, without their names.
inline Results unnamed(const actorgrad::test::NamedTensors& t) {
  Results out;
  for (const auto& [name, x] : t)
    out.push_back(x);
  return out;
}

/// Runs `body` on the stock engine, then with actorgrad installed with
/// `config` (torch_diff's run_both: it throws unless actorgrad ran a call),
/// and returns {stock, actorgrad}.
template <class Body>
std::pair<Results, Results> run_both(Body body, actorgrad::EngineConfig config = {}) {
  const auto runs = actorgrad::test::run_both([&] { return named(body()); }, 0, std::move(config));
  return {unnamed(runs.stock), unnamed(runs.actor)};
}

/// Bitwise equality of two lists (undefined tensors must match too).
inline void check_equal(const Results& stock, const Results& ours) {
  const std::string diff = actorgrad::test::compare(named(stock), named(ours));
  BOOST_CHECK_MESSAGE(diff.empty(), diff);
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
