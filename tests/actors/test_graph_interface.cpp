/// @file test_graph_interface.cpp
/// The actor engine runs a graph type that is not actorgrad's Node (the toy
/// graph of tests/support/toy_graph.h: scalar gradients, plain structs)
/// through the graph interface (Note [Graph interface]): ready order,
/// fan-in accumulation across devices, selective execution (exec_info with
/// captures) and reentrant calls, past the depth limit too, each checked
/// against the ReferenceExecutor running the same task type.

#define BOOST_TEST_MODULE actors_graph_interface
#include <boost/test/unit_test.hpp>

#include <mutex>
#include <string>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/engine/reference_executor.h"
#include "tests/support/toy_graph.h"

using namespace actorgrad;
using namespace actorgrad::toy;

namespace {

const Device cpu = Device::cpu();
const Device s0 = Device::sim(0);
const Device s1 = Device::sim(1);

std::unique_ptr<Engine>& engine_slot() {
  static std::unique_ptr<Engine> e;
  return e;
}
Engine& engine() { return *engine_slot(); }

/// sim:0 and sim:1, max_recursion_depth 3; destroyed before static destruction.
struct EngineFixture {
  EngineFixture() { engine_slot() = std::make_unique<Engine>(EngineConfig{{s0, s1}, 2, 3}); }
  ~EngineFixture() { engine_slot().reset(); }
};

/// Node names in the order they ran (nodes run on several actors).
struct Log {
  std::mutex m;
  std::vector<std::string> names;
  void add(const std::string& n) {
    std::lock_guard<std::mutex> lock(m);
    names.push_back(n);
  }
};

/// Runs a toy call on the actor engine or the reference executor and
/// returns the captured gradients.
Values run(bool actors, const std::vector<ToyEdge>& roots, Values grads,
           const std::vector<ToyEdge>& outputs = {}) {
  ExecuteOptions options;
  options.accumulate_grad = outputs.empty();
  auto [task, first] = ToyTask::create(roots, std::move(grads), options, outputs, [] {
    GraphTaskBase* parent = detail::current_graph_task();
    return parent ? parent->reentrant_depth + 1 : 0;
  }());
  if (actors) {
    engine().run(task, std::move(first));
  } else {
    ReferenceExecutor reference;
    reference.run(*task, std::move(first));
  }
  return task->finish();
}

/// A node that logs its name and passes `factor * its input` to each edge.
std::shared_ptr<ToyNode> scale(Log& log, const std::string& name, Device d, double factor,
                               std::size_t outputs, std::size_t inputs = 1) {
  return make(name, d, inputs, [&log, name, factor, outputs](const Values& in) {
    log.add(name);
    double sum = 0;
    for (const auto& v : in)
      sum += v.value_or(0.0);
    return Values(outputs, factor * sum);
  });
}

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(EngineFixture);

BOOST_AUTO_TEST_CASE(ready_order_is_depth_then_sequence_nr_on_both_executors) {
  for (bool actors : {false, true}) {
    Log log;
    // sink <- a, b, c (created in that order, so c runs first) <- root
    auto sink = scale(log, "sink", cpu, 1.0, 0, 3);
    auto a = scale(log, "a", cpu, 1.0, 1);
    auto b = scale(log, "b", cpu, 1.0, 1);
    auto c = scale(log, "c", cpu, 1.0, 1);
    connect(a, sink, 0);
    connect(b, sink, 1);
    connect(c, sink, 2);
    auto root = scale(log, "root", cpu, 1.0, 3);
    connect(root, a);
    connect(root, b);
    connect(root, c);
    run(actors, {{root, 0}}, {1.0});
    const std::vector<std::string> expected{"root", "c", "b", "a", "sink"};
    BOOST_TEST(log.names == expected, (actors ? "actor engine" : "reference"));
  }
}

BOOST_AUTO_TEST_CASE(fan_in_accumulates_across_devices_and_captures_the_sum) {
  for (bool actors : {false, true}) {
    Log log;
    auto sink = scale(log, "sink", s1, 1.0, 0);
    const Device where[] = {cpu, s0, s1, s0, cpu};
    std::vector<std::shared_ptr<ToyNode>> branches;
    for (int i = 0; i < 5; ++i) {
      branches.push_back(scale(log, "branch" + std::to_string(i), where[i], i + 1.0, 1));
      connect(branches.back(), sink);
    }
    auto root = scale(log, "root", s0, 2.0, 5);
    for (auto& br : branches)
      connect(root, br);
    Values got = run(actors, {{root, 0}}, {0.5}, {{sink, 0}});
    BOOST_REQUIRE(got.size() == 1u);
    BOOST_REQUIRE(got[0].has_value());
    // root: 2 * 0.5 = 1 to each branch; branch i: (i + 1) * 1; sum 15
    BOOST_TEST(*got[0] == 15.0, (actors ? "actor engine" : "reference"));
  }
}

BOOST_AUTO_TEST_CASE(selective_execution_runs_only_what_the_inputs_need) {
  for (bool actors : {false, true}) {
    Log log;
    auto leaf_x = scale(log, "leaf_x", cpu, 1.0, 0);
    auto leaf_y = scale(log, "leaf_y", s0, 1.0, 0);
    auto via_x = scale(log, "via_x", s0, 3.0, 1);
    auto via_y = scale(log, "via_y", cpu, 5.0, 1);
    connect(via_x, leaf_x);
    connect(via_y, leaf_y);
    auto root = scale(log, "root", cpu, 1.0, 2);
    connect(root, via_x);
    connect(root, via_y);
    Values got = run(actors, {{root, 0}}, {2.0}, {{leaf_x, 0}});
    BOOST_REQUIRE(got.size() == 1u);
    BOOST_TEST(got[0].value_or(-1) == 6.0);
    const std::vector<std::string> expected{"root", "via_x"};
    BOOST_TEST(log.names == expected, (actors ? "actor engine" : "reference"));
  }
}

namespace {

/// A chain whose node `level` makes a nested call over a fresh chain of
/// `level - 1`, on `device`; returns 2^levels times the root gradient.
Values nested_call(bool actors, int levels, Device device, std::vector<int>& depths,
                   std::mutex& m) {
  Log log;
  auto leaf = scale(log, "leaf", cpu, 1.0, 0);
  auto node = make("nest" + std::to_string(levels), device, 1,
                   [actors, levels, device, &depths, &m](const Values& in) {
                     {
                       std::lock_guard<std::mutex> lock(m);
                       depths.push_back(detail::current_graph_task()->reentrant_depth);
                     }
                     double inner = 1.0;
                     if (levels > 1)
                       inner = nested_call(actors, levels - 1, device, depths, m)[0].value();
                     return Values{2.0 * inner * in[0].value()};
                   });
  connect(node, leaf);
  return run(actors, {{node, 0}}, {1.0}, {{leaf, 0}});
}

} // namespace

BOOST_AUTO_TEST_CASE(reentrant_calls_nest_and_take_a_fresh_stack_past_the_depth_limit) {
  const std::int64_t fresh_before = engine().stats().fresh_stacks;
  for (Device d : {cpu, s1}) {
    for (bool actors : {false, true}) {
      std::vector<int> depths;
      std::mutex m;
      Values got = nested_call(actors, 8, d, depths, m);
      BOOST_TEST(got[0].value_or(-1) == 256.0);
      const std::vector<int> expected{0, 1, 2, 3, 4, 5, 6, 7};
      BOOST_TEST(depths == expected, d.str() << (actors ? " actor engine" : " reference"));
    }
  }
  // max_recursion_depth is 3: eight levels on one actor take fresh stacks
  BOOST_TEST(engine().stats().fresh_stacks > fresh_before);
  BOOST_TEST(engine().stats().max_reentrant_frames_per_stack <= 3);
}

BOOST_AUTO_TEST_CASE(a_node_error_names_the_toy_node_and_the_engine_stays_usable) {
  Log log;
  auto bad = make("bad", s0, 1, [](const Values&) -> Values { throw std::runtime_error("boom"); });
  auto root = scale(log, "root", cpu, 1.0, 1);
  connect(root, bad);
  BOOST_CHECK_EXCEPTION(run(true, {{root, 0}}, {1.0}), EngineError, [](const EngineError& e) {
    return std::string(e.what()).find("in toy node bad: boom") != std::string::npos;
  });
  auto leaf = scale(log, "leaf", cpu, 1.0, 0);
  auto ok = scale(log, "ok", s0, 4.0, 1);
  connect(ok, leaf);
  BOOST_TEST(run(true, {{ok, 0}}, {1.0}, {{leaf, 0}})[0].value_or(-1) == 4.0);
}
