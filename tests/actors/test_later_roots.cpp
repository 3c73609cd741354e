/// @file test_later_roots.cpp
/// A task whose roots arrive while it runs (Note [Roots that arrive later]:
/// libtorch's DistEngine semantics, BasicGraphTask::create_open and
/// Engine::add_root), on the toy graph: a node that two later roots and the
/// first root reach runs once, with the sum of their gradients, after the
/// last one came; the call returns only then; a failed task stops waiting
/// for the roots that will not come.

#define BOOST_TEST_MODULE actors_later_roots
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

#include "actorgrad/actors/engine.h"
#include "tests/support/toy_graph.h"

using namespace actorgrad;
using namespace actorgrad::toy;
using actorgrad::detail::ReadyTask;

namespace {

const Device cpu = Device::cpu();

/// root -> join <- s1, s2 (later roots, no inputs); join -> leaf (captured).
struct Graph {
  std::atomic<int> join_runs{0};
  std::shared_ptr<ToyNode> leaf = make("leaf", cpu, 1, [](const Values&) { return Values{}; });
  std::shared_ptr<ToyNode> join = make("join", cpu, 1, [this](const Values& in) {
    join_runs.fetch_add(1);
    return Values{10 * in.at(0).value_or(0.0)};
  });
  std::shared_ptr<ToyNode> root = make("root", cpu, 1, [](const Values& in) { return in; });
  std::shared_ptr<ToyNode> s1 = make("s1", cpu, 0, [](const Values&) { return Values{2.0}; });
  std::shared_ptr<ToyNode> s2 = make("s2", cpu, 0, [](const Values&) { return Values{3.0}; });
  std::vector<ToyEdge> later;

  Graph() {
    connect(join, leaf);
    connect(root, join);
    connect(s1, join);
    connect(s2, join);
    later = {{s1, 0}, {s2, 0}};
  }

  /// The task from `root` (null: from `arrived`), capturing the leaf's gradient.
  std::pair<std::shared_ptr<ToyTask>, ReadyTask> task(const ToyEdge* first_root,
                                                      const ToyNode* arrived) {
    ExecuteOptions options;
    options.accumulate_grad = false;
    Values grads = first_root ? Values{1.0} : Values{};
    return ToyTask::create_open(first_root, std::move(grads), later, arrived, options, {{leaf, 0}},
                                {});
  }
};

/// Hands `roots` to `task` from another thread once it is coordinated,
/// after a pause; `handed` is set just before the last one is sent.
std::thread hand_later(Engine& engine, const std::shared_ptr<ToyTask>& task,
                       std::vector<std::shared_ptr<ToyNode>> roots, std::atomic<bool>& handed) {
  auto coordinated = std::make_shared<std::promise<void>>();
  task->on_coordinated = [coordinated] { coordinated->set_value(); };
  return std::thread([&engine, task, roots, coordinated, &handed] {
    coordinated->get_future().wait();
    for (std::size_t i = 0; i < roots.size(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (i + 1 == roots.size())
        handed.store(true);
      engine.add_root(*task, task->later_root(roots[i]));
    }
  });
}

} // namespace

BOOST_AUTO_TEST_CASE(node_reached_from_later_roots_runs_once_with_their_sum) {
  Engine engine;
  Graph g;
  const ToyEdge first{g.root, 0};
  auto [task, start] = g.task(&first, nullptr);
  std::atomic<bool> handed{false};
  std::thread other = hand_later(engine, task, {g.s2, g.s1}, handed);
  engine.run(task, std::move(start));
  const bool returned_after_last_root = handed.load();
  other.join();
  BOOST_TEST(returned_after_last_root);
  BOOST_TEST(g.join_runs.load() == 1);
  Values got = task->finish();
  BOOST_TEST(*got.at(0) == 10 * (1.0 + 2.0 + 3.0));
}

BOOST_AUTO_TEST_CASE(a_later_root_can_be_the_first_task) {
  Engine engine;
  Graph g;
  auto [task, start] = g.task(nullptr, g.s1.get());
  std::atomic<bool> handed{false};
  std::thread other = hand_later(engine, task, {g.s2}, handed);
  engine.run(task, std::move(start));
  const bool returned_after_last_root = handed.load();
  other.join();
  BOOST_TEST(returned_after_last_root);
  BOOST_TEST(g.join_runs.load() == 1);
  BOOST_TEST(task->later_roots_pending() == 0);
  // `root` is no root of this task: join waits for s1 and s2 only.
  Values got = task->finish();
  BOOST_TEST(*got.at(0) == 10 * (2.0 + 3.0));
}

BOOST_AUTO_TEST_CASE(a_failed_task_stops_waiting_for_roots_that_do_not_come) {
  Engine engine;
  Graph g;
  const ToyEdge first{g.root, 0};
  auto [task, start] = g.task(&first, nullptr);
  auto coordinated = std::make_shared<std::promise<void>>();
  task->on_coordinated = [coordinated] { coordinated->set_value(); };
  std::thread other([&engine, t = task, coordinated] {
    coordinated->get_future().wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    engine.fail(*t, std::make_exception_ptr(std::runtime_error("the peer is gone")));
  });
  engine.run(task, std::move(start)); // s1 and s2 never come
  other.join();
  BOOST_TEST(g.join_runs.load() == 0);
  BOOST_CHECK_EXCEPTION(task->finish(), std::runtime_error, [](const std::runtime_error& e) {
    return e.what() == std::string("the peer is gone");
  });
}

BOOST_AUTO_TEST_CASE(a_node_error_stops_the_wait_too) {
  Engine engine;
  Graph g;
  auto bad = make("bad", cpu, 1, [](const Values&) -> Values { throw std::runtime_error("boom"); });
  connect(bad, g.join);
  const ToyEdge first{bad, 0};
  auto [task, start] = g.task(&first, nullptr);
  engine.run(task, std::move(start)); // s1 and s2 never come; bad fails
  BOOST_TEST(task->has_error());
  BOOST_TEST(task->later_roots_pending() == 2);
  BOOST_CHECK_THROW(task->finish(), std::exception);
}
