/// @file test_bridge_install.cpp
/// The torch bridge's public API (actors/torch/install.h): install/uninstall
/// and their errors (cpu_workers reaches the engine, a bad count is refused
/// by name), libtorch's default engine switching, uninstall and
/// install in the middle of a backward call (calls in flight finish where
/// they started; a call nested in a stock call is delegated to the stock
/// engine), and recording a libtorch backward with libtorch's node names.

#define BOOST_TEST_MODULE torch_bridge_install
#include "tests/support/torch_diff.h" // libtorch, then Boost.Test

#include <torch/csrc/autograd/engine.h>

#include <set>

#include "actorgrad/actors/trace/event.h"

namespace {

namespace ag_torch = actorgrad::torch;
using torch::autograd::AutogradContext;
using torch::autograd::Engine;
using torch::autograd::variable_list;

const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);

template <class F>
bool throws_logic_error_with(F f, const std::string& text) {
  try {
    f();
  } catch (const std::logic_error& e) {
    return std::string(e.what()).find(text) != std::string::npos;
  }
  return false;
}

/// y = x.sin() * x, with a backward that runs `during` and then grad().
struct Reenter : torch::autograd::Function<Reenter> {
  static std::function<void()> during;
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x) {
    ctx->save_for_backward({x});
    return x.sin() * x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    during();
    auto x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    torch::AutoGradMode on(true);
    return torch::autograd::grad({x.sin() * x}, {x}, {g[0]});
  }
};
std::function<void()> Reenter::during;

torch::Tensor reenter_grad() {
  auto x = torch::linspace(-1, 1, 5, f64).requires_grad_(true);
  Reenter::apply(x.exp()).sum().backward();
  return x.grad();
}

} // namespace

BOOST_AUTO_TEST_CASE(install_uninstall_and_their_errors) {
  BOOST_CHECK(!ag_torch::installed());
  BOOST_CHECK(throws_logic_error_with([] { ag_torch::engine(); }, "not installed"));
  ag_torch::uninstall(); // nothing to do
  ag_torch::install();
  BOOST_CHECK(ag_torch::installed());
  BOOST_CHECK(&Engine::get_default_engine() != &Engine::get_base_engine());
  BOOST_CHECK(throws_logic_error_with([] { ag_torch::install(); }, "already installed"));
  BOOST_CHECK_EQUAL(ag_torch::engine().config().max_recursion_depth, 60);
  ag_torch::uninstall();
  BOOST_CHECK(!ag_torch::installed());
  BOOST_CHECK(&Engine::get_default_engine() == &Engine::get_base_engine());
  // A bad setting is refused, naming it; nothing is installed.
  actorgrad::EngineConfig bad;
  bad.scheduler_threads = 0;
  BOOST_CHECK_THROW(ag_torch::install(bad), std::invalid_argument);
  BOOST_CHECK(!ag_torch::installed());
  // cpu_workers reaches the installed engine; a bad count is refused by name.
  actorgrad::EngineConfig two;
  two.cpu_workers = 2;
  ag_torch::install(two);
  BOOST_CHECK_EQUAL(ag_torch::engine().config().cpu_workers, 2u);
  ag_torch::uninstall();
  for (std::size_t n : {std::size_t{0}, std::size_t{257}}) {
    actorgrad::EngineConfig workers;
    workers.cpu_workers = n;
    try {
      ag_torch::install(workers);
      BOOST_ERROR("cpu_workers " << n << " was accepted");
    } catch (const std::invalid_argument& e) {
      BOOST_CHECK_MESSAGE(std::string(e.what()).find("cpu_workers is " + std::to_string(n)) !=
                            std::string::npos,
                          e.what());
    }
    BOOST_CHECK(!ag_torch::installed());
  }
  {
    ag_torch::Scope scope;
    BOOST_CHECK(ag_torch::installed());
  }
  BOOST_CHECK(!ag_torch::installed());
}

BOOST_AUTO_TEST_CASE(uninstall_during_a_call_lets_it_finish_on_actorgrad) {
  Reenter::during = [] {};
  const auto expected = reenter_grad();
  const auto before = ag_torch::stats();
  ag_torch::install();
  // The nested grad() goes to the stock engine (no longer the default),
  // inside the actorgrad call, which finishes and then frees its engine.
  Reenter::during = [] { ag_torch::uninstall(); };
  BOOST_CHECK(torch::equal(reenter_grad(), expected));
  BOOST_CHECK(!ag_torch::installed());
  BOOST_CHECK_EQUAL(ag_torch::stats().calls, before.calls + 1);
  BOOST_CHECK(torch::equal(reenter_grad(), expected)); // stock again
  BOOST_CHECK_EQUAL(ag_torch::stats().calls, before.calls + 1);
}

BOOST_AUTO_TEST_CASE(a_call_nested_in_a_stock_call_is_delegated) {
  Reenter::during = [] {};
  const auto expected = reenter_grad();
  const auto before = ag_torch::stats();
  // The outer backward runs on the stock engine; its node installs
  // actorgrad, so the nested grad() reaches the bridge, which gives it to
  // the stock engine (the stock call's thread-locals own it).
  Reenter::during = [] {
    if (!ag_torch::installed())
      ag_torch::install();
  };
  BOOST_CHECK(torch::equal(reenter_grad(), expected));
  BOOST_CHECK_EQUAL(ag_torch::stats().delegated, before.delegated + 1);
  // Now installed: the outer call runs on actorgrad and so does the nested one.
  BOOST_CHECK(torch::equal(reenter_grad(), expected));
  BOOST_CHECK_EQUAL(ag_torch::stats().calls, before.calls + 2);
  BOOST_CHECK_EQUAL(ag_torch::stats().delegated, before.delegated + 1);
  ag_torch::uninstall();
}

BOOST_AUTO_TEST_CASE(recording_names_libtorch_nodes) {
  ag_torch::Scope scope;
  ag_torch::engine().start_recording();
  torch::manual_seed(0);
  torch::nn::Linear layer(4, 3);
  auto loss = torch::relu(layer(torch::randn({2, 4}))).pow(2).sum();
  loss.backward();
  actorgrad::trace::Trace trace = ag_torch::engine().stop_recording();
  std::set<std::string> names;
  for (const auto& track : trace.tracks)
    for (const auto& e : track.events)
      if (e.kind == actorgrad::trace::EventKind::node_start)
        names.insert(e.node);
  for (const char* expected : {"SumBackward0", "PowBackward0", "ReluBackward0", "AddmmBackward0",
                               "torch::autograd::AccumulateGrad"})
    BOOST_CHECK_MESSAGE(names.count(expected), expected << " not recorded");
}
