/// @file test_bridge_semantics.cpp
/// The torch bridge against libtorch's stock engine, in one process
/// (install/uninstall): gradients bitwise equal and the same order of node
/// execution on residual blocks with a shared weight, fan-in, hooks,
/// retain_grad, higher order (HVP, third order), two roots,
/// backward(inputs=) and allow_unused.

#define BOOST_TEST_MODULE torch_bridge_semantics
#include "tests/support/torch_diff.h" // libtorch, then Boost.Test

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/graph_task.h>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/torch/torch_graph.h"

namespace {

using actorgrad::testing::check_same;
using actorgrad::testing::grads_of;
using actorgrad::testing::Results;

const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);

torch::Tensor leaf(std::vector<std::int64_t> shape) {
  return torch::randn(shape, f64).requires_grad_(true);
}

} // namespace

BOOST_AUTO_TEST_CASE(chain_of_mixed_ops) {
  check_same([] {
    torch::manual_seed(1);
    auto x = leaf({16});
    auto y = x;
    for (int i = 0; i < 100; ++i)
      y = (i % 3 == 0) ? y.sin() + y : (i % 3 == 1 ? y * 0.9 : y.tanh() - 0.1 * y);
    y.sum().backward();
    return grads_of({x});
  });
}

BOOST_AUTO_TEST_CASE(residual_block_shared_weight_fan_in_hooks_retain_grad) {
  check_same([] {
    torch::manual_seed(2);
    auto x = leaf({4, 8});
    auto w = leaf({8, 8});
    auto b = leaf({8});
    auto h = torch::relu(x.mm(w) + b) + x; // residual
    h.retain_grad();
    auto h2 = torch::tanh(h.mm(w)) + h; // w shared
    h2.retain_grad();
    // Hooks: on a non-leaf (changes the gradient), on a leaf, counted.
    auto calls = torch::zeros({2}, f64);
    h2.register_hook([&](torch::Tensor g) {
      calls[0] += 1;
      return g * 0.5;
    });
    w.register_hook([&](torch::Tensor g) {
      calls[1] += 1;
      return g + 1.0;
    });
    // 5-way fan-in into h2.
    auto s = h2 * 1.5 + h2.sin() + h2.exp() + h2.pow(2) + h2.mm(w);
    s.sum().backward();
    Results r = grads_of({x, w, b, h, h2});
    r.push_back(calls);
    return r;
  });
}

BOOST_AUTO_TEST_CASE(nodes_run_in_the_stock_order) {
  // Tensor hooks run when their node runs: the order of their calls is the
  // order of the nodes (depth, then sequence_nr), here on a graph with two
  // branches of different lengths joined twice. On one CPU thread, whatever
  // ACTORGRAD_CPU_WORKERS says: with several, the order holds within each
  // worker only (Note [Parallel CPU nodes]).
  const auto body = [] {
    torch::manual_seed(3);
    auto x = leaf({3});
    std::vector<double> order;
    auto tag = [&](torch::Tensor t, double id) {
      t.register_hook([&order, id](torch::Tensor g) {
        order.push_back(id);
        return g;
      });
      return t;
    };
    auto a = tag(x.sin(), 1);
    auto b = tag(x.cos(), 2);
    auto c = tag(a * b, 3);
    auto d = tag(b.exp(), 4);
    auto e = tag(c + d, 5);
    auto f = tag(a.tanh() * e, 6);
    (f.sum() + e.sum()).backward();
    return Results{grads_of({x})[0], torch::tensor(order, f64)};
  };
  check_same(body, actorgrad::EngineConfig{});
}

BOOST_AUTO_TEST_CASE(hessian_vector_product_and_third_order) {
  check_same([] {
    torch::manual_seed(4);
    auto x = leaf({5});
    auto v = torch::randn({5}, f64);
    auto y = (x.pow(3) * x.sin()).sum();
    auto g = torch::autograd::grad({y}, {x}, {}, true, true)[0];
    auto hv = torch::autograd::grad({(g * v).sum()}, {x}, {}, true, true)[0];
    auto third = torch::autograd::grad({hv.sum()}, {x})[0];
    return Results{g.detach(), hv.detach(), third};
  });
}

BOOST_AUTO_TEST_CASE(backward_with_create_graph_then_grad_of_grad) {
  check_same([] {
    torch::manual_seed(5);
    auto x = leaf({4});
    auto y = (x.exp() * x).sum();
    y.backward({}, /*retain_graph=*/true, /*create_graph=*/true);
    auto gx = x.grad();
    BOOST_CHECK(gx.requires_grad());
    auto second = torch::autograd::grad({gx.sum()}, {x})[0];
    return Results{gx.detach().clone(), second};
  });
}

BOOST_AUTO_TEST_CASE(two_roots) {
  check_same([] {
    torch::manual_seed(6);
    auto x = leaf({3, 3});
    auto a = x.mm(x).sum();
    auto b = (x * 2).tanh();
    torch::autograd::backward({a, b}, {torch::tensor(2.0, f64), torch::ones({3, 3}, f64)});
    return grads_of({x});
  });
}

BOOST_AUTO_TEST_CASE(backward_inputs_accumulates_only_into_them) {
  check_same([] {
    torch::manual_seed(7);
    auto x = leaf({4});
    auto w = leaf({4});
    auto loss = (x * w).sin().sum();
    loss.backward({}, false, false, {w});
    BOOST_CHECK(!x.grad().defined());
    return grads_of({x, w});
  });
}

BOOST_AUTO_TEST_CASE(grad_inputs_of_intermediates_and_leaves) {
  check_same([] {
    torch::manual_seed(8);
    auto x = leaf({4});
    auto h = x.exp();
    auto y = (h * x).sum();
    return torch::autograd::grad({y}, {h, x});
  });
}

BOOST_AUTO_TEST_CASE(allow_unused) {
  check_same([] {
    torch::manual_seed(9);
    auto x = leaf({3});
    auto unused = leaf({3});
    auto y = x.pow(2).sum();
    auto r = torch::autograd::grad({y}, {x, unused}, {}, false, false, /*allow_unused=*/true);
    BOOST_CHECK(!r[1].defined());
    return r;
  });
}

// A call's root runs only when it is needed, as libtorch's init_to_execute
// decides: grad(x, x) captures x's gradient without running its
// AccumulateGrad, and a root that leads to no requested input runs no hook
// and does not unpack saved tensors that an earlier call freed.
BOOST_AUTO_TEST_CASE(a_root_that_leads_to_no_input_does_not_run) {
  check_same([] {
    torch::manual_seed(10);
    auto x = leaf({3});
    auto z = leaf({3});
    auto own = torch::autograd::grad({x}, {x}, {torch::ones({3}, f64)});
    BOOST_CHECK(!x.grad().defined());
    auto y = (x * 2).sum();
    int hook_calls = 0;
    y.register_hook([&](torch::Tensor g) {
      ++hook_calls;
      return g;
    });
    auto unused = torch::autograd::grad({y}, {z}, {}, true, false, /*allow_unused=*/true);
    y.backward({}, /*retain_graph=*/true, false, torch::TensorList({z}));
    BOOST_CHECK_EQUAL(hook_calls, 0);
    auto w = x.exp() * x;
    w.backward(torch::ones({3}, f64)); // frees w's saved tensors
    auto freed = torch::autograd::grad({w}, {z}, {torch::ones({3}, f64)}, false, false, true);
    BOOST_CHECK(!unused[0].defined());
    BOOST_CHECK(!freed[0].defined());
    Results r = grads_of({x, z});
    r.push_back(own[0]);
    return r;
  });
}

// Fan-in of many gradients, float and double, small (the Eigen fast path of
// Note [Small in-place accumulation]), odd-sized (vector tails) and past
// libtorch's parallel grain (libtorch's add_): bitwise the stock sums.
BOOST_AUTO_TEST_CASE(fan_in_accumulation_float_and_double) {
  for (auto type : {torch::kFloat32, torch::kFloat64})
    for (std::int64_t n : {1, 37, 40000})
      check_same([type, n] {
        torch::manual_seed(n);
        auto x = torch::randn({n}, torch::TensorOptions().dtype(type)).requires_grad_(true);
        auto h = x * 1.7;
        torch::Tensor y;
        for (int i = 0; i < 9; ++i) {
          auto b = torch::sin(h * (0.3 + 0.1 * i));
          y = i == 0 ? b : y + b;
        }
        y.sum().backward();
        return grads_of({x});
      });
}

namespace {
/// Names of the BACKWARD_FUNCTION record functions seen on this thread.
std::vector<std::string> recorded;
std::unique_ptr<at::ObserverContext> record_name(const at::RecordFunction& fn) {
  recorded.emplace_back(fn.name());
  return nullptr;
}

std::vector<std::string> backward_functions_recorded() {
  recorded.clear();
  const auto handle = at::addThreadLocalCallback(
    at::RecordFunctionCallback(record_name).scopes({at::RecordScope::BACKWARD_FUNCTION}));
  auto x = leaf({3});
  (torch::tanh(x * 2.0) + x).sum().backward();
  at::removeCallback(handle);
  return recorded;
}
} // namespace

// With RecordFunction callbacks registered (the torch profiler), every node
// is a BACKWARD_FUNCTION event, in the stock order, inside one event of the
// bridge's Trampoline (libtorch's engine runs it as a node); without, none.
BOOST_AUTO_TEST_CASE(record_function_events_per_node) {
  const auto stock = backward_functions_recorded();
  actorgrad::torch::Scope scope(actorgrad::testing::bridge_config());
  const auto ours = backward_functions_recorded();
  for (const auto& [who, names] : {std::pair{"stock", stock}, std::pair{"actorgrad", ours}}) {
    std::string all;
    for (const auto& n : names)
      all += n + " ";
    BOOST_TEST_MESSAGE(who << ": " << all);
  }
  BOOST_TEST(stock.size() >= 5u);
  auto expected = stock;
  expected.insert(expected.begin(), "actorgrad::TorchBridge");
  BOOST_TEST(ours == expected, boost::test_tools::per_element());
  recorded.clear();
  auto x = leaf({3});
  (x * 2.0).sum().backward();
  BOOST_TEST(recorded.empty());
}

namespace {
/// What happened during capture_hook_body's call, in order.
std::vector<std::string> capture_events;

/// Doubles the captured gradient, noting when it runs.
struct DoublingCaptureHook : torch::autograd::GraphTask::ExecInfo::Capture::GradCaptureHook {
  at::Tensor operator()(const at::Tensor& grad) override {
    capture_events.emplace_back("capture hook");
    return grad * 2;
  }
};

/// Notes that the node it is added to ran.
struct RanHook : torch::autograd::FunctionPostHook {
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    capture_events.emplace_back("exp node ran");
    return outputs;
  }
};

/// grad(s, {h, x}) with h = exp(x), s = sin(h): a tensor hook on s, which
/// runs first, adds a capture hook for h's gradient (captured at h's node,
/// ExpBackward0, before that node runs for x's gradient).
actorgrad::testing::Results capture_hook_body() {
  capture_events.clear();
  torch::manual_seed(5);
  auto x = leaf({3});
  auto h = x.exp();
  auto s = h.sin();
  h.grad_fn()->add_post_hook(std::make_unique<RanHook>());
  s.register_hook([node = h.grad_fn().get()](torch::Tensor g) {
    capture_events.emplace_back("tensor hook");
    auto* infos = torch::autograd::get_current_graph_task_exec_info();
    infos->at(node).captures_->at(0).hooks_.push_back(std::make_unique<DoublingCaptureHook>());
    return g;
  });
  return torch::autograd::grad({s.sum()}, {h, x});
}
} // namespace

// Capture hooks run when the gradient is captured (before the node that
// captured it runs), on the captured value, as with the stock engine.
BOOST_AUTO_TEST_CASE(capture_hooks_run_when_the_gradient_is_captured) {
  const auto stock = capture_hook_body();
  const auto stock_events = capture_events;
  actorgrad::torch::Scope scope(actorgrad::testing::bridge_config());
  const auto ours = capture_hook_body();
  BOOST_TEST(stock_events ==
               (std::vector<std::string>{"tensor hook", "capture hook", "exp node ran"}),
             boost::test_tools::per_element());
  BOOST_TEST(capture_events == stock_events, boost::test_tools::per_element());
  actorgrad::testing::check_equal(stock, ours);
}

// A captured gradient's only reference is the caller's once the task ran,
// though the task lives on (a distributed pass keeps its task while it adds
// the leaves' gradients into its context, actors/torch/detail/dist_task.cpp):
// libtorch's AccumulateGrad::accumulateGrad then takes the gradient over
// instead of copying it, as with the stock engine, whose input buffer goes
// when the node has run (PyTorch's test_grad_copy_sparse_indices_extra_ref).
BOOST_AUTO_TEST_CASE(a_captured_gradient_is_held_by_the_caller_only) {
  actorgrad::Engine engine(actorgrad::testing::bridge_config());
  auto x = leaf({4});
  auto y = (x * 2).sum();
  const torch::autograd::edge_list roots{torch::autograd::impl::gradient_edge(y)};
  const torch::autograd::edge_list outputs{torch::autograd::impl::gradient_edge(x)};
  auto [task, first] = actorgrad::TorchGraphTask::create(
    roots, {torch::ones_like(y)}, actorgrad::ExecuteOptions{.accumulate_grad = false}, outputs,
    /*reentrant_depth=*/0);
  {
    actorgrad::TorchGraph::call_scope state;
    engine.run(task, std::move(first));
  }
  torch::autograd::variable_list got = task->finish();
  BOOST_TEST_REQUIRE(got.size() == 1u);
  BOOST_TEST(torch::equal(got[0], torch::full({4}, 2.0, f64)));
  BOOST_TEST(got[0].use_count() == 1,
             "references to the captured gradient: " << got[0].use_count());
}

// Note [Lanes that stay] (actors/detail/cpu_lanes.h): backward again over a
// libtorch graph on CPU workers places each fork's branches on the threads
// that ran them before, which libtorch's nodes keep in a table
// (TorchGraph::lane_hint). Every node that ran spread holds a lane of the
// engine there, and the gradient has the same bits on every call.
BOOST_AUTO_TEST_CASE(repeated_spread_calls_keep_libtorch_nodes_lanes) {
  actorgrad::EngineConfig config = actorgrad::testing::bridge_config();
  config.cpu_workers = 2;
  config.cpu_spread_branch = 1; // spread at the first fork
  const actorgrad::torch::Scope scope(config);
  torch::manual_seed(7);
  torch::Tensor x = leaf({8});
  torch::Tensor loss = torch::zeros({}, f64);
  for (int i = 0; i < 8; ++i) {
    torch::Tensor h = x * (i + 1);
    for (int k = 0; k < 6; ++k)
      h = h.sin() + h;
    loss = loss + h.sum();
  }
  std::vector<torch::autograd::Node*> nodes{loss.grad_fn().get()};
  std::set<torch::autograd::Node*> seen{nodes[0]};
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (const torch::autograd::Edge& e : nodes[i]->next_edges())
      if (e.function && seen.insert(e.function.get()).second)
        nodes.push_back(e.function.get());

  torch::Tensor first;
  for (int run = 0; run < 10; ++run) {
    x.mutable_grad() = torch::Tensor();
    loss.backward({}, /*retain_graph=*/true);
    if (!first.defined())
      first = x.grad().clone();
    BOOST_TEST(torch::equal(x.grad(), first), "run " << run);
  }
  std::size_t placed = 0;
  for (torch::autograd::Node* fn : nodes) {
    const unsigned lane = actorgrad::TorchGraph::lane_hint(*fn).load();
    BOOST_TEST(lane <= 2u, fn->name()); // the caller or the worker, plus one
    placed += lane != 0;
  }
  BOOST_TEST(placed * 4 >= nodes.size() * 3, placed << " of " << nodes.size() << " nodes");
}
