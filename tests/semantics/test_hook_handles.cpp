/// @file test_hook_handles.cpp
/// Hooks are removable through the handle their registration returns:
/// before a backward, twice and through a copy, after the tensor or node is
/// gone, from inside another hook (Note [Removing a hook while a backward
/// runs]), and from another thread while backwards run; order is kept.
#define BOOST_TEST_MODULE hook_handles
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/ops.h"
#include "tests/support/executor_fixture.h"
#include "tests/support/hook_test_util.h"
#include "tests/support/lambda_node.h"
#include "tests/support/message_has.h"

using namespace actorgrad;
using actorgrad::testing::kTwos;
using actorgrad::testing::message_has;
using actorgrad::testing::SmallGraph;
using actorgrad::testing::values;

// The macro pastes the name into an identifier: it must be unqualified.
using actorgrad::testing::ExecutorFromEnv;
BOOST_TEST_GLOBAL_FIXTURE(ExecutorFromEnv);

namespace {

using TensorFn = std::function<Tensor(const Tensor&)>;

/// A hook that counts its calls and returns `factor` times the gradient.
TensorFn counting(std::shared_ptr<int> calls, double factor = 1.0) {
  return [calls, factor](const Tensor& g) {
    ++*calls;
    return mul(g, factor);
  };
}

} // namespace

BOOST_AUTO_TEST_CASE(remove_before_backward) {
  SmallGraph g;
  auto calls = std::make_shared<int>(0);
  auto on_y = g.y.register_hook(counting(calls, 10.0));
  auto on_x = g.x.register_hook(counting(calls, 10.0));
  auto pre = g.y.grad_fn()->add_pre_hook([calls](const variable_list&) {
    ++*calls;
    return variable_list{};
  });
  auto post = g.y.grad_fn()->add_post_hook([calls](const variable_list&, const variable_list&) {
    ++*calls;
    return variable_list{};
  });
  for (auto* h : {&on_y, &on_x, &pre, &post})
    h->remove();
  backward({g.loss});
  BOOST_TEST(*calls == 0);
  BOOST_TEST(values(g.x.grad()) == kTwos, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(remove_twice_and_through_a_copy_leaves_the_other_hooks) {
  SmallGraph g;
  auto first = std::make_shared<int>(0), second = std::make_shared<int>(0);
  auto h1 = g.y.register_hook(counting(first, 2.0));
  auto h2 = g.y.register_hook(counting(second, 3.0));
  auto copy = h1;
  h1.remove();
  h1.remove();
  copy.remove();
  BOOST_TEST(copy.id() == h1.id());
  BOOST_TEST(h1.id() != h2.id());
  backward({g.loss}, {.retain_graph = true});
  BOOST_TEST(*first == 0);
  BOOST_TEST(*second == 1);
  BOOST_TEST(values(g.x.grad()) == std::vector<double>(6, 6.0), boost::test_tools::per_element());
  HookHandle().remove(); // an empty handle names no hook
}

BOOST_AUTO_TEST_CASE(remove_after_the_tensor_or_node_is_gone) {
  auto calls = std::make_shared<int>(0);
  HookHandle on_leaf, on_y, on_node;
  Tensor loss, x;
  {
    SmallGraph g;
    on_leaf = g.x.register_hook(counting(calls));
    on_y = g.y.register_hook(counting(calls));
    loss = g.loss;
    x = g.x;
  } // y is gone; its node lives on in loss's graph
  on_y.remove();
  BOOST_TEST(calls.use_count() == 2); // the test's and x's hook's: the removed hook is freed
  backward({loss});
  BOOST_TEST(*calls == 1); // only the leaf's hook ran
  {
    SmallGraph g;
    on_leaf = g.x.register_hook(counting(calls));
    on_node = g.y.grad_fn()->add_pre_hook([](const variable_list&) { return variable_list{}; });
  } // the leaf, the node and the whole graph are gone, and their hooks with them
  BOOST_TEST(calls.use_count() == 2);
  on_leaf.remove();
  on_node.remove();
  on_node.remove();
}

BOOST_AUTO_TEST_CASE(remove_from_inside_another_hook) {
  // Note [Removing a hook while a backward runs]: a removal affects node
  // calls that start after it. Hooks of the node running now: still called
  // this time; hooks of a node that has not started: not called.
  SmallGraph g;
  auto later_on_y = std::make_shared<int>(0), on_x = std::make_shared<int>(0);
  HookHandle y_second, x_hook;
  g.y.register_hook([&](const Tensor&) {
    y_second.remove();
    x_hook.remove();
    return Tensor();
  });
  y_second = g.y.register_hook(counting(later_on_y, 2.0));
  x_hook = g.x.register_hook(counting(on_x, 5.0));
  backward({g.loss}, {.retain_graph = true});
  BOOST_TEST(*later_on_y == 1); // same node call: from its snapshot
  BOOST_TEST(*on_x == 0);       // AccumulateGrad started after the removal
  BOOST_TEST(values(g.x.grad()) == std::vector<double>(6, 4.0), boost::test_tools::per_element());
  backward({g.loss});
  BOOST_TEST(*later_on_y == 1); // the next call: gone
  BOOST_TEST(values(g.x.grad()) == std::vector<double>(6, 6.0), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(hooks_keep_registration_order_across_removals) {
  SmallGraph g;
  std::vector<int> order;
  std::vector<HookHandle> hs;
  for (int i = 0; i < 4; ++i)
    hs.push_back(g.y.register_hook([&order, i](const Tensor&) {
      order.push_back(i);
      return Tensor();
    }));
  hs[1].remove();
  hs.push_back(g.y.register_hook([&order](const Tensor&) {
    order.push_back(4);
    return Tensor();
  }));
  backward({g.loss});
  BOOST_TEST(order == (std::vector<int>{0, 2, 3, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(add_and_remove_from_another_thread_while_backwards_run) {
  // Every backward sees y's gradient doubled or not, never anything else,
  // and nothing crashes (ASan in tools/sanitize.sh).
  SmallGraph g;
  std::atomic<bool> done{false};
  std::thread churn([&] {
    while (!done.load()) {
      auto h = g.y.register_hook([](const Tensor& t) { return mul(t, 2.0); });
      auto p = g.y.grad_fn()->add_pre_hook([](const variable_list&) { return variable_list{}; });
      h.remove();
      p.remove();
    }
  });
  int doubled = 0;
  for (int i = 0; i < 300; ++i) {
    auto r = values(grad({g.loss}, {g.x}, {.retain_graph = true})[0]);
    const bool two = r == kTwos, four = r == std::vector<double>(6, 4.0);
    BOOST_TEST((two || four), "iteration " << i << ": " << r[0]);
    doubled += four;
  }
  done = true;
  churn.join();
  BOOST_TEST_MESSAGE(doubled << " of 300 calls saw the hook");
}

BOOST_AUTO_TEST_CASE(registration_errors_name_the_node) {
  testing::LambdaNode unowned("Unowned", [](variable_list&& g) { return std::move(g); });
  BOOST_CHECK_EXCEPTION(unowned.add_pre_hook([](const variable_list&) { return variable_list{}; }),
                        std::logic_error, message_has({"add_pre_hook", "Unowned", "make_node"}));
  SmallGraph g;
  BOOST_CHECK_EXCEPTION(g.y.grad_fn()->add_tensor_pre_hook(3, [](const Tensor& t) { return t; }),
                        std::out_of_range,
                        message_has({"add_tensor_pre_hook", "MulBackward", "1 inputs", "input 3"}));
}
