/// @file test_second_order_streams.cpp
/// Gradients of gradients on asynchronous sim devices with pool streams
/// (issue #17, bug 4). Random DAGs over the CPU, sim:0 and sim:1 run every
/// op, and both backward calls, with pool streams current; a first grad()
/// with create_graph, then a grad() through the graph it built. Over 200
/// seeds with 20 µs kernel delays the results must equal the reference
/// executor's on a synchronous sim, with no race report, for the actor
/// engine and for the reference executor. Before Note [Producer streams], a
/// CPU node's copy to a device ran on the caller's pool stream while its
/// consumer waited for the default stream: 49 of the 200 graphs wrong on the
/// actor engine, 96 on the reference executor (which runs every node on the
/// caller's thread), and where the gradient was next copied to another
/// device the race detector did not see that read.

#define BOOST_TEST_MODULE streams_second_order_streams
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <optional>
#include <random>
#include <sstream>

#include "actorgrad/device/event.h"
#include "actorgrad/device/guards.h"
#include "actorgrad/device/sim/sim_backend.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/reference_executor.h"
#include "actorgrad/libengine/ops.h"
#include "tests/actors/actor_test_util.h"
#include "tests/streams/sim_test_util.h"

using namespace actorgrad;
using testing::engine;
using testing::SimSettings;

using Engine2 = testing::SharedEngine<2>;
BOOST_TEST_GLOBAL_FIXTURE(Engine2);

namespace {

const Device kSims[] = {Device::sim(0), Device::sim(1)};
const Device kDevices[] = {Device::cpu(), Device::sim(0), Device::sim(1)};
constexpr std::uint32_t kDelayUs = 20;
constexpr std::size_t kLeaves = 3;

/// Makes a pool stream current on each sim device for a scope, each ordered
/// first after all work so far on every sim stream: a careful user
/// switching streams.
class PoolStreams {
public:
  /// Stream `id` (1..pool size) of each sim device.
  explicit PoolStreams(std::uint32_t id) {
    for (std::size_t d = 0; d < 2; ++d)
      make_current(d, id);
  }
  /// A random pool stream of each sim device.
  explicit PoolStreams(std::mt19937_64& rng) {
    for (std::size_t d = 0; d < 2; ++d)
      make_current(d, 1 + static_cast<std::uint32_t>(rng() % sim::backend().pool_size()));
  }

private:
  void make_current(std::size_t d, std::uint32_t id) {
    const Stream s(kSims[d], id);
    for (Device other : kSims)
      for (std::uint32_t k = 0; k <= sim::backend().pool_size(); ++k)
        if (Stream(other, k) != s)
          Event::recorded_on(Stream(other, k)).block(s);
    guards_[d].emplace(s);
  }

  std::optional<StreamGuard> guards_[2];
};

struct Graph {
  std::vector<Tensor> leaves;
  std::vector<Tensor> roots;
  std::vector<Tensor> root_grads;
  std::string description;
};

/// A random DAG of small [3, 3] values: elementwise and matrix ops with
/// second derivatives, broadcast sums, and moves between devices.
class Generator {
public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}

  Graph build() {
    Graph g;
    std::ostringstream desc;
    desc << "ops:";
    std::vector<Tensor> values;
    for (std::size_t i = 0; i < kLeaves; ++i) {
      PoolStreams streams(rng_);
      g.leaves.push_back(
        Tensor::uniform({3, 3}, -1.0, 1.0, rng_(), DType::f64, device()).set_requires_grad());
      values.push_back(g.leaves.back());
    }
    for (int i = 0, n = uniform(6, 14); i < n; ++i) {
      PoolStreams streams(rng_);
      std::string what;
      values.push_back(op(values, what));
      desc << " " << what << "@" << values.back().device().str();
    }
    PoolStreams streams(rng_);
    for (int r = 0, n = uniform(1, 2); r < n; ++r) {
      g.roots.push_back(values[values.size() - 1 - static_cast<std::size_t>(r)]);
      g.root_grads.push_back(
        Tensor::uniform({3, 3}, -1.0, 1.0, rng_(), DType::f64, g.roots.back().device()));
    }
    g.description = desc.str();
    return g;
  }

  std::mt19937_64& rng() { return rng_; }

private:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  Device device() { return kDevices[uniform(0, 2)]; }

  /// Mostly one of the last three values (chains), sometimes any (fan-out).
  const Tensor& pick(const std::vector<Tensor>& values) {
    const int n = static_cast<int>(values.size());
    return values[uniform(0, 2) > 0 ? uniform(std::max(0, n - 3), n - 1) : uniform(0, n - 1)];
  }

  Tensor op(const std::vector<Tensor>& values, std::string& what) {
    const Tensor& a = pick(values);
    const Tensor b = pick(values).to(a.device());
    switch (uniform(0, 6)) {
    case 0: what = "mul"; return mul(a, b);
    case 1: what = "add(mul)"; return add(a, mul(b, b));
    case 2: what = "tanh"; return tanh(a);
    case 3: what = "sigmoid(mul)"; return sigmoid(mul(a, b));
    case 4: what = "matmul"; return matmul(a, b);
    case 5: what = "add(sum)"; return add(tanh(a), sum(b));
    default: {
      const Tensor moved = a.to(device());
      what = "to(" + moved.device().str() + ")";
      return mul(moved, moved);
    }
    }
  }

  std::mt19937_64 rng_;
};

using Results = std::vector<std::vector<double>>;

/// Builds the graph of `seed`, takes grad() of its roots with create_graph,
/// then grad() of sum_i <first_i, v_i> through the graph that built; returns
/// both lists of gradients, read on the host.
Results second_order(std::uint64_t seed, Executor& executor, std::string* description = nullptr) {
  Generator gen(seed);
  const Graph g = gen.build();
  if (description)
    *description = g.description;
  PoolStreams caller(gen.rng());
  const variable_list first = grad(g.roots, g.leaves, {g.root_grads, true, true, true}, executor);
  variable_list roots, vs;
  for (const Tensor& t : first)
    if (t.defined() && t.requires_grad()) {
      roots.push_back(t);
      vs.push_back(Tensor::uniform(t.shape(), -1.0, 1.0, gen.rng()(), DType::f64, t.device()));
    }
  variable_list all = first;
  if (!roots.empty())
    for (const Tensor& t : grad(roots, g.leaves, {vs, false, false, true}, executor))
      all.push_back(t);
  Results out;
  for (const Tensor& t : all)
    out.push_back(t.defined() ? t.to_vector() : std::vector<double>{});
  return out;
}

/// Equal within 1e-12 relative: the engines may add a node's gradients in another order.
bool close(const Results& a, const Results& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size())
      return false;
    for (std::size_t j = 0; j < a[i].size(); ++j)
      if (std::abs(a[i][j] - b[i][j]) >
          1e-12 * std::max({1.0, std::abs(a[i][j]), std::abs(b[i][j])}))
        return false;
  }
  return true;
}

Results synchronous_reference(std::uint64_t seed) {
  ReferenceExecutor reference;
  sim::configure({.async = false});
  Results r = second_order(seed, reference);
  sim::configure({});
  return r;
}

void check_200_seeds(Executor& executor) {
  int wrong = 0, raced = 0, second = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const Results expected = synchronous_reference(seed);
    SimSettings sim(seed, kDelayUs);
    std::string description;
    const Results got = second_order(seed, executor, &description);
    const bool ok = close(got, expected);
    second += got.size() > kLeaves ? 1 : 0;
    const bool quiet = sim::race_reports().empty();
    BOOST_TEST_CONTEXT("seed " << seed << ", " << description) {
      BOOST_TEST(ok);
      BOOST_TEST(quiet, testing::joined_reports());
    }
    wrong += ok ? 0 : 1;
    raced += quiet ? 0 : 1;
  }
  BOOST_TEST_MESSAGE(wrong << " of 200 graphs wrong, " << raced << " with race reports; " << second
                           << " have second-order gradients");
  BOOST_TEST(second > 150); // most graphs are not linear in their leaves
}

} // namespace

BOOST_AUTO_TEST_CASE(actor_engine_matches_the_reference_with_pool_streams) {
  check_200_seeds(engine());
}

BOOST_AUTO_TEST_CASE(reference_executor_on_async_sims_matches_the_synchronous_run) {
  ReferenceExecutor reference;
  check_200_seeds(reference);
}

// The smallest graph of the bug: the CPU node of `y.to(cpu)` copies its
// gradient to sim:1 on the caller's pool stream, and the ToCopyBackward of
// `x.to(sim:1)` copies that to sim:0. Without the fix only the detector's
// check of the copy's cross-device source (sim:1) sees the missing wait.
BOOST_AUTO_TEST_CASE(a_cpu_nodes_copy_to_a_device_is_ordered_before_its_use) {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    SimSettings sim(seed, kDelayUs);
    Tensor x = Tensor::uniform({64}, -1.0, 1.0, seed, DType::f64, kSims[0]).set_requires_grad();
    Tensor y;
    {
      PoolStreams forward(1); // ToCopyBackward of x.to(sim:1) runs on sim:1/stream 1
      y = x.to(kSims[1]).to(Device::cpu());
    }
    PoolStreams caller(2); // the CPU nodes' copy lands on sim:1/stream 2
    backward({sum(mul(y, y))}, {}, engine());
    const auto g = x.grad().to_vector();
    const auto v = x.to_vector();
    bool ok = true;
    for (std::size_t i = 0; i < v.size(); ++i)
      ok = ok && g[i] == 2 * v[i];
    BOOST_TEST_CONTEXT("seed " << seed) {
      BOOST_TEST(ok);
      BOOST_TEST(sim::race_reports().empty(), testing::joined_reports());
    }
  }
}
