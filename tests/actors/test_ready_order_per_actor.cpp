#define BOOST_TEST_MODULE ready_order_per_actor
#include <boost/test/unit_test.hpp>

// The ready order on each actor, observed through an EngineObserver (testing::on_node_start)
// (called by the actor that runs a node, with that actor's device): among
// the ready nodes of one actor the one with the higher sequence_nr (the
// later-created) runs first, and a task that arrives later but ranks higher
// overtakes one already queued (Note [Priority mailbox] in actors/detail/runner.h).
// (The heap's order on its own: tests/unit/test_ready_heap.cpp.)

#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/detail/graph_task.h"
#include "tests/actors/actor_test_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

/// One node start seen by the observer.
struct Start {
  Device actor;
  const void* node;
  std::uint64_t sequence_nr;
  std::string name;
  std::uint64_t task_id;
};

/// Records node starts (tests may lock; the engine itself does not).
class Recorder {
public:
  void add(Start s) {
    std::lock_guard<std::mutex> lock(mu_);
    starts_.push_back(std::move(s));
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    starts_.clear();
  }
  /// Starts on the actor of `d`, in order, of task `task_id` (0: any).
  std::vector<Start> on(Device d, std::uint64_t task_id = 0) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Start> out;
    for (const auto& s : starts_)
      if (s.actor == d && (task_id == 0 || s.task_id == task_id))
        out.push_back(s);
    return out;
  }
  std::vector<Start> all() const {
    std::lock_guard<std::mutex> lock(mu_);
    return starts_;
  }

private:
  mutable std::mutex mu_;
  std::vector<Start> starts_;
};

Recorder& recorder() {
  static Recorder r;
  return r;
}

/// Created and destroyed by the global fixture, inside main.
std::string names(const std::vector<Start>& v) {
  std::ostringstream os;
  for (const auto& s : v)
    os << s.name << "#" << s.sequence_nr << "@" << s.actor.str() << " ";
  return os.str();
}

/// The order in which a single heap runs the graph below `root` (one
/// actor, every node ready when its last input arrives): PyTorch's ready
/// order simulated directly.
std::vector<const Node*> simulated_order(const std::shared_ptr<Node>& root) {
  std::unordered_map<const Node*, int> deps;
  std::vector<Node*> stack{root.get()};
  std::set<const Node*> seen{root.get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const auto& e : n->next_edges()) {
      if (!e.is_valid())
        continue;
      ++deps[e.function.get()];
      if (seen.insert(e.function.get()).second)
        stack.push_back(e.function.get());
    }
  }
  auto later_first = [](const Node* a, const Node* b) {
    return a->sequence_nr() < b->sequence_nr();
  };
  std::priority_queue<const Node*, std::vector<const Node*>, decltype(later_first)> heap(
    later_first);
  heap.push(root.get());
  std::vector<const Node*> order;
  while (!heap.empty()) {
    const Node* n = heap.top();
    heap.pop();
    order.push_back(n);
    for (const auto& e : n->next_edges())
      if (e.is_valid() && --deps[e.function.get()] == 0)
        heap.push(e.function.get());
  }
  return order;
}

/// A random graph of ops whose every node runs on `d`, with one root.
Tensor random_graph_on(Device d, std::mt19937_64& rng) {
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  std::vector<Tensor> values;
  for (int i = 0; i < 4; ++i)
    values.push_back(Tensor::uniform({2, 2}, -1, 1, rng(), DType::f64, d).set_requires_grad(true));
  for (int i = 0; i < 20; ++i) {
    const Tensor& a = values[pick(static_cast<int>(values.size()))];
    const Tensor& b = values[pick(static_cast<int>(values.size()))];
    switch (pick(5)) {
    case 0: values.push_back(add(a, b)); break;
    case 1: values.push_back(mul(a, b)); break;
    case 2: values.push_back(tanh(a)); break;
    case 3: values.push_back(matmul(a, b)); break;
    default: values.push_back(sigmoid(a)); break;
    }
  }
  Tensor root = values.back();
  for (std::size_t i = values.size() - 6; i + 1 < values.size(); ++i)
    root = add(root, values[i]); // fan-in at the end
  return sum(root);
}

/// Waits on `f` at most 10 s; records a timeout in `timed_out` (no Boost
/// assertions off the test thread).
void wait_signal(const std::shared_future<void>& f, std::atomic<bool>& timed_out) {
  if (f.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
    timed_out = true;
}

} // namespace

struct EngineFixture {
  EngineFixture() {
    EngineConfig cfg{{Device::sim(0), Device::sim(1)}};
    cfg.observer =
      testing::on_node_start([](Device actor, const GraphTaskBase& task, const NodeInfo& node) {
        recorder().add({actor, node.id, node.sequence_nr, node.name, task.id});
      });
    engine_slot() = std::make_unique<Engine>(std::move(cfg));
  }
  ~EngineFixture() { engine_slot().reset(); }
};
BOOST_TEST_GLOBAL_FIXTURE(EngineFixture);

// Independent nodes that become ready together on one actor run
// later-created first.
BOOST_AUTO_TEST_CASE(independent_ready_nodes_run_later_created_first) {
  Engine& eng = engine();
  for (Device d : {Device::sim(0), Device::cpu()}) {
    recorder().clear();
    Tensor x = Tensor::uniform({3}, -1, 1, 1, DType::f64, d).set_requires_grad(true);
    std::vector<Tensor> branches;
    std::vector<std::shared_ptr<Node>> nodes;
    for (int i = 0; i < 8; ++i) {
      auto [y, node] = lambda_op(x, "branch" + std::to_string(i), identity);
      branches.push_back(y);
      nodes.push_back(node);
    }
    Tensor total = branches[0];
    for (int i = 1; i < 8; ++i)
      total = add(total, branches[i]);
    bounded([&] { backward({sum(total)}, {}, eng); });

    std::vector<std::uint64_t> branch_order;
    for (const auto& s : recorder().on(d))
      if (s.name.rfind("branch", 0) == 0)
        branch_order.push_back(s.sequence_nr);
    BOOST_TEST_CONTEXT("device " << d.str() << ": " << names(recorder().on(d))) {
      BOOST_REQUIRE_EQUAL(branch_order.size(), 8u);
      for (std::size_t i = 0; i < branch_order.size(); ++i)
        BOOST_TEST(branch_order[i] == nodes[7 - i]->sequence_nr());
    }
    // Every node ran on the actor of its device, none elsewhere.
    for (const auto& s : recorder().all())
      BOOST_TEST((s.actor == d), s.name << " ran on " << s.actor.str());
  }
}

// On one actor, the whole execution order equals the ready order computed
// by a single heap (same graph, same dependencies).
BOOST_AUTO_TEST_CASE(order_on_one_actor_equals_simulated_ready_order) {
  Engine& eng = engine();
  std::mt19937_64 rng(1234);
  for (int round = 0; round < 40; ++round) {
    Device d = round % 2 ? Device::sim(1) : Device::cpu();
    Tensor root = random_graph_on(d, rng);
    auto expected = simulated_order(root.grad_fn());
    recorder().clear();
    bounded([&] { backward({root}, {}, eng); });
    auto got = recorder().on(d);
    BOOST_TEST_CONTEXT("round " << round << " on " << d.str() << ": got " << names(got)) {
      BOOST_REQUIRE_EQUAL(got.size(), expected.size());
      for (std::size_t i = 0; i < got.size(); ++i)
        BOOST_TEST(got[i].node == expected[i], "position " << i << ": ran " << got[i].name << "#"
                                                           << got[i].sequence_nr << ", expected "
                                                           << expected[i]->name() << "#"
                                                           << expected[i]->sequence_nr());
    }
    BOOST_TEST(recorder().all().size() == expected.size());
  }
}

// A higher-priority task arrives while a lower one is queued on sim:0:
//
//   GraphRoot (cpu) --> B1, B2 (sim:0, blocking)   and --> P1 (cpu)
//   P1 (cpu) --> Lo (sim:0), Q1 (cpu);  Q1 --> P2 (cpu)
//   P2 (cpu) --> Hi (sim:0), Q2 (cpu)
//
// sequence_nr: Lo < Hi < B2 < B1. On sim:0, B1 runs first and waits until
// Q1 ran on the cpu (so Lo's gradient is in sim:0's mailbox); after B1 the
// worker drains its mailbox: Lo is queued, but B2 ranks higher and runs.
// B2 lets P2 go on (P2 waits for B2 to start), and waits until Q2 ran (so
// Hi's gradient, sent after Lo's was queued, is in the mailbox), then
// sleeps 50 ms. After B2, Hi must run before Lo although it arrived later.
BOOST_AUTO_TEST_CASE(later_arriving_higher_priority_task_overtakes_queued_one) {
  Engine& eng = engine();
  const Device sim0 = Device::sim(0);
  std::promise<void> s1, s2, s3;
  std::shared_future<void> f1 = s1.get_future().share(), f2 = s2.get_future().share(),
                           f3 = s3.get_future().share();
  std::atomic<bool> timed_out{false};
  Tensor on_sim = Tensor::zeros({1}, DType::f64, sim0);
  Tensor on_cpu = Tensor::zeros({1});

  auto sink = [](variable_list&&) { return variable_list{}; };
  auto lo = make_node<LambdaNode>("Lo", sink);
  auto hi = make_node<LambdaNode>("Hi", sink);
  auto b2 = make_node<LambdaNode>("B2", [&](variable_list&&) {
    s2.set_value(); // P2 may now send Hi's gradient
    wait_signal(f3, timed_out);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return variable_list{};
  });
  auto b1 = make_node<LambdaNode>("B1", [&](variable_list&&) {
    wait_signal(f1, timed_out);
    return variable_list{};
  });
  for (auto& n : {lo, hi, b2, b1})
    n->add_input_metadata(on_sim);

  auto q2 = make_node<LambdaNode>("Q2", [&](variable_list&&) {
    s3.set_value();
    return variable_list{};
  });
  auto p2 = make_node<LambdaNode>(
    "P2",
    [&](variable_list&& g) {
      wait_signal(f2, timed_out); // Lo is queued on sim:0 by now
      return variable_list{g[0].to(Device::sim(0)), g[0]};
    },
    edge_list{{hi, 0}, {q2, 0}});
  auto q1 = make_node<LambdaNode>(
    "Q1",
    [&](variable_list&& g) {
      s1.set_value(); // Lo's gradient has been sent
      return variable_list{g[0]};
    },
    edge_list{{p2, 0}});
  auto p1 = make_node<LambdaNode>(
    "P1",
    [&](variable_list&& g) {
      return variable_list{g[0].to(Device::sim(0)), g[0]};
    },
    edge_list{{lo, 0}, {q1, 0}});
  for (auto& n : {q2, p2, q1, p1})
    n->add_input_metadata(on_cpu);
  BOOST_REQUIRE(lo->sequence_nr() < hi->sequence_nr());
  BOOST_REQUIRE(hi->sequence_nr() < b2->sequence_nr());
  BOOST_REQUIRE(b2->sequence_nr() < b1->sequence_nr());

  recorder().clear();
  bounded([&] {
    eng.execute(
      {{b1, 0}, {b2, 0}, {p1, 0}},
      {Tensor::ones({1}, DType::f64, sim0), Tensor::ones({1}, DType::f64, sim0), Tensor::ones({1})},
      ExecuteOptions{}, {});
  });
  BOOST_TEST(!timed_out.load(), "a signal between the nodes timed out");
  // Where the GraphRoot runs (cpu in PyTorch) is not what this test is
  // about: it is left out of both orders.
  auto got = recorder().on(sim0);
  std::vector<std::string> order;
  for (const auto& s : got)
    if (s.name != "GraphRoot")
      order.push_back(s.name);
  BOOST_TEST_CONTEXT("sim:0 ran " << names(got)) {
    std::vector<std::string> expected{"B1", "B2", "Hi", "Lo"};
    BOOST_TEST(order == expected, boost::test_tools::per_element());
  }
  std::vector<std::string> cpu_order;
  for (const auto& s : recorder().on(Device::cpu()))
    if (s.name != "GraphRoot")
      cpu_order.push_back(s.name);
  std::vector<std::string> cpu_expected{"P1", "Q1", "P2", "Q2"};
  BOOST_TEST(cpu_order == cpu_expected, boost::test_tools::per_element());
}

// Two GraphTasks share a worker: nodes of both are ordered in one heap, so a
// node of either task that is ready while the worker is blocked runs by
// sequence_nr, not by task or arrival.
BOOST_AUTO_TEST_CASE(tasks_share_one_heap_per_device) {
  Engine& eng = engine();
  const Device sim1 = Device::sim(1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> timed_out{false};
  std::promise<void> blocker_started;
  auto started = blocker_started.get_future();

  Tensor on_sim = Tensor::zeros({1}, DType::f64, sim1);
  auto sink = [](variable_list&&) { return variable_list{}; };
  auto blocker = make_node<LambdaNode>("Blocker", [&](variable_list&&) {
    blocker_started.set_value();
    wait_signal(released, timed_out);
    return variable_list{};
  });
  auto older = make_node<LambdaNode>("Older", sink); // second task, lower sequence_nr
  auto newer = make_node<LambdaNode>("Newer", sink); // third task, higher sequence_nr
  for (auto& n : {blocker, older, newer})
    n->add_input_metadata(on_sim);

  // The second and third tasks start on the cpu: P sends the gradient of
  // its sim:1 node, then Q (after P on the same thread) signals that it was sent.
  Tensor on_cpu = Tensor::zeros({1});
  std::promise<void> sent2, sent3;
  auto feeder = [&](const std::shared_ptr<Node>& target, std::promise<void>& sent,
                    const std::string& tag) {
    auto q = make_node<LambdaNode>("Q" + tag, [&sent](variable_list&&) {
      sent.set_value();
      return variable_list{};
    });
    auto p = make_node<LambdaNode>(
      "P" + tag,
      [](variable_list&& g) {
        return variable_list{g[0].to(Device::sim(1)), g[0]};
      },
      edge_list{{target, 0}, {q, 0}});
    q->add_input_metadata(on_cpu);
    p->add_input_metadata(on_cpu);
    return p;
  };
  auto p2 = feeder(older, sent2, "2");
  auto p3 = feeder(newer, sent3, "3");

  recorder().clear();
  auto t1 = eng.execute_async({{blocker, 0}}, {Tensor::ones({1}, DType::f64, sim1)}, {}, {});
  BOOST_REQUIRE(started.wait_for(kWaitLimit) == std::future_status::ready);
  auto t2 = eng.execute_async({{p2, 0}}, {Tensor::ones({1})}, {}, {});
  BOOST_REQUIRE(sent2.get_future().wait_for(kWaitLimit) == std::future_status::ready);
  auto t3 = eng.execute_async({{p3, 0}}, {Tensor::ones({1})}, {}, {});
  BOOST_REQUIRE(sent3.get_future().wait_for(kWaitLimit) == std::future_status::ready);
  release.set_value(); // both gradients wait in sim:1's mailbox or heap
  for (auto* f : {&t1, &t2, &t3}) {
    BOOST_REQUIRE(f->wait_for(kWaitLimit) == std::future_status::ready);
    f->get();
  }
  BOOST_TEST(!timed_out.load());
  std::vector<std::string> order;
  for (const auto& s : recorder().on(sim1))
    order.push_back(s.name);
  std::vector<std::string> expected{"Blocker", "Newer", "Older"};
  BOOST_TEST(order == expected, boost::test_tools::per_element());
}
