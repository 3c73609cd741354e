#define BOOST_TEST_MODULE actors_graph_parallel_forward
#include <boost/test/unit_test.hpp>

// Parallel re-forward of a define-once graph (actors/parallel_forward.h): dirty
// branches on sim:0 and sim:1 are recomputed at the same time on their
// device actors, CPU nodes on the calling thread, with the values of the
// sequential executor.

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/parallel_forward.h"
#include "actorgrad/device/sim/sim_config.h"
#include "actorgrad/libengine/graph/graph.h"
#include "actorgrad/libengine/graph/graph_error.h"
#include "actorgrad/libengine/graph/graph_ops.h"
#include "tests/actors/actor_test_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;
namespace d1 = actorgrad::define_once;
using d1::Graph;
using d1::NodeId;

namespace {

constexpr int kBranchDepth = 4;
constexpr std::int64_t kSize = 160;

/// The engine of this test binary: created and destroyed by the global
/// fixture, inside main (a static Engine destroyed by exit() crashes in
/// ~actor_system).
using SharedEngineFixture = SharedEngine<2>;

/// The probe measures how the op bodies overlap on the workers' threads.
/// On asynchronous sim streams those bodies only enqueue kernels, so this
/// binary runs the sim devices synchronously.
struct SynchronousSim {
  SynchronousSim() { sim::configure({.async = false}); }
  ~SynchronousSim() { sim::configure({}); }
};

/// What the instrumented ops saw: how many ran at once, and on which thread.
struct Probe {
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  std::atomic<bool> fail{false};
  std::vector<std::thread::id> thread_of; // per node index, written by that node's op only

  explicit Probe(std::size_t nodes) : thread_of(nodes) {}
};

/// Two heavy branches (x_k @ W_k, tanh, repeated) on sim:0 and sim:1,
/// summed on the CPU.
struct TwoBranches {
  std::shared_ptr<Probe> probe = std::make_shared<Probe>(64);
  Graph g;
  NodeId x[2], w[2], out, joined_cpu[2];
  std::vector<NodeId> branch[2];

  explicit TwoBranches(Device second = Device::sim(1)) {
    const Device dev[2] = {Device::sim(0), second};
    for (int k = 0; k < 2; ++k) {
      x[k] = g.add_input("x" + std::to_string(k),
                         Tensor::randn({kSize, kSize}, 10 + k, DType::f64, dev[k]));
      w[k] = g.add_parameter("W" + std::to_string(k),
                             mul(Tensor::randn({kSize, kSize}, 20 + k, DType::f64, dev[k]), 0.05));
      NodeId h = x[k];
      for (int d = 0; d < kBranchDepth; ++d) {
        h = heavy("b" + std::to_string(k) + "_" + std::to_string(d), h, w[k]);
        branch[k].push_back(h);
      }
      joined_cpu[k] = d1::to_device(g, d1::sum(g, h), Device::cpu(), "to_cpu" + std::to_string(k));
    }
    out =
      g.add_op("out", {joined_cpu[0], joined_cpu[1]}, [p = probe, this](const variable_list& v) {
        p->thread_of[out.index] = std::this_thread::get_id();
        return add(v[0], v[1]);
      });
  }

  NodeId heavy(std::string name, NodeId h, NodeId wk) {
    const auto index = static_cast<std::uint32_t>(g.size());
    return g.add_op(std::move(name), {h, wk}, [p = probe, index](const variable_list& v) {
      p->thread_of[index] = std::this_thread::get_id();
      const int now = p->in_flight.fetch_add(1) + 1;
      int seen = p->max_in_flight.load();
      while (now > seen && !p->max_in_flight.compare_exchange_weak(seen, now)) {
      }
      Tensor r = v[0];
      for (int rep = 0; rep < 3; ++rep)
        r = tanh(matmul(r, v[1]));
      p->in_flight.fetch_sub(1);
      if (p->fail.load())
        throw std::runtime_error("injected failure");
      return r;
    });
  }

  void reset_probe() { probe->max_in_flight = 0; }
};

void check_same_values(const Graph& a, const Graph& b) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  for (std::uint32_t i = 0; i < a.size(); ++i)
    BOOST_REQUIRE(a.value(NodeId{i}).to_vector() == b.value(NodeId{i}).to_vector());
}

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(SharedEngineFixture);
BOOST_TEST_GLOBAL_FIXTURE(SynchronousSim);

BOOST_AUTO_TEST_CASE(branches_on_two_devices_reforward_concurrently) {
  TwoBranches par, seq;
  par.g.set_forward_executor(std::make_shared<ParallelForward>(engine()));
  std::thread::id caller;
  bounded([&] {
    caller = std::this_thread::get_id();
    return par.g.forward(par.out);
  });
  seq.g.forward(seq.out);
  check_same_values(par.g, seq.g);
  BOOST_TEST(par.probe->max_in_flight.load() == 2);

  // Where the nodes ran: sim:0 nodes on one worker, sim:1 on another, the
  // CPU node on the thread that called forward.
  const auto t0 = par.probe->thread_of[par.branch[0][0].index];
  const auto t1 = par.probe->thread_of[par.branch[1][0].index];
  BOOST_TEST((t0 != caller && t1 != caller && t0 != t1));
  for (int d = 1; d < kBranchDepth; ++d) {
    BOOST_TEST((par.probe->thread_of[par.branch[0][d].index] == t0));
    BOOST_TEST((par.probe->thread_of[par.branch[1][d].index] == t1));
  }
  BOOST_TEST((par.probe->thread_of[par.out.index] == caller));

  // Change both inputs: both branches are dirty and re-forward together.
  for (TwoBranches* tb : {&par, &seq})
    for (int k = 0; k < 2; ++k)
      tb->g.set_value(tb->x[k], Tensor::randn({kSize, kSize}, 30 + k, DType::f64, Device::sim(k)));
  par.reset_probe();
  bounded([&] { return par.g.forward(par.out); });
  seq.g.forward(seq.out);
  check_same_values(par.g, seq.g);
  BOOST_TEST(par.probe->max_in_flight.load() == 2);

  // Change one input: only its branch and the join are recomputed.
  par.g.set_value(par.x[1], Tensor::randn({kSize, kSize}, 40, DType::f64, Device::sim(1)));
  bounded([&] { return par.g.forward(par.out); });
  BOOST_TEST(par.g.node(par.branch[0][0]).recompute_count == 2u);
  BOOST_TEST(par.g.node(par.branch[1][0]).recompute_count == 3u);
  BOOST_TEST(par.g.node(par.out).recompute_count == 3u);
}

BOOST_AUTO_TEST_CASE(one_device_runs_the_branches_one_at_a_time) {
  TwoBranches one(Device::sim(0));
  one.g.set_forward_executor(std::make_shared<ParallelForward>(engine()));
  bounded([&] { return one.g.forward(one.out); });
  BOOST_TEST(one.probe->max_in_flight.load() == 1);
}

BOOST_AUTO_TEST_CASE(gradients_after_parallel_forward_equal_sequential) {
  TwoBranches par, seq;
  par.g.set_forward_executor(std::make_shared<ParallelForward>(engine()));
  d1::BackwardOptions on_engine;
  on_engine.executor = &engine();
  bounded([&] {
    par.g.backward(par.out, {par.w[0], par.w[1]}, on_engine);
    return 0;
  });
  seq.g.backward(seq.out, {seq.w[0], seq.w[1]}, on_engine);
  for (int k = 0; k < 2; ++k) {
    BOOST_TEST((par.g.grad_of(par.w[k]).device() == Device::sim(k)));
    BOOST_REQUIRE(par.g.grad_of(par.w[k]).to_vector() == seq.g.grad_of(seq.w[k]).to_vector());
  }
}

BOOST_AUTO_TEST_CASE(a_failing_node_fails_the_request_and_stays_dirty) {
  TwoBranches tb;
  tb.g.set_forward_executor(std::make_shared<ParallelForward>(engine()));
  tb.probe->fail = true;
  BOOST_CHECK_EXCEPTION(bounded([&] { return tb.g.forward(tb.out); }), d1::GraphError,
                        message_has({"injected failure", "failed"}));
  BOOST_TEST(tb.g.node(tb.out).recompute_count == 0u);
  tb.probe->fail = false;
  bounded([&] { return tb.g.forward(tb.out); });
  BOOST_TEST(tb.g.node(tb.out).recompute_count == 1u);
}

BOOST_AUTO_TEST_CASE(a_device_the_engine_does_not_serve_is_an_error_not_a_hang) {
  Graph g;
  g.set_forward_executor(std::make_shared<ParallelForward>(engine()));
  const NodeId x = g.add_input("x", Tensor::ones({2}, DType::f64, Device::sim(5)));
  const NodeId y = d1::tanh(g, x, "tanh_on_sim5");
  BOOST_CHECK_THROW(bounded([&] { return g.forward(y); }), std::exception);
  BOOST_TEST(g.node(y).recompute_count == 0u);
}
