/// @file test_hook_results.cpp
/// What hooks return is checked (tensor pre-hooks, leaf hooks, retain_grad
/// hooks, node pre- and post-hooks: another shape, broadcastable or not,
/// dtype or device is an error naming the hook and the node; an undefined
/// result keeps a tensor hook's gradient and is an error in a node hook's
/// list), on CPU and sim graphs, and the engine works on afterwards.
/// Removal through handles: test_hook_handles.cpp.
#define BOOST_TEST_MODULE hook_results
#include <boost/test/unit_test.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/engine/reference_executor.h"
#include "actorgrad/libengine/ops.h"
#include "tests/streams/sim_test_util.h"
#include "tests/support/executor_fixture.h"
#include "tests/support/hook_test_util.h"
#include "tests/support/lambda_node.h"
#include "tests/support/message_has.h"

using namespace actorgrad;
using actorgrad::testing::check_engine_still_works;
using actorgrad::testing::kTwos;
using actorgrad::testing::message_has;
using actorgrad::testing::SmallGraph;
using actorgrad::testing::values;

// The macro pastes the name into an identifier: it must be unqualified.
using actorgrad::testing::ExecutorFromEnv;
BOOST_TEST_GLOBAL_FIXTURE(ExecutorFromEnv);

namespace {

using TensorFn = std::function<Tensor(const Tensor&)>;

/// A hook result that must be refused, and what the error says about it.
struct BadResult {
  std::string what;
  TensorFn make; // from the gradient it replaces
  std::vector<std::string> says;
};

/// Each bad result for a gradient float64[2, 3] on `d` (`other` is another device).
std::vector<BadResult> bad_results(Device d, Device other) {
  const std::string on = " on " + d.str();
  return {
    {"broadcastable shape",
     [d](const Tensor&) {
       return Tensor::ones({1, 3}, DType::f64, d);
     },
     {"has changed the size of value", "expected float64[2, 3]" + on, "got float64[1, 3]" + on}},
    {"shape",
     [d](const Tensor&) { return Tensor::ones({4}, DType::f64, d); },
     {"has changed the size of value", "expected float64[2, 3]" + on, "got float64[4]" + on}},
    {"dtype",
     [](const Tensor& g) { return g.to(DType::f32); },
     {"has changed the type of value", "expected float64[2, 3]" + on, "got float32[2, 3]" + on}},
    {"device",
     [other](const Tensor& g) { return g.to(other); },
     {"has changed the device of value", "expected float64[2, 3]" + on,
      "got float64[2, 3] on " + other.str()}},
  };
}

/// Where a hook goes, and how its errors name it.
struct HookKind {
  std::string label;
  std::string slot; // " at input 0" / " at output 0"
  bool list_hook;   // node pre/post-hook: an undefined element is an error
  std::function<HookHandle(SmallGraph&, TensorFn)> install;
};

std::vector<HookKind> hook_kinds() {
  return {
    {"tensor pre-hook 0 'bad' of MulBackward", " at input 0", false,
     [](SmallGraph& g, TensorFn f) { return g.y.register_hook(std::move(f), "bad"); }},
    {"leaf tensor hook 0 'bad' of AccumulateGrad", " at input 0", false,
     [](SmallGraph& g, TensorFn f) { return g.x.register_hook(std::move(f), "bad"); }},
    {"retain_grad hook 0 of MulBackward", " at input 0", false,
     [](SmallGraph& g, TensorFn f) {
       return g.y.grad_fn()->add_retains_grad_hook(g.y.output_nr(), std::move(f));
     }},
    {"pre-hook 0 'bad' of MulBackward", " at input 0", true,
     [](SmallGraph& g, TensorFn f) {
       return g.y.grad_fn()->add_pre_hook(
         [f](const variable_list& in) { return variable_list{f(in.at(0))}; }, "bad");
     }},
    {"post-hook 0 'bad' of MulBackward", " at output 0", true,
     [](SmallGraph& g, TensorFn f) {
       return g.y.grad_fn()->add_post_hook(
         [f](const variable_list& out, const variable_list&) {
           return variable_list{f(out.at(0))};
         },
         "bad");
     }},
  };
}

/// Every bad result through every kind of hook on a graph on `d`, run by
/// `ex`: an error naming the hook, the node, the slot and the metadata; the
/// leaf's .grad untouched; after remove() the same graph gives the right
/// gradient. Then an undefined result: kept by tensor hooks, refused by
/// node hooks.
void check_every_hook_result(Device d, Device other, Executor& ex) {
  const BackwardOptions retain{.retain_graph = true};
  for (const auto& kind : hook_kinds()) {
    for (const auto& bad : bad_results(d, other)) {
      BOOST_TEST_CONTEXT(kind.label << " returning another " << bad.what << " on " << d.str()) {
        SmallGraph g(d);
        HookHandle h = kind.install(g, bad.make);
        auto says = bad.says;
        says.push_back(kind.label + " has changed");
        says.push_back(kind.slot + ": expected");
        BOOST_CHECK_EXCEPTION(backward({g.loss}, retain, ex), EngineError, message_has(says));
        BOOST_TEST(!g.x.grad().defined(), "a refused hook result reached x.grad");
        h.remove();
        backward({g.loss}, retain, ex);
        BOOST_TEST(values(g.x.grad()) == kTwos, boost::test_tools::per_element());
      }
    }
    BOOST_TEST_CONTEXT(kind.label << " returning an undefined tensor on " << d.str()) {
      SmallGraph g(d);
      kind.install(g, [](const Tensor&) { return Tensor(); });
      if (kind.list_hook) {
        BOOST_CHECK_EXCEPTION(backward({g.loss}, retain, ex), EngineError,
                              message_has({kind.label + " returned an undefined gradient" +
                                             kind.slot + ", where one is required",
                                           "float64[2, 3] on " + d.str()}));
        BOOST_TEST(!g.x.grad().defined());
      } else { // "no change"
        backward({g.loss}, retain, ex);
        BOOST_TEST(values(g.x.grad()) == kTwos, boost::test_tools::per_element());
      }
    }
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(results)

BOOST_AUTO_TEST_CASE(every_bad_result_of_every_hook_kind_is_refused_on_the_cpu) {
  check_every_hook_result(Device::cpu(), Device::sim(0), default_executor());
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(every_bad_result_of_every_hook_kind_is_refused_on_a_sim_device) {
  testing::SimSettings sim; // asynchronous streams, race detector on
  std::unique_ptr<Executor> ex;
  if (ExecutorFromEnv::name() == "actor")
    ex = std::make_unique<Engine>(EngineConfig{.devices = {Device::sim(0)}});
  else
    ex = std::make_unique<ReferenceExecutor>();
  check_every_hook_result(Device::sim(0), Device::cpu(), *ex);
  check_engine_still_works(*ex);
  BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
}

BOOST_AUTO_TEST_CASE(retain_grad_never_keeps_a_refused_gradient) {
  SmallGraph g;
  g.y.retain_grad();
  auto h = g.y.register_hook([](const Tensor&) { return Tensor::ones({3}); });
  BOOST_CHECK_EXCEPTION(backward({g.loss}, {.retain_graph = true}), EngineError,
                        message_has({"tensor pre-hook 0 of MulBackward has changed the size"}));
  BOOST_TEST(!g.y.grad().defined(), "y.grad() kept a gradient of the wrong shape");
  h.remove();
  backward({g.loss});
  BOOST_TEST(values(g.y.grad()) == std::vector<double>(6, 1.0), boost::test_tools::per_element());
  BOOST_TEST(values(g.x.grad()) == kTwos, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_list_hook_must_return_one_gradient_per_slot) {
  SmallGraph g;
  auto* fn = g.y.grad_fn().get();
  auto pre = fn->add_pre_hook([](const variable_list& in) { return variable_list{in[0], in[0]}; });
  BOOST_CHECK_EXCEPTION(
    backward({g.loss}, {.retain_graph = true}), EngineError,
    message_has({"pre-hook 0 of MulBackward returned 2 gradients for 1 inputs"}));
  pre.remove();
  auto post = fn->add_post_hook([](const variable_list&, const variable_list&) {
    return variable_list{Tensor::ones({2, 3}), Tensor::ones({2, 3})};
  });
  BOOST_CHECK_EXCEPTION(
    backward({g.loss}, {.retain_graph = true}), EngineError,
    message_has({"post-hook 0 of MulBackward returned 2 gradients for 1 outputs"}));
  post.remove();
  backward({g.loss});
  BOOST_TEST(values(g.x.grad()) == kTwos, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_node_hook_cannot_fill_in_a_missing_gradient) {
  // y = x through a node whose backward sends x no gradient (libtorch:
  // "can't replace a empty gradient with a non-empty value").
  auto x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad();
  Tensor y;
  {
    NoGradGuard no_grad;
    y = clone(x);
  }
  auto fn = make_node<testing::LambdaNode>(
    "SilentBackward", [](variable_list&&) { return variable_list{Tensor()}; },
    collect_next_edges({x}));
  set_history(y, fn);
  fn->add_post_hook(
    [](const variable_list&, const variable_list&) {
      return variable_list{Tensor::ones({2, 3})};
    },
    "fill");
  BOOST_CHECK_EXCEPTION(sum(y).backward(), EngineError,
                        message_has({"post-hook 0 'fill' of SilentBackward can't replace an "
                                     "undefined gradient with a defined value at output 0"}));
  BOOST_TEST(!x.grad().defined());
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(correctly_shaped_new_tensors_replace_gradients) {
  // loss = sum((x * w)^2), y = x * w; dloss/dy = 2y.
  auto x = Tensor::from_vector({1, 2, 3}, {3}).set_requires_grad();
  auto w = Tensor::from_vector({4, 5, 6}, {3}).set_requires_grad();
  auto y = mul(x, w);
  auto loss = sum(mul(y, y));
  // dloss/dy * 3, then + 1 before MulBackward, then MulBackward's output
  // for w (slot 1) halved; x's leaf hook adds 10.
  y.register_hook([](const Tensor& g) { return mul(g, 3.0); }, "triple");
  y.grad_fn()->add_pre_hook([](const variable_list& g) { return variable_list{add(g[0], 1.0)}; });
  y.grad_fn()->add_post_hook([](const variable_list& out, const variable_list&) {
    return variable_list{out[0], mul(out[1], 0.5)};
  });
  x.register_hook([](const Tensor& g) { return add(g, 10.0); });
  backward({loss});
  std::vector<double> gx, gw;
  const std::vector<double> xs{1, 2, 3}, ws{4, 5, 6};
  for (std::size_t i = 0; i < 3; ++i) {
    const double dy = 2 * xs[i] * ws[i] * 3 + 1;
    gx.push_back(dy * ws[i] + 10);
    gw.push_back(dy * xs[i] * 0.5);
  }
  BOOST_TEST(values(x.grad()) == gx, boost::test_tools::per_element());
  BOOST_TEST(values(w.grad()) == gw, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
