#define BOOST_TEST_MODULE define_once_graph
#include <boost/test/unit_test.hpp>

// The define-once Graph (libengine/graph): version-based dirty checking,
// cycle detection, deep graphs, and gradients through the engine compared
// with the define-by-run API.

#include <algorithm>
#include <cmath>
#include <deque>
#include <string>
#include <vector>

#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/graph/graph.h"
#include "actorgrad/libengine/graph/graph_error.h"
#include "actorgrad/libengine/graph/graph_ops.h"
#include "actorgrad/libengine/graph/random_graph.h"
#include "actorgrad/libengine/ops.h"
#include "tests/support/executor_fixture.h"

using namespace actorgrad;
namespace d1 = actorgrad::define_once;
using d1::Graph;
using d1::NodeId;

using actorgrad::testing::ExecutorFromEnv;
BOOST_TEST_GLOBAL_FIXTURE(ExecutorFromEnv);

namespace {

/// A predicate for BOOST_CHECK_EXCEPTION: the message contains every part.
auto message_has(std::vector<std::string> parts) {
  return [parts](const std::exception& e) {
    const std::string what = e.what();
    for (const auto& p : parts)
      if (what.find(p) == std::string::npos) {
        BOOST_TEST_MESSAGE("message '" << what << "' lacks '" << p << "'");
        return false;
      }
    return true;
  };
}

std::uint64_t count(const Graph& g, NodeId id) { return g.node(id).recompute_count; }

Tensor sc(double v) { return Tensor::scalar(v); }

/// y = w * x + b, and an unrelated wb = w * b.
struct Affine {
  Graph g;
  NodeId w = g.add_parameter("w", sc(2.0));
  NodeId x = g.add_input("x", sc(3.0));
  NodeId b = g.add_parameter("b", sc(1.0));
  NodeId m = g.add_op("mul", {w, x}, [](const variable_list& v) { return mul(v[0], v[1]); });
  NodeId y = d1::add(g, m, b, "add");
  NodeId wb = d1::mul(g, w, b, "wb");
};

void check_close(const Tensor& a, const Tensor& b, double tol = 1e-12) {
  BOOST_REQUIRE(a.defined());
  BOOST_REQUIRE(b.defined());
  const auto va = a.to_vector(), vb = b.to_vector();
  BOOST_REQUIRE_EQUAL(va.size(), vb.size());
  for (std::size_t i = 0; i < va.size(); ++i)
    BOOST_TEST(va[i] == vb[i], boost::test_tools::tolerance(tol));
}

} // namespace

BOOST_AUTO_TEST_CASE(changing_x_recomputes_only_mul_and_add) {
  Affine a;
  a.g.forward({a.y, a.wb});
  BOOST_TEST(a.g.value(a.y).item() == 7.0);
  for (NodeId id : {a.m, a.y, a.wb})
    BOOST_TEST(count(a.g, id) == 1u);

  a.g.forward({a.y, a.wb}); // nothing changed: all cached
  BOOST_TEST(count(a.g, a.m) == 1u);
  BOOST_TEST(count(a.g, a.y) == 1u);

  const auto w_version = a.g.node(a.w).value_version;
  a.g.set_value(a.x, sc(4.0));
  BOOST_TEST(a.g.node(a.x).value_version == 2u);
  BOOST_TEST(a.g.forward(a.y).item() == 9.0);
  a.g.forward(a.wb);
  BOOST_TEST(count(a.g, a.m) == 2u);
  BOOST_TEST(count(a.g, a.y) == 2u);
  BOOST_TEST(count(a.g, a.wb) == 1u); // w and b unchanged
  BOOST_TEST(a.g.node(a.w).value_version == w_version);
  // The versions the nodes were computed from are recorded per parent.
  BOOST_TEST(a.g.node(a.m).parent_versions == (std::vector<std::uint64_t>{1, 2}));
  BOOST_TEST(a.g.node(a.y).parent_versions == (std::vector<std::uint64_t>{2, 1}));
}

BOOST_AUTO_TEST_CASE(generated_graph_recomputes_exactly_the_downstream_nodes) {
  NoGradGuard no_grad;
  const d1::RandomGraphSpec spec; // 10,000 nodes
  Graph g;
  const d1::RandomGraph rg = d1::make_random_graph(g, spec);
  BOOST_REQUIRE_EQUAL(g.size(), spec.nodes);
  g.forward(rg.all);
  for (NodeId id : rg.all)
    if (g.node(id).kind == d1::NodeKind::op)
      BOOST_REQUIRE_EQUAL(count(g, id), 1u);

  // Reachability from the changed input, computed independently: BFS over
  // child lists built from the parent lists.
  const NodeId changed = rg.inputs[37];
  std::vector<std::vector<std::uint32_t>> children(g.size());
  for (std::uint32_t i = 0; i < g.size(); ++i)
    for (NodeId p : g.node(NodeId{i}).parents)
      children[p.index].push_back(i);
  std::vector<bool> downstream(g.size(), false);
  std::deque<std::uint32_t> queue{changed.index};
  while (!queue.empty()) {
    const std::uint32_t n = queue.front();
    queue.pop_front();
    for (std::uint32_t c : children[n])
      if (!downstream[c]) {
        downstream[c] = true;
        queue.push_back(c);
      }
  }
  const auto reached = std::count(downstream.begin(), downstream.end(), true);
  BOOST_TEST_MESSAGE("nodes downstream of the changed input: " << reached);
  BOOST_TEST(reached > 50);
  BOOST_TEST(reached < static_cast<long>(spec.nodes) / 2);

  const Tensor new_value = Tensor::uniform(spec.value_shape, -1.0, 1.0, 4242);
  g.set_value(changed, new_value);
  g.forward(rg.all);
  for (std::uint32_t i = 0; i < g.size(); ++i)
    if (g.node(NodeId{i}).kind == d1::NodeKind::op)
      BOOST_REQUIRE_EQUAL(count(g, NodeId{i}), downstream[i] ? 2u : 1u);

  // A full recompute of a fresh graph with the same inputs gives the same values.
  Graph fresh;
  const d1::RandomGraph rf = d1::make_random_graph(fresh, spec);
  fresh.set_value(rf.inputs[37], new_value);
  fresh.forward(rf.all);
  for (std::uint32_t i = 0; i < g.size(); ++i)
    BOOST_REQUIRE(g.value(NodeId{i}).to_vector() == fresh.value(NodeId{i}).to_vector());
}

BOOST_AUTO_TEST_CASE(cycle_is_an_error_naming_its_nodes) {
  Graph g;
  const NodeId x = g.add_input("x", sc(1.0));
  const NodeId a = d1::tanh(g, x, "A");
  const NodeId b = d1::tanh(g, a, "B");
  const NodeId c = d1::tanh(g, b, "C");
  const NodeId out = d1::tanh(g, c, "out");
  g.forward(out);
  g.set_parents(a, {c}); // A -> B -> C -> A
  BOOST_CHECK_EXCEPTION(g.forward(out), d1::GraphError,
                        message_has({"cycle", "A#1", "B#2", "C#3", "(3 nodes)"}));
  g.set_parents(a, {x}); // repaired
  BOOST_TEST(g.forward(out).item() == std::tanh(std::tanh(std::tanh(std::tanh(1.0)))));
}

BOOST_AUTO_TEST_CASE(chain_of_100000_nodes_forwards_iteratively) {
  constexpr int kDepth = 100000;
  Graph g;
  const NodeId x = g.add_input("x", sc(0.5));
  NodeId prev = x;
  NodeId first;
  for (int i = 0; i < kDepth; ++i) {
    prev = d1::affine(g, prev, 1.0, 1.0, "n" + std::to_string(i));
    if (i == 0)
      first = prev;
  }
  BOOST_TEST(g.forward(prev).item() == kDepth + 0.5);
  g.set_value(x, sc(1.5));
  BOOST_TEST(g.forward(prev).item() == kDepth + 1.5);
  BOOST_TEST(count(g, first) == 2u);
  BOOST_TEST(count(g, prev) == 2u);

  g.set_parents(first, {prev}); // a cycle through all 100,000 op nodes
  BOOST_CHECK_EXCEPTION(g.forward(prev), d1::GraphError,
                        message_has({"cycle", "(100000 nodes)", "n0#1", "n99999#100000", "more"}));
}

BOOST_AUTO_TEST_CASE(gradient_through_a_100000_node_chain) {
  constexpr int kDepth = 100000;
  Graph g;
  const NodeId p = g.add_parameter("p", sc(0.5));
  NodeId prev = p;
  for (int i = 0; i < kDepth; ++i)
    prev = d1::affine(g, prev, 1.0, 0.0);
  g.backward(prev, {p});
  BOOST_TEST(g.grad_of(p).item() == 1.0);
}

BOOST_AUTO_TEST_CASE(gradients_equal_define_by_run) {
  const Tensor X = Tensor::randn({4, 3}, 1), W1 = Tensor::randn({3, 5}, 2),
               b1 = Tensor::randn({5}, 3), W2 = Tensor::randn({5, 2}, 4);

  // define-by-run
  Tensor w1 = W1.detach(), c1 = b1.detach(), w2 = W2.detach();
  for (Tensor* t : {&w1, &c1, &w2})
    t->set_requires_grad(true);
  Tensor ref_loss = mean(sigmoid(matmul(tanh(add(matmul(X, w1), c1)), w2)));
  ref_loss.backward();

  // define-once
  Graph g;
  const NodeId x = g.add_input("X", X);
  const NodeId pw1 = g.add_parameter("W1", W1), pb1 = g.add_parameter("b1", b1),
               pw2 = g.add_parameter("W2", W2);
  const NodeId h = d1::tanh(g, d1::add(g, d1::matmul(g, x, pw1), pb1));
  const NodeId loss = d1::mean(g, d1::sigmoid(g, d1::matmul(g, h, pw2)));
  g.set_output("loss", loss);
  check_close(g.forward("loss"), ref_loss);
  g.backward(loss, {pw1, pb1, pw2});
  check_close(g.grad_of(pw1), w1.grad());
  check_close(g.grad_of(pb1), c1.grad());
  check_close(g.grad_of(pw2), w2.grad());

  // grad() returns the same gradients and accumulates nothing.
  const variable_list grads = g.grad(loss, {pw1, pb1, pw2});
  check_close(grads[0], w1.grad());
  check_close(grads[2], w2.grad());
  check_close(g.grad_of(pw1), w1.grad());

  // An intermediate node as target: d loss / d h.
  Tensor href = tanh(add(matmul(X, w1), c1));
  const Tensor dh = actorgrad::grad({mean(sigmoid(matmul(href, w2)))}, {href})[0];
  check_close(g.grad(loss, {h})[0], dh);
}

BOOST_AUTO_TEST_CASE(gradients_accumulate_until_zeroed_and_retain_graph) {
  Affine a;
  a.g.backward(a.y, {a.w, a.b});
  BOOST_TEST(a.g.grad_of(a.w).item() == 3.0);
  BOOST_TEST(a.g.grad_of(a.b).item() == 1.0);
  BOOST_TEST(count(a.g, a.m) == 1u);

  // Without retain_graph the history was released: the next backward
  // recomputes the nodes that fed y, and the gradients accumulate.
  const Tensor released_y = a.g.value(a.y);
  BOOST_CHECK_THROW(actorgrad::backward({released_y}), EngineError);
  d1::BackwardOptions keep;
  keep.retain_graph = true;
  a.g.backward(a.y, {a.w, a.b}, keep);
  BOOST_TEST(count(a.g, a.m) == 2u);
  BOOST_TEST(a.g.grad_of(a.w).item() == 6.0);

  // With retain_graph the history is kept: no recompute.
  a.g.backward(a.y, {a.w});
  BOOST_TEST(count(a.g, a.m) == 2u);
  BOOST_TEST(count(a.g, a.y) == 2u);
  BOOST_TEST(a.g.grad_of(a.w).item() == 9.0);
  BOOST_TEST(a.g.grad_of(a.b).item() == 2.0);

  a.g.zero_grad();
  BOOST_TEST(!a.g.grad_of(a.w).defined());
  a.g.backward(a.y, {a.w});
  BOOST_TEST(a.g.grad_of(a.w).item() == 3.0);
}

BOOST_AUTO_TEST_CASE(detach_stops_backward) {
  Affine a;
  a.g.set_detached(a.m);
  BOOST_TEST(a.g.forward(a.y).item() == 7.0);
  a.g.backward(a.y, {a.b});
  BOOST_TEST(a.g.grad_of(a.b).item() == 1.0);
  BOOST_CHECK_EXCEPTION(a.g.backward(a.y, {a.m}), d1::GraphError,
                        message_has({"mul#3", "does not require grad"}));
  d1::GradOptions allow_unused;
  allow_unused.allow_unused = true;
  BOOST_TEST(!a.g.grad(a.y, {a.w}, allow_unused).front().defined());
  BOOST_CHECK_EXCEPTION(a.g.grad(a.y, {a.w}), d1::GraphError,
                        message_has({"w#0", "not used to compute", "add#4"}));

  // define-by-run: (w * x).detach() + b
  Tensor w = sc(2.0).set_requires_grad(true), b = sc(1.0).set_requires_grad(true);
  Tensor y = add(mul(w, sc(3.0)).detach(), b);
  y.backward();
  BOOST_TEST(!w.grad().defined());
  BOOST_TEST(b.grad().item() == a.g.grad_of(a.b).item());

  a.g.set_detached(a.m, false); // recomputed, with history again
  a.g.backward(a.y, {a.w});
  BOOST_TEST(a.g.grad_of(a.w).item() == 3.0);
}

BOOST_AUTO_TEST_CASE(no_grad_forward_builds_no_backward_state) {
  Affine a;
  {
    NoGradGuard no_grad;
    const Tensor y = a.g.forward(a.y);
    BOOST_TEST(y.item() == 7.0);
    BOOST_TEST(!y.requires_grad());
    BOOST_TEST(!y.grad_fn());
    BOOST_TEST(!a.g.node(a.m).has_backward_state);
    a.g.forward(a.y); // cached
    BOOST_TEST(count(a.g, a.y) == 1u);
  }
  // Grad mode wants history, which the cached values lack: recomputed.
  const Tensor y = a.g.forward(a.y);
  BOOST_TEST(y.grad_fn() != nullptr);
  BOOST_TEST(count(a.g, a.m) == 2u);
  a.g.backward(a.y, {a.w});
  BOOST_TEST(a.g.grad_of(a.w).item() == 3.0);
}

BOOST_AUTO_TEST_CASE(backward_after_partial_forward_recomputes_stale_nodes) {
  Affine a;
  a.g.forward(a.y);
  a.g.set_value(a.x, sc(5.0)); // y is now stale
  a.g.backward(a.y, {a.w});
  BOOST_TEST(a.g.grad_of(a.w).item() == 5.0); // the current x, not the one y was computed from
  BOOST_TEST(a.g.value(a.y).item() == 11.0);
  BOOST_TEST(count(a.g, a.m) == 2u);
  BOOST_TEST(count(a.g, a.wb) == 0u); // never requested

  // A node never forwarded is computed by backward.
  a.g.backward(a.wb, {a.w});
  BOOST_TEST(count(a.g, a.wb) == 1u);
  BOOST_TEST(a.g.grad_of(a.w).item() == 6.0);
}

BOOST_AUTO_TEST_CASE(errors_name_the_node) {
  Graph g;
  const NodeId x = g.add_input("x");
  const NodeId v = g.add_input("v", Tensor::ones({3}));
  const NodeId s = d1::add(g, x, v, "sum_xv");
  BOOST_CHECK_EXCEPTION(g.forward(s), d1::GraphError, message_has({"x#0", "has no value"}));
  g.set_value(x, Tensor::ones({2}));
  BOOST_CHECK_EXCEPTION(g.forward(s), d1::GraphError, message_has({"sum_xv#2", "failed"}));
  g.set_value(x, Tensor::ones({3}));
  BOOST_TEST(g.forward(s).to_vector() == (std::vector<double>{2, 2, 2}));
  BOOST_CHECK_THROW(g.set_value(s, sc(1.0)), d1::GraphError);
  BOOST_CHECK_THROW(g.output("nope"), d1::GraphError);
  BOOST_CHECK_THROW(g.forward(NodeId{99}), d1::GraphError);
}
