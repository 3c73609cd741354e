/// @file test_hook_list.cpp
/// HookList (libengine/autograd/hook_list.h): snapshots keep what was
/// registered when they were taken, handles remove once, and snapshots
/// taken while other threads add and remove hooks are consistent. Run under
/// ThreadSanitizer this checks Note [Hook lists without a lock]; it uses
/// the reference executor only, so CAF (not instrumented) stays idle:
///   tools/tsan.sh unit_test_hook_list
#define BOOST_TEST_MODULE hook_list
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/hook_list.h"
#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/engine/reference_executor.h"
#include "actorgrad/libengine/ops.h"

using namespace actorgrad;

namespace {

using IntHooks = HookList<std::function<int()>>;

/// The results of calling every hook of `s`.
std::vector<int> call_all(const IntHooks::Snapshot& s) {
  std::vector<int> out;
  if (s)
    for (const auto& e : *s)
      out.push_back(e.fn());
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_snapshot_keeps_what_was_registered_when_it_was_taken) {
  auto owner = std::make_shared<IntHooks>();
  BOOST_TEST(owner->empty());
  BOOST_TEST(!owner->snapshot());
  auto a = owner->add(
    owner, [] { return 1; }, "a");
  auto b = owner->add(owner, [] { return 2; });
  auto before = owner->snapshot();
  b.remove();
  auto c = owner->add(
    owner, [] { return 3; }, "c", 7);
  BOOST_TEST(call_all(before) == (std::vector<int>{1, 2}), boost::test_tools::per_element());
  auto after = owner->snapshot();
  BOOST_TEST(call_all(after) == (std::vector<int>{1, 3}), boost::test_tools::per_element());
  // registration numbers are not reused; names and input numbers are kept
  BOOST_TEST(after->at(1).index == 2u);
  BOOST_TEST(after->at(1).name == "c");
  BOOST_TEST(after->at(1).input_nr == 7u);
  a.remove();
  c.remove();
  BOOST_TEST(owner->empty());
  BOOST_TEST(call_all(after).size() == 2u); // still held by the snapshot
}

BOOST_AUTO_TEST_CASE(a_handle_outliving_its_list_does_nothing) {
  auto owner = std::make_shared<IntHooks>();
  auto h = owner->add(owner, [] { return 1; });
  auto snapshot = owner->snapshot();
  owner.reset(); // the list is gone; the snapshot still holds its block
  h.remove();
  h.remove();
  BOOST_TEST(call_all(snapshot) == (std::vector<int>{1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(concurrent_writers_and_snapshots_see_whole_lists) {
  // Two writers add and remove their own hook in a loop while two readers
  // take snapshots: a snapshot holds 1 (permanent) and at most one entry of
  // each writer, in registration order.
  auto owner = std::make_shared<IntHooks>();
  auto permanent = owner->add(owner, [] { return 1; });
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  auto writer = [&](int value) {
    while (!done.load())
      owner->add(owner, [value] { return value; }).remove();
  };
  auto reader = [&] {
    for (int i = 0; i < 20000; ++i) {
      auto seen = call_all(owner->snapshot());
      int tens = 0, hundreds = 0;
      for (int v : seen) {
        tens += v == 10;
        hundreds += v == 100;
      }
      if (seen.empty() || seen[0] != 1 || tens > 1 || hundreds > 1 ||
          seen.size() != 1u + tens + hundreds)
        ++bad;
    }
  };
  std::thread w1(writer, 10), w2(writer, 100), r1(reader), r2(reader);
  r1.join();
  r2.join();
  done = true;
  w1.join();
  w2.join();
  BOOST_TEST(bad.load() == 0);
  BOOST_TEST(call_all(owner->snapshot()) == (std::vector<int>{1}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(backward_passes_while_hooks_come_and_go) {
  // Two threads run grad() on one graph while two threads add and remove
  // hooks on its node and its leaf (each hook returns its input): every
  // result is d sum((2x)^2) / dx = 8x.
  ReferenceExecutor ex;
  Tensor x = Tensor::from_vector({1, 2, 3}, {3}).set_requires_grad();
  Tensor y = mul(x, 2.0);
  Tensor loss = sum(mul(y, y));
  std::atomic<bool> done{false};
  auto churn = [&] {
    while (!done.load()) {
      auto a = y.register_hook([](const Tensor& g) { return mul(g, 1.0); }, "a");
      auto b = x.register_hook([](const Tensor& g) { return g; });
      auto c = y.grad_fn()->add_post_hook(
        [](const variable_list&, const variable_list&) { return variable_list{}; });
      a.remove();
      b.remove();
      c.remove();
    }
  };
  std::atomic<int> bad{0};
  auto run = [&] {
    for (int i = 0; i < 2000; ++i)
      if (grad({loss}, {x}, {.retain_graph = true}, ex)[0].to_vector() !=
          std::vector<double>{8, 16, 24})
        ++bad;
  };
  std::thread c1(churn), c2(churn), g1(run), g2(run);
  g1.join();
  g2.join();
  done = true;
  c1.join();
  c2.join();
  BOOST_TEST(bad.load() == 0);
}
