#define BOOST_TEST_MODULE actors_parallel_cpu
#include <boost/test/unit_test.hpp>

// CPU nodes of one call on several threads (EngineConfig::cpu_workers; Note
// [Parallel CPU nodes] in actors/detail/cpu_lanes.h): the work really moves
// between threads, every gradient has the same bits on every run and with
// any number of workers above one, and the semantics of a one-thread call
// hold on the workers (errors naming their node, reentrant calls, the
// current task and grad mode inside a node).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/engine/graph_task_base.h"
#include "tests/actors/actor_test_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

constexpr int kBranches = 32;
constexpr int kDepth = 6;

/// The threads that ran a node (test bookkeeping only).
struct ThreadLog {
  std::mutex m;
  std::set<std::thread::id> ids;
  void note() {
    std::lock_guard lock(m);
    ids.insert(std::this_thread::get_id());
  }
};

/// A wide graph: `kBranches` branches of tanh/mul over one shared leaf `x`
/// (so x's buffer adds up one gradient per branch: an order-sensitive
/// sum), each with a node that logs its thread and checks its call state,
/// joined by a chain of adds.
struct WideGraph {
  Tensor x;
  Tensor w;
  Tensor loss;
  ThreadLog threads;
  std::atomic<int> bad_state{0};

  explicit WideGraph(int throw_in_branch = -1) {
    std::vector<double> xs(64), ws(64);
    for (int i = 0; i < 64; ++i) {
      xs[i] = 0.01 * (i - 31) + 0.3;
      ws[i] = 1.0 / (i + 3);
    }
    x = Tensor::from_vector(xs, {64}).set_requires_grad(true);
    w = Tensor::from_vector(ws, {64}).set_requires_grad(true);
    for (int b = 0; b < kBranches; ++b) {
      Tensor h = mul(x, 1.0 + 0.01 * b);
      for (int d = 0; d < kDepth; ++d)
        h = tanh(add(mul(h, w), 0.001 * d));
      auto [logged, node] = lambda_op(
        h, b == throw_in_branch ? "Boom" : "Log", [this, b, throw_in_branch](variable_list&& g) {
          threads.note();
          if (!detail::current_graph_task() || GradMode::is_enabled())
            bad_state.fetch_add(1);
          if (b == throw_in_branch)
            throw std::runtime_error("boom in branch " + std::to_string(b));
          return std::move(g);
        });
      Tensor s = sum(logged);
      loss = b == 0 ? s : add(loss, s);
    }
  }

  /// (dx, dw) from `engine`.
  std::vector<std::vector<double>> grads(Engine& engine) {
    variable_list g = engine.grad({loss}, {x, w}, {.retain_graph = true});
    return {g[0].to_vector(), g[1].to_vector()};
  }
};

EngineConfig with_cpu_workers(std::size_t n) {
  EngineConfig c;
  c.cpu_workers = n;
  return c;
}

bool same_bits(const std::vector<std::vector<double>>& a,
               const std::vector<std::vector<double>>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() ||
        std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(double)) != 0)
      return false;
  return true;
}

} // namespace

BOOST_AUTO_TEST_CASE(wide_call_runs_on_several_threads_with_fixed_bits) {
  WideGraph g;
  Engine one(with_cpu_workers(1));
  const auto reference = g.grads(one);
  BOOST_TEST(g.threads.ids.size() == 1u);

  std::vector<std::vector<double>> first;
  for (std::size_t workers : {2u, 4u}) {
    BOOST_TEST_CONTEXT("cpu_workers " << workers) {
      Engine engine(with_cpu_workers(workers));
      g.threads.ids.clear();
      for (int run = 0; run < 20; ++run) {
        const auto got = g.grads(engine);
        if (first.empty())
          first = got;
        // The same bits every run, and with 2 as with 4 workers.
        BOOST_TEST(same_bits(got, first), "run " << run);
        for (std::size_t i = 0; i < got.size(); ++i)
          BOOST_TEST(close(got[i], reference[i], 1e-12));
      }
      // The workers start with the engine, on threads of their own: the
      // first calls may end before one of them waits for work.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (engine.stats().cpu_tasks_shared == 0 && std::chrono::steady_clock::now() < deadline)
        BOOST_TEST(same_bits(g.grads(engine), first));
      BOOST_TEST(engine.stats().cpu_tasks_shared > 0);
      BOOST_TEST(g.threads.ids.size() > 1u);
      BOOST_TEST(g.threads.ids.size() <= workers);
    }
  }
  BOOST_TEST(g.bad_state.load() == 0);
}

BOOST_AUTO_TEST_CASE(repeated_calls_count_the_nodes_that_change_lanes) {
  // Note [Lanes that stay]: a spread call writes into each node it runs
  // there the lane that ran it; EngineStats::cpu_nodes_moved counts exactly
  // the nodes whose lane changed since the call before, and where the
  // nodes go changes no bit.
  WideGraph g;
  std::vector<Node*> nodes{g.loss.grad_fn().get()};
  std::set<Node*> seen{nodes[0]};
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (const Edge& e : nodes[i]->next_edges())
      if (e.is_valid() && seen.insert(e.function.get()).second)
        nodes.push_back(e.function.get());
  const auto lanes = [&] {
    std::vector<unsigned> out;
    for (Node* fn : nodes)
      out.push_back(fn->last_lane().load());
    return out;
  };
  Engine one(with_cpu_workers(1));
  g.grads(one);
  const std::vector<unsigned> unspread = lanes();
  BOOST_TEST(std::count(unspread.begin(), unspread.end(), 0u) == static_cast<long>(nodes.size()));

  std::vector<std::vector<double>> reference;
  // 4 workers first: their lanes 3 and 4 name no lane of the 2-worker
  // engines after them, whose forks keep such a task where it became ready
  // and whose first call writes their own lanes.
  struct Run {
    std::size_t workers;
    bool keep;
  };
  for (const Run r : {Run{4, true}, Run{2, true}, Run{2, false}}) {
    BOOST_TEST_CONTEXT("cpu_workers " << r.workers << ", cpu_keep_lanes " << r.keep) {
      EngineConfig config = with_cpu_workers(r.workers);
      config.cpu_keep_lanes = r.keep;
      Engine engine(config);
      for (int run = 0; run < 20; ++run) {
        const std::vector<unsigned> before = lanes();
        const std::int64_t moved = engine.stats().cpu_nodes_moved;
        const auto got = g.grads(engine);
        if (reference.empty())
          reference = got;
        BOOST_TEST(same_bits(got, reference), "run " << run);
        const std::vector<unsigned> after = lanes();
        long changed = 0;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
          BOOST_TEST(after[i] <= r.workers); // a lane of this engine, plus one (0: never spread)
          changed += before[i] != 0 && after[i] != before[i];
        }
        BOOST_TEST(engine.stats().cpu_nodes_moved - moved == changed, "run " << run);
        // The branches ran spread: they all hold a lane.
        BOOST_TEST(std::count(after.begin(), after.end(), 0u) <
                   static_cast<long>(nodes.size()) / 4);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(narrow_calls_stay_on_the_caller_with_one_thread_bits) {
  // Note [Spreading a call where it branches]: a chain, and a chain whose
  // nodes each feed a short side branch to a leaf (an MLP's parameters),
  // never have two ready nodes heading EngineConfig::cpu_spread_branch (8) nodes of their
  // own, so they run on the caller as with one worker, sharing nothing.
  ThreadLog threads;
  Tensor x = Tensor::from_vector({0.5, -0.25, 0.75}, {3}).set_requires_grad(true);
  std::vector<Tensor> side;
  Tensor h = x;
  for (int i = 0; i < 200; ++i) {
    Tensor p = Tensor::from_vector({1.0 + 0.001 * i}, {1}).set_requires_grad(true);
    side.push_back(p);
    h = tanh(mul(h, i % 2 ? mul(p, 1.5) : p)); // a one- or two-node path to p
    if (i % 50 == 0)
      h = lambda_op(h, "Log", [&threads](variable_list&& g) {
            threads.note();
            return std::move(g);
          }).first;
  }
  Tensor loss = sum(h);
  std::vector<Tensor> inputs{x};
  inputs.insert(inputs.end(), side.begin(), side.end());
  auto grads = [&](Engine& engine) {
    std::vector<std::vector<double>> out;
    for (const Tensor& g : engine.grad({loss}, inputs, {.retain_graph = true}))
      out.push_back(g.to_vector());
    return out;
  };
  Engine one(with_cpu_workers(1));
  const auto reference = grads(one);
  Engine two(with_cpu_workers(2));
  threads.ids.clear();
  for (int run = 0; run < 20; ++run)
    BOOST_TEST(same_bits(grads(two), reference), "run " << run);
  BOOST_TEST(two.stats().cpu_tasks_shared == 0u);
  BOOST_TEST(threads.ids.size() == 1u);
  BOOST_TEST(threads.ids.count(std::this_thread::get_id()) == 1u);
}

BOOST_AUTO_TEST_CASE(an_error_on_a_worker_names_its_node_and_the_engine_goes_on) {
  Engine engine(with_cpu_workers(2));
  for (int branch : {0, kBranches / 2, kBranches - 1}) {
    WideGraph g(branch);
    std::string what;
    try {
      g.grads(engine);
    } catch (const std::exception& e) {
      what = e.what();
    }
    BOOST_TEST(what.find("Boom") != std::string::npos, what);
    BOOST_TEST(what.find("boom in branch " + std::to_string(branch)) != std::string::npos, what);
  }
  WideGraph ok;
  Engine one(with_cpu_workers(1));
  const auto reference = ok.grads(one);
  const auto got = ok.grads(engine);
  for (std::size_t i = 0; i < got.size(); ++i)
    BOOST_TEST(close(got[i], reference[i], 1e-12));
}

BOOST_AUTO_TEST_CASE(reentrant_calls_inside_spread_nodes) {
  // Every branch's node makes a nested grad call (a reentrant backward on
  // whichever thread runs it) and scales its gradient by the result.
  auto build = [](Tensor& x, Tensor& loss) {
    x = Tensor::from_vector({0.5, -0.25, 0.75}, {3}).set_requires_grad(true);
    for (int b = 0; b < 16; ++b) {
      Tensor h = tanh(mul(x, 1.0 + 0.1 * b));
      auto [y, node] = lambda_op(h, "Nested", [](variable_list&& g) {
        AutoGradMode enable(true); // nodes run with grad mode off, as in PyTorch
        Tensor z = Tensor::from_vector({2.0}, {1}).set_requires_grad(true);
        Tensor inner = sum(mul(z, z)); // d/dz = 2z = 4
        const double dz = grad({inner}, {z})[0].to_vector()[0];
        return variable_list{mul(g[0], dz)};
      });
      Tensor s = sum(y);
      loss = b == 0 ? s : add(loss, s);
    }
  };
  Tensor x1, l1, x2, l2;
  build(x1, l1);
  build(x2, l2);
  Engine one(with_cpu_workers(1));
  Engine two(with_cpu_workers(2));
  const auto reference = one.grad({l1}, {x1})[0].to_vector();
  const auto got = two.grad({l2}, {x2})[0].to_vector();
  BOOST_TEST(close(got, reference, 1e-12));
}

BOOST_AUTO_TEST_CASE(backward_into_leaves_and_async_calls_spread_too) {
  WideGraph g;
  Engine one(with_cpu_workers(1));
  const auto reference = g.grads(one);
  Engine engine(with_cpu_workers(2));
  engine.backward({g.loss}, {.retain_graph = true});
  BOOST_TEST(close(g.x.grad().to_vector(), reference[0], 1e-12));
  BOOST_TEST(close(g.w.grad().to_vector(), reference[1], 1e-12));
  const auto async = engine.grad_async({g.loss}, {g.x, g.w}, {.retain_graph = true}).get();
  BOOST_TEST(close(async[0].to_vector(), reference[0], 1e-12));
  BOOST_TEST(close(async[1].to_vector(), reference[1], 1e-12));
}

BOOST_AUTO_TEST_CASE(bad_cpu_workers_is_refused_by_name) {
  for (std::size_t n : {0u, 257u}) {
    std::string what;
    try {
      Engine engine(with_cpu_workers(n));
    } catch (const std::invalid_argument& e) {
      what = e.what();
    }
    BOOST_TEST(what.find("EngineConfig.cpu_workers is " + std::to_string(n)) != std::string::npos,
               what);
  }
}
