/// ParallelPlan, the engine-free bound of the multi-device benchmarks: every
/// node runs once per pass, on its device's thread, after its producers.
#define BOOST_TEST_MODULE parallel_plan
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench/common/parallel_plan.h"

using namespace actorgrad;
using namespace actorgrad::bench;

namespace {

Tensor on(Device d) { return Tensor::scalar(1.0, DType::f64, d); }

/// Records when (a global stamp) and on which thread it ran.
class StampNode final : public Node {
public:
  StampNode(Device d, std::atomic<int>& clock) : clock_(&clock) { add_input_metadata(on(d)); }
  void feed(const std::shared_ptr<Node>& next, Device next_device, std::uint32_t input = 0) {
    add_next_edge(Edge{next, input});
    outs_.push_back(on(next_device));
  }
  variable_list apply(variable_list&&) override {
    stamps.push_back(clock_->fetch_add(1));
    threads.push_back(std::this_thread::get_id());
    return outs_;
  }
  std::string name() const override { return "StampNode"; }

  std::vector<int> stamps;
  std::vector<std::thread::id> threads;

private:
  std::atomic<int>* clock_;
  variable_list outs_;
};

struct StampGraph {
  std::vector<std::shared_ptr<StampNode>> nodes; // [0] is the root
  std::vector<std::pair<StampNode*, StampNode*>> edges;
  Graph graph;
};

/// A CPU root fanning out to a chain per sim device, the chains crossing
/// devices halfway and joining on one node of sim:0.
StampGraph diamond(std::atomic<int>& clock) {
  StampGraph s;
  auto make = [&](Device d) {
    s.nodes.push_back(make_node<StampNode>(d, clock));
    return s.nodes.back();
  };
  auto root = make(Device::cpu());
  auto join = make_node<StampNode>(Device::sim(0), clock);
  join->add_input_metadata(on(Device::sim(0)));
  for (int k = 0; k < 2; ++k) {
    auto first = make(Device::sim(k));
    auto second = make(Device::sim(1 - k));
    root->feed(first, Device::sim(k));
    first->feed(second, Device::sim(1 - k));
    second->feed(join, Device::sim(0), static_cast<std::uint32_t>(k));
    s.edges.insert(
      s.edges.end(),
      {{root.get(), first.get()}, {first.get(), second.get()}, {second.get(), join.get()}});
  }
  s.nodes.push_back(join);
  s.graph.roots = {Edge{root, 0}};
  s.graph.root_grads = {on(Device::cpu())};
  return s;
}

} // namespace

BOOST_AUTO_TEST_CASE(each_node_runs_once_per_pass_after_its_producers) {
  std::atomic<int> clock{0};
  StampGraph s = diamond(clock);
  {
    ParallelPlan plan(s.graph);
    for (int pass = 0; pass < 200; ++pass)
      plan.run();
  }
  for (const auto& n : s.nodes)
    BOOST_TEST(n->stamps.size() == 200u);
  for (auto [from, to] : s.edges)
    for (int pass = 0; pass < 200; ++pass)
      BOOST_TEST(from->stamps[pass] < to->stamps[pass]);
  BOOST_TEST(clock.load() == 200 * static_cast<int>(s.nodes.size()));
}

BOOST_AUTO_TEST_CASE(a_device_s_nodes_run_on_one_thread_and_cpu_nodes_on_the_caller) {
  std::atomic<int> clock{0};
  StampGraph s = diamond(clock);
  {
    ParallelPlan plan(s.graph);
    plan.run();
    plan.run();
  }
  const auto caller = std::this_thread::get_id();
  std::vector<std::thread::id> sim_thread(2);
  for (const auto& n : s.nodes) {
    const Device d = n->stream() ? n->stream()->device : Device::cpu();
    for (auto t : n->threads) {
      if (d.is_cpu()) {
        BOOST_TEST((t == caller));
        continue;
      }
      BOOST_TEST((t != caller));
      if (sim_thread[d.index] == std::thread::id{})
        sim_thread[d.index] = t;
      BOOST_TEST((t == sim_thread[d.index]));
    }
  }
  BOOST_TEST((sim_thread[0] != sim_thread[1]));
}

BOOST_AUTO_TEST_CASE(an_input_fed_from_two_devices_is_refused_by_name) {
  std::atomic<int> clock{0};
  auto root = make_node<StampNode>(Device::cpu(), clock);
  auto a = make_node<StampNode>(Device::sim(0), clock);
  auto b = make_node<StampNode>(Device::sim(1), clock);
  auto sink = make_node<StampNode>(Device::sim(0), clock);
  root->feed(a, Device::sim(0));
  root->feed(b, Device::sim(1));
  a->feed(sink, Device::sim(0));
  b->feed(sink, Device::sim(0)); // same input 0: would accumulate from two threads
  Graph g;
  g.roots = {Edge{root, 0}};
  g.root_grads = {on(Device::cpu())};
  try {
    ParallelPlan plan(g);
    BOOST_FAIL("expected std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()).find("input 0 of StampNode is fed from two devices") !=
               std::string::npos);
  }
}
