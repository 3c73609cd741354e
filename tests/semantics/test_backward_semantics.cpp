#define BOOST_TEST_MODULE backward_semantics
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/engine/detail/graph_task.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/engine/executor.h"
#include "actorgrad/libengine/engine/queue_callback.h"
#include "actorgrad/libengine/ops.h"
#include "tests/support/executor_fixture.h"
#include "tests/support/lambda_node.h"
#include "tests/support/random_dag.h"

using namespace actorgrad;

// The macro pastes the name into an identifier: it must be unqualified.
using actorgrad::testing::ExecutorFromEnv;
BOOST_TEST_GLOBAL_FIXTURE(ExecutorFromEnv);

namespace {

// -- helpers --------------------------------------------------------------------

Tensor leaf(const std::vector<double>& v, const Shape& shape) {
  return Tensor::from_vector(v, shape).set_requires_grad(true);
}
Tensor leaf(const std::vector<double>& v) { return leaf(v, {static_cast<std::int64_t>(v.size())}); }

/// Checks shape and values of `t` (tolerance for computed values).
void check_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-12) {
  BOOST_REQUIRE_MESSAGE(t.defined(), "tensor is undefined");
  auto v = t.to_vector();
  BOOST_REQUIRE_EQUAL(v.size(), expected.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    BOOST_TEST(std::abs(v[i] - expected[i]) <= tol,
               "element " << i << ": " << v[i] << " != " << expected[i]);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

/// A BOOST_CHECK_EXCEPTION predicate: the message contains every one of
/// `all` (case-insensitive) and, if `any` is non-empty, at least one of `any`.
auto message_has(std::vector<std::string> all, std::vector<std::string> any = {}) {
  return [all, any](const std::exception& e) {
    const std::string msg = lower(e.what());
    bool ok = true;
    for (const auto& s : all)
      if (msg.find(lower(s)) == std::string::npos) {
        BOOST_TEST_MESSAGE("message lacks '" << s << "'");
        ok = false;
      }
    if (!any.empty() && std::none_of(any.begin(), any.end(), [&](const std::string& s) {
          return msg.find(lower(s)) != std::string::npos;
        }))
      ok = false;
    BOOST_TEST(ok, "unexpected error message: " << e.what());
    return ok;
  };
}

/// After an error, a fresh backward still runs and gives the right result.
void check_engine_still_works() {
  auto x = leaf({1, 2, 3});
  backward({sum(mul(x, x))});
  check_values(x.grad(), {2, 4, 6});
}

using actorgrad::testing::LambdaNode;

/// y = x (a copy) whose backward is `fn`, recorded as a node named `name`.
Tensor lambda_op(const Tensor& x, const std::string& name, LambdaNode::Fn fn) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = clone(x);
  }
  if (any_requires_grad({x}))
    set_history(y, make_node<LambdaNode>(name, std::move(fn), collect_next_edges({x})));
  return y;
}

variable_list identity(variable_list&& g) { return std::move(g); }

/// Counts how often a node runs (with a pre-hook).
std::shared_ptr<int> count_calls(const std::shared_ptr<Node>& fn) {
  auto n = std::make_shared<int>(0);
  fn->add_pre_hook([n](const variable_list&) {
    ++*n;
    return variable_list{};
  });
  return n;
}

} // namespace

// -- accumulation and retain_graph ----------------------------------------------

BOOST_AUTO_TEST_SUITE(accumulation)

BOOST_AUTO_TEST_CASE(leaf_grad_accumulates_across_calls_and_resets) {
  auto x = leaf({1, 2, 3});
  auto w = leaf({4, 5, 6});
  auto run = [&] { sum(mul(x, w)).backward(); };
  run();
  check_values(x.grad(), {4, 5, 6});
  run();
  check_values(x.grad(), {8, 10, 12});
  check_values(w.grad(), {2, 4, 6});
  x.set_grad(Tensor());
  BOOST_TEST(!x.grad().defined());
  run();
  check_values(x.grad(), {4, 5, 6});
  check_values(w.grad(), {3, 6, 9});
}

BOOST_AUTO_TEST_CASE(second_backward_without_retain_graph_is_an_error) {
  auto x = leaf({1, 2});
  auto w = leaf({3, 4});
  auto loss = sum(mul(x, w));
  loss.backward();
  BOOST_CHECK_EXCEPTION(loss.backward(), EngineError,
                        message_has({"retain_graph"}, {"freed", "released"}));
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(retain_graph_allows_a_second_backward) {
  auto x = leaf({1, 2});
  auto w = leaf({3, 4});
  auto loss = sum(mul(x, w));
  loss.backward(Tensor(), /*retain_graph=*/true);
  loss.backward();
  check_values(x.grad(), {6, 8});
  check_values(w.grad(), {2, 4});
}

BOOST_AUTO_TEST_CASE(multiple_roots_sum_their_gradients) {
  auto x = leaf({1, 2, 3});
  auto y1 = mul(x, 2.0);
  auto y2 = mul(x, x);
  auto g1 = Tensor::from_vector({1, 10, 100}, {3});
  auto g2 = Tensor::from_vector({1, 1, 2}, {3});
  backward({y1, y2}, {.grad_tensors = {g1, g2}});
  // 2 g1 + 2 x g2
  check_values(x.grad(), {2 + 2, 20 + 4, 200 + 12});
}

BOOST_AUTO_TEST_CASE(gradient_flowing_through_a_shared_subexpression_adds_up) {
  auto x = leaf({2});
  auto y = exp(x);
  auto z = add(mul(y, 3.0), mul(y, y)); // 3e^x + e^2x
  sum(z).backward();
  check_values(x.grad(), {3 * std::exp(2.0) + 2 * std::exp(4.0)}, 1e-9);
}

BOOST_AUTO_TEST_SUITE_END()

// -- saved tensors --------------------------------------------------------------

BOOST_AUTO_TEST_CASE(in_place_change_of_a_saved_tensor_names_the_node_and_versions) {
  auto x = Tensor::from_vector({1, 2, 3}, {3}); // does not require grad: may change in place
  auto w = leaf({4, 5, 6});
  auto y = mul(x, w);
  const std::string node = y.grad_fn()->name();
  BOOST_TEST(node.find("Mul") != std::string::npos, node);
  BOOST_TEST(x.version() == 0u);
  x.mul_(2);
  x.mul_(2);
  BOOST_TEST(x.version() == 2u);
  BOOST_CHECK_EXCEPTION(sum(y).backward(), EngineError, message_has({node, "version", "2", "0"}));
  BOOST_TEST(!w.grad().defined());
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(every_in_place_op_is_checked_like_add) {
  using InPlace = std::function<void(Tensor&)>;
  const std::vector<std::pair<std::string, InPlace>> ops{
    {"add_", [](Tensor& t) { t.add_(Tensor::ones({3}), 2.0); }},
    {"sub_", [](Tensor& t) { t.sub_(Tensor::ones({3}), 2.0); }},
    {"mul_", [](Tensor& t) { t.mul_(Tensor::full({3}, 2.0)); }},
    {"div_", [](Tensor& t) { t.div_(Tensor::full({1}, 2.0)); }},
  };
  for (const auto& [name, op] : ops) {
    BOOST_TEST_CONTEXT(name) {
      // after saving: the saved-variable check names the node and versions
      auto x = Tensor::from_vector({1, 2, 3}, {3});
      auto w = leaf({4, 5, 6});
      auto y = mul(x, w); // saves x for w's gradient
      op(x);
      BOOST_TEST(x.version() == 1u);
      BOOST_CHECK_EXCEPTION(sum(y).backward(), EngineError,
                            message_has({"MulBackward", "version 1", "version 0"}));
      // a leaf that requires grad: refused in grad mode, allowed without
      auto p = leaf({1, 2, 3});
      BOOST_CHECK_EXCEPTION(op(p), std::invalid_argument, message_has({name, "requires grad"}));
      BOOST_TEST(p.version() == 0u);
      NoGradGuard no_grad;
      op(p);
      BOOST_TEST(p.version() == 1u);
    }
  }
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(in_place_on_a_leaf_that_requires_grad_is_refused) {
  auto x = leaf({1, 2});
  BOOST_CHECK_EXCEPTION(x.mul_(2), std::exception,
                        message_has({}, {"in-place", "inplace", "in place"}));
  NoGradGuard no_grad;
  x.mul_(2);
  check_values(x, {2, 4});
}

// -- grad() ------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(grad_api)

BOOST_AUTO_TEST_CASE(returns_only_the_requested_gradients_and_leaves_dot_grad_alone) {
  auto x = leaf({1, 2});
  auto w = leaf({3, 4});
  auto y = sum(add(mul(x, w), x));
  auto gs = grad({y}, {x});
  BOOST_REQUIRE_EQUAL(gs.size(), 1u);
  check_values(gs[0], {4, 5});
  BOOST_TEST(!x.grad().defined());
  BOOST_TEST(!w.grad().defined());
}

BOOST_AUTO_TEST_CASE(an_unused_input_is_an_error_unless_allow_unused) {
  auto x = leaf({1, 2});
  auto z = leaf({5});
  auto make_y = [&] { return sum(mul(x, 2.0)); };
  BOOST_CHECK_EXCEPTION(grad({make_y()}, {x, z}), EngineError, message_has({"allow_unused"}));
  auto gs = grad({make_y()}, {x, z}, {.allow_unused = true});
  BOOST_REQUIRE_EQUAL(gs.size(), 2u);
  check_values(gs[0], {2, 2});
  BOOST_TEST(!gs[1].defined());
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(an_unreachable_input_deeper_than_the_root_gives_an_undefined_gradient) {
  // The requested input's node has a higher topological_nr than the root,
  // so pruning leaves the root's own edges out of the dependencies: the
  // root, needed by no input, must not report them as a missing
  // dependency.
  auto w = Tensor::ones({2}).set_requires_grad();
  auto b = Tensor::ones({2}).set_requires_grad();
  auto deep = (w * 3.0) * 2.0;     // topological_nr 2
  auto y = sum(deep.detach() + b); // root topological_nr 1, w unreachable
  auto gs = grad({y}, {deep}, {.allow_unused = true});
  BOOST_TEST(!gs[0].defined());
  BOOST_CHECK_EXCEPTION(grad({y}, {deep}), EngineError, message_has({"allow_unused"}));
}

// The root runs only when it is needed, as in PyTorch's init_to_execute:
// grad(x, x) captures x's gradient without running x's AccumulateGrad, and
// a root that leads to no requested input is not called (its node hooks do
// not run; its tensor hooks do, as PyTorch always calls them) and does not
// unpack saved tensors that an earlier call freed.
BOOST_AUTO_TEST_CASE(a_root_that_leads_to_no_input_does_not_run) {
  auto x = Tensor::from_vector({1, 2, 3}, {3}).set_requires_grad();
  auto z = Tensor::ones({3}).set_requires_grad();
  auto own = grad({x}, {x}, {.grad_outputs = {Tensor::full_like(x, 2.0)}});
  check_values(own[0], {2, 2, 2});
  BOOST_TEST(!x.grad().defined(), "grad(x, x) wrote x.grad");

  auto y = sum(mul(x, 2.0));
  int calls = 0;
  y.grad_fn()->add_pre_hook([&](const variable_list&) {
    ++calls;
    return variable_list{};
  });
  BOOST_TEST(!grad({y}, {z}, {.allow_unused = true})[0].defined());
  backward({y}, {.retain_graph = true, .inputs = {z}});
  BOOST_TEST(calls == 0, "the root ran " << calls << " times");
  BOOST_TEST(!z.grad().defined());

  auto w = mul(exp(x), x);
  backward({sum(w)}); // frees the saved tensors of w's node, the next root
  BOOST_TEST(
    !grad({w}, {z}, {.grad_outputs = {Tensor::ones({3})}, .allow_unused = true})[0].defined());
}

BOOST_AUTO_TEST_CASE(grad_of_an_intermediate_tensor) {
  auto x = leaf({1, 2});
  auto h = mul(x, 3.0);
  auto y = sum(mul(h, h));
  auto gs = grad({y}, {h, x});
  check_values(gs[0], {6, 12});
  check_values(gs[1], {18, 36});
}

BOOST_AUTO_TEST_CASE(an_input_named_twice_gets_its_gradient_in_both_places) {
  // Captures at one node are kept together, in the order of the inputs,
  // whatever the order of the nodes (see Note [Exec info in the node table]).
  auto x = leaf({1, 2});
  auto w = leaf({3, 4});
  auto h = mul(x, 3.0);
  auto y = sum(add(mul(h, w), x));
  auto gs = grad({y}, {x, w, h, x, h}, {.retain_graph = true});
  BOOST_REQUIRE_EQUAL(gs.size(), 5u);
  check_values(gs[0], {10, 13});
  check_values(gs[1], {3, 6});
  check_values(gs[2], {3, 4});
  check_values(gs[3], {10, 13});
  check_values(gs[4], {3, 4});
  auto ws = grad({y}, {w, x, w});
  check_values(ws[0], {3, 6});
  check_values(ws[1], {10, 13});
  check_values(ws[2], {3, 6});
}

BOOST_AUTO_TEST_SUITE_END()

// -- selective execution ------------------------------------------------------------

BOOST_AUTO_TEST_CASE(backward_with_inputs_runs_only_the_needed_nodes) {
  auto a = leaf({1, 2});
  auto b = leaf({3, 4});
  auto ya = exp(a);
  auto yb = exp(b);
  auto sa = sum(ya);
  auto sb = sum(yb);
  auto loss = add(sa, sb);
  auto calls_a = count_calls(ya.grad_fn());
  auto calls_b = count_calls(yb.grad_fn());
  auto calls_sb = count_calls(sb.grad_fn());
  backward({loss}, {.inputs = {a}});
  BOOST_TEST(*calls_a == 1);
  BOOST_TEST(*calls_b == 0);
  BOOST_TEST(*calls_sb == 0);
  check_values(a.grad(), {std::exp(1.0), std::exp(2.0)}, 1e-12);
  BOOST_TEST(!b.grad().defined());
}

BOOST_AUTO_TEST_CASE(backward_with_an_intermediate_input_retains_its_gradient_only) {
  auto x = leaf({1, 2});
  auto h = mul(x, 3.0);
  auto loss = sum(mul(h, h));
  backward({loss}, {.inputs = {h}});
  check_values(h.grad(), {6, 12});
  BOOST_TEST(!x.grad().defined());
}

BOOST_AUTO_TEST_CASE(grad_with_inputs_matches_a_full_backward_on_random_dags) {
  // An oracle that shares nothing with selective execution: each input's
  // gradient in a full backward (.grad of a leaf, retain_grad elsewhere) is
  // what grad(inputs=...) returns for it, and an input without one gets none.
  testing::RandomDagGenerator gen(20261127, {Device::cpu()});
  int compared = 0;
  for (int i = 0; i < 200; ++i) {
    const testing::RandomDag g = gen.build();
    const std::vector<Tensor> inputs = gen.subset(g.values, 0.3);
    for (Tensor v : g.values) {
      v.set_grad(Tensor());
      if (!v.is_leaf())
        v.retain_grad();
    }
    backward(g.roots, {.grad_tensors = g.root_grads, .retain_graph = true});
    std::vector<Tensor> expected;
    for (const auto& v : inputs)
      expected.push_back(v.grad());
    const auto got = grad(
      g.roots, inputs, {.grad_outputs = g.root_grads, .retain_graph = true, .allow_unused = true});
    BOOST_TEST_REQUIRE(got.size() == inputs.size());
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      BOOST_TEST_CONTEXT(g.description << ", input " << k) {
        BOOST_TEST_REQUIRE(got[k].defined() == expected[k].defined());
        if (!got[k].defined())
          continue;
        const auto a = got[k].to_vector(), b = expected[k].to_vector();
        BOOST_TEST_REQUIRE(a.size() == b.size());
        for (std::size_t j = 0; j < a.size(); ++j)
          BOOST_TEST(std::abs(a[j] - b[j]) <=
                     1e-12 * std::max({std::abs(a[j]), std::abs(b[j]), 1.0}));
        ++compared;
      }
    }
  }
  BOOST_TEST(compared > 200); // most inputs lead to a root
}

BOOST_AUTO_TEST_CASE(grad_through_a_hand_edited_edge_that_breaks_topological_order) {
  // root -> Late -> h's node, where the edge Late -> h's node was set after
  // root was built: Late's topological_nr rose above root's, so pruning by
  // topological_nr (min over the inputs: h's) must not cut root off.
  auto meta = Tensor::zeros({1});
  auto x = leaf({2.0});
  auto h = mul(mul(mul(x, 3.0), 3.0), 3.0);
  auto late = make_node<LambdaNode>("Late", identity, edge_list{Edge{}});
  auto root = make_node<LambdaNode>("Root", identity, edge_list{Edge{late, 0}});
  for (auto& n : {late, root})
    n->add_input_metadata(meta);
  late->set_next_edge(0, gradient_edge(h));
  BOOST_TEST_REQUIRE(root->topological_nr() < h.grad_fn()->topological_nr());
  auto grads = default_executor().execute({Edge{root, 0}}, {Tensor::full({1}, 5.0)},
                                          ExecuteOptions{false, false, false}, {gradient_edge(h)});
  BOOST_TEST_REQUIRE(grads.size() == 1u);
  BOOST_TEST_REQUIRE(grads[0].defined());
  BOOST_TEST(grads[0].item() == 5.0);
  check_engine_still_works();
}

// -- hooks --------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(hooks)

// A hook that runs a nested grad() over nodes the outer call has still to
// run: the nested call numbers those nodes again, rewriting the hints the
// outer call's lookups read (Note [Node table hints]); the outer call must
// still find each node's own state.
BOOST_AUTO_TEST_CASE(a_nested_call_over_the_same_nodes_leaves_the_outer_call_right) {
  auto x = leaf({1, 2});
  // Diamonds: the dependency pass meets every node twice; each diamond
  // passes the gradient through exactly (0.25 + 0.75, 0.5 + 1.5).
  Tensor low = x;
  for (int k = 0; k < 8; ++k)
    low = add(mul(low, 0.25), mul(low, 0.75));
  Tensor z = low;
  for (int k = 0; k < 8; ++k)
    z = add(mul(z, 0.5), mul(z, 1.5));
  const Tensor low_sum = sum(low);
  std::vector<double> nested;
  bool entered = false; // the nested call reaches this hook too
  low.register_hook([&](const Tensor&) {
    if (!std::exchange(entered, true))
      nested = grad({low_sum}, {x}, {.retain_graph = true})[0].to_vector();
    return Tensor();
  });
  sum(z).backward();
  BOOST_TEST(nested == (std::vector<double>{1, 1}), boost::test_tools::per_element());
  check_values(x.grad(), {256, 256}, 0);
}

BOOST_AUTO_TEST_CASE(order_is_tensor_pre_hook_node_pre_hook_apply_post_hook) {
  std::vector<std::string> log;
  auto x = leaf({1, 2});
  auto y = lambda_op(x, "RecordingBackward", [&](variable_list&& g) {
    log.push_back("apply");
    return std::move(g);
  });
  auto fn = y.grad_fn();
  y.register_hook([&](const Tensor&) {
    log.push_back("tensor_pre_hook");
    return Tensor();
  });
  fn->add_pre_hook([&](const variable_list&) {
    log.push_back("pre_hook");
    return variable_list{};
  });
  fn->add_post_hook([&](const variable_list& grad_inputs, const variable_list& grad_outputs) {
    log.push_back("post_hook");
    BOOST_TEST(grad_inputs.size() == 1u);
    BOOST_TEST(grad_outputs.size() == 1u);
    return variable_list{};
  });
  sum(mul(y, 2.0)).backward();
  BOOST_TEST(log == (std::vector<std::string>{"tensor_pre_hook", "pre_hook", "apply", "post_hook"}),
             boost::test_tools::per_element());
  check_values(x.grad(), {2, 2});
}

BOOST_AUTO_TEST_CASE(tensor_hook_replacing_the_gradient_changes_the_result) {
  auto x = leaf({1, 2});
  auto y = mul(x, 3.0);
  y.register_hook([](const Tensor& g) { return mul(g, 10.0); });
  x.register_hook([](const Tensor& g) { return add(g, 1.0); });
  sum(y).backward();
  check_values(x.grad(), {31, 31});
}

BOOST_AUTO_TEST_CASE(hooks_on_grad_inputs_run_before_the_gradient_is_captured) {
  // grad() captures the gradient arriving at each input; the input's own
  // hooks run first (PyTorch's evaluate_function calls the tensor pre-hooks
  // of a capturing node, which replaced its deprecated capture hooks).
  auto x = leaf({1, 2});
  auto h = mul(x, 2.0);
  auto y = sum(mul(h, 3.0));
  x.register_hook([](const Tensor& g) { return add(g, 1.0); });
  h.register_hook([](const Tensor& g) { return mul(g, 10.0); });
  check_values(grad({y}, {h}, {.retain_graph = true})[0], {30, 30});
  // (3 * 10) * 2 + 1: h's hook changed what flows on to x.
  check_values(grad({y}, {x})[0], {61, 61});
  BOOST_TEST(!x.grad().defined());
}

BOOST_AUTO_TEST_CASE(node_hooks_replacing_gradients_change_the_result) {
  auto x = leaf({1, 2});
  auto y = mul(x, 3.0);
  y.grad_fn()->add_pre_hook([](const variable_list& g) { return variable_list{mul(g[0], 2.0)}; });
  y.grad_fn()->add_post_hook(
    [](const variable_list& in, const variable_list&) { return variable_list{add(in[0], 1.0)}; });
  sum(y).backward();
  check_values(x.grad(), {7, 7});
}

BOOST_AUTO_TEST_CASE(retain_grad_keeps_a_non_leaf_gradient) {
  auto x = leaf({1, 2});
  auto y = mul(x, 3.0);
  auto u = mul(x, 4.0);
  y.retain_grad();
  BOOST_TEST(y.retains_grad());
  sum(mul(y, y)).backward();
  check_values(y.grad(), {6, 12});
  check_values(x.grad(), {18, 36});
  BOOST_TEST(!u.grad().defined());
}

BOOST_AUTO_TEST_SUITE_END()

// -- higher order ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(create_graph_gives_the_second_derivative_of_a_cube) {
  auto x = leaf({1, 2, -3});
  auto y = sum(pow(x, 3.0));
  auto g = grad({y}, {x}, {.create_graph = true});
  check_values(g[0], {3, 12, 27}, 1e-10);
  BOOST_TEST(g[0].requires_grad());
  auto h = grad({sum(g[0])}, {x}, {.retain_graph = true});
  check_values(h[0], {6, 12, -18}, 1e-10);
  BOOST_TEST(!x.grad().defined());
  // backward of a gradient accumulates the second derivative into .grad
  sum(g[0]).backward();
  check_values(x.grad(), {6, 12, -18}, 1e-10);
}

BOOST_AUTO_TEST_CASE(backward_with_create_graph_leaves_a_differentiable_grad) {
  auto x = leaf({2});
  sum(mul(mul(x, x), x)).backward(Tensor(), true, /*create_graph=*/true);
  check_values(x.grad(), {12}, 1e-12);
  BOOST_TEST(x.grad().requires_grad());
  auto h = grad({sum(x.grad())}, {x});
  check_values(h[0], {12}, 1e-12);
  // x.grad's graph holds x (PyTorch's create_graph reference cycle between
  // a parameter and its gradient): reset it, as PyTorch's docs advise.
  x.set_grad(Tensor());
}

// -- anomaly mode -------------------------------------------------------------------------

namespace {
/// x = 0: y = x^0.5 = 0 is fine forward; backward gets 0 * inf = NaN in PowBackward.
struct NanInBackward {
  Tensor x = leaf({0.0, 1.0});
  Tensor y = pow(x, 0.5);
  Tensor loss = sum(mul(y, Tensor::from_vector({0.0, 1.0}, {2})));
};
} // namespace

BOOST_AUTO_TEST_CASE(anomaly_mode_names_the_node_that_produced_nan) {
  NanInBackward g;
  const std::string node = g.y.grad_fn()->name();
  BOOST_TEST(node.find("Pow") != std::string::npos, node);
  {
    DetectAnomalyGuard anomaly;
    BOOST_CHECK_EXCEPTION(g.loss.backward(), EngineError, message_has({node, "nan"}));
  }
  BOOST_TEST(!AnomalyMode::is_enabled());
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(without_anomaly_mode_nan_flows_through) {
  NanInBackward g;
  BOOST_CHECK_NO_THROW(g.loss.backward());
  BOOST_REQUIRE(g.x.grad().defined());
  auto v = g.x.grad().to_vector();
  BOOST_TEST(std::isnan(v[0]));
  BOOST_TEST(std::abs(v[1] - 0.5) < 1e-12);
}

// -- bad inputs ---------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(bad_inputs)

BOOST_AUTO_TEST_CASE(grad_tensor_of_the_wrong_shape_names_both_shapes) {
  auto x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  auto y = mul(x, 2.0);
  BOOST_CHECK_EXCEPTION(backward({y}, {.grad_tensors = {Tensor::ones({3, 2})}}), EngineError,
                        message_has({"[2, 3]", "[3, 2]"}));
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(empty_root_list) {
  BOOST_CHECK_EXCEPTION(backward({}), EngineError,
                        message_has({}, {"empty", "no tensor", "no root"}));
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(root_that_does_not_require_grad) {
  auto x = Tensor::ones({2});
  BOOST_CHECK_EXCEPTION(backward({sum(x)}), EngineError, message_has({"require"}));
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(non_scalar_root_without_grad_tensors) {
  auto x = leaf({1, 2});
  BOOST_CHECK_EXCEPTION(backward({mul(x, 2.0)}), EngineError, message_has({"scalar"}));
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(hand_built_cycle_is_refused_naming_a_node_on_it) {
  auto meta = Tensor::zeros({1});
  // root -> CycleA -> CycleB -> CycleA
  auto a = make_node<LambdaNode>("CycleA", identity, edge_list{Edge{}});
  auto b = make_node<LambdaNode>("CycleB", identity, edge_list{Edge{a, 0}});
  auto root = make_node<LambdaNode>("CycleRoot", identity, edge_list{Edge{a, 0}});
  for (auto& n : {a, b, root})
    n->add_input_metadata(meta);
  a->set_next_edge(0, Edge{b, 0});
  BOOST_CHECK_EXCEPTION(
    default_executor().execute({Edge{root, 0}}, {Tensor::ones({1})}, ExecuteOptions{}, {}),
    EngineError, message_has({"cycle"}, {"CycleA", "CycleB"}));
  a->set_next_edge(0, Edge{}); // break the reference cycle
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(exception_in_a_node_reaches_the_caller_naming_the_node) {
  auto x = leaf({1, 2});
  auto y = lambda_op(x, "ExplodingBackward", [](variable_list&&) -> variable_list {
    throw std::runtime_error("boom in backward");
  });
  BOOST_CHECK_EXCEPTION(sum(y).backward(), EngineError,
                        message_has({"ExplodingBackward", "boom in backward"}));
  BOOST_TEST(!x.grad().defined());
  check_engine_still_works();
}

BOOST_AUTO_TEST_CASE(node_returning_a_gradient_of_the_wrong_shape_is_named) {
  auto x = leaf({1, 2, 3}, {3});
  auto y = lambda_op(x, "BadShapeBackward", [](variable_list&&) {
    return variable_list{Tensor::ones({2, 2})};
  });
  BOOST_CHECK_EXCEPTION(sum(y).backward(), EngineError,
                        message_has({"BadShapeBackward", "[2, 2]", "[3]"}));
  check_engine_still_works();
}

BOOST_AUTO_TEST_SUITE_END()

// -- final callbacks ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(queue_callback_runs_once_after_the_backward_completes) {
  std::vector<std::string> log;
  int callbacks = 0;
  bool grad_ready_in_callback = false;
  auto x = leaf({1, 2});
  auto y = lambda_op(x, "QueueingBackward", [&](variable_list&& g) {
    log.push_back("node");
    queue_callback([&] {
      ++callbacks;
      grad_ready_in_callback = x.grad().defined();
      log.push_back("callback");
    });
    return std::move(g);
  });
  x.register_hook([&](const Tensor&) {
    log.push_back("leaf");
    return Tensor();
  });
  sum(y).backward();
  BOOST_TEST(callbacks == 1);
  BOOST_TEST(grad_ready_in_callback);
  BOOST_TEST(log == (std::vector<std::string>{"node", "leaf", "callback"}),
             boost::test_tools::per_element());
  sum(mul(x, 1.0)).backward(); // a later backward does not run it again
  BOOST_TEST(callbacks == 1);
}

BOOST_AUTO_TEST_CASE(queue_callback_outside_a_backward_throws) {
  BOOST_CHECK_THROW(queue_callback([] {}), std::exception);
}

// -- graph construction ---------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(no_grad_builds_no_graph) {
  auto x = leaf({1, 2});
  Tensor y;
  {
    NoGradGuard no_grad;
    BOOST_TEST(!GradMode::is_enabled());
    y = mul(exp(x), 2.0);
  }
  BOOST_TEST(GradMode::is_enabled());
  BOOST_TEST(!y.requires_grad());
  BOOST_TEST(!y.grad_fn());
  BOOST_TEST(y.is_leaf());
  auto z = mul(x, 2.0);
  BOOST_TEST(z.requires_grad());
  BOOST_TEST((z.grad_fn() != nullptr));
}

BOOST_AUTO_TEST_CASE(detach_stops_gradients) {
  auto x = leaf({1, 2});
  auto y = mul(x, 2.0);
  auto d = y.detach();
  BOOST_TEST(!d.requires_grad());
  BOOST_TEST(!d.grad_fn());
  sum(mul(d, x)).backward();
  check_values(x.grad(), {2, 4}); // d, not 2d: no gradient through y
}
