/// Define-once graph (libengine/graph): the cost of a re-forward after
/// changing one input of a 10,000-node graph against a full recompute, and
/// the parallel re-forward of two heavy branches on 2 sim devices against 1.
///
///   bench_define_once --benchmark_counters_tabular=true

#include <benchmark/benchmark.h>

#include "bench/common/benchmark_main.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/parallel_forward.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/graph/graph.h"
#include "actorgrad/libengine/graph/graph_ops.h"
#include "actorgrad/libengine/graph/random_graph.h"
#include "actorgrad/libengine/ops.h"

using namespace actorgrad;
namespace d1 = actorgrad::define_once;

namespace {

std::uint64_t total_recomputes(const d1::Graph& g) {
  std::uint64_t n = 0;
  for (std::uint32_t i = 0; i < g.size(); ++i)
    n += g.node(d1::NodeId{i}).recompute_count;
  return n;
}

/// Re-forward of every node of a generated 10,000-node graph after setting
/// `changed` of its inputs (1: incremental; all: full recompute; 0: nothing
/// changed, the cost of the dirty walk alone).
void reforward(benchmark::State& state, std::size_t changed) {
  NoGradGuard no_grad;
  const d1::RandomGraphSpec spec;
  d1::Graph g;
  const d1::RandomGraph rg = d1::make_random_graph(g, spec);
  changed = std::min(changed, rg.inputs.size());
  const Tensor values[2] = {Tensor::full(spec.value_shape, 0.25),
                            Tensor::full(spec.value_shape, -0.5)};
  g.forward(rg.all);
  const std::uint64_t before = total_recomputes(g);
  std::size_t flip = 0;
  for (auto _ : state) {
    ++flip;
    for (std::size_t k = 0; k < changed; ++k)
      g.set_value(rg.inputs[(37 + k) % rg.inputs.size()], values[flip % 2]);
    benchmark::DoNotOptimize(g.forward(rg.all));
  }
  state.counters["recomputed_per_iter"] =
    static_cast<double>(total_recomputes(g) - before) / static_cast<double>(state.iterations());
  state.counters["nodes"] = static_cast<double>(g.size());
}

Engine& engine() {
  static Engine e([] {
    EngineConfig config;
    config.devices = {Device::sim(0), Device::sim(1)};
    return config;
  }());
  return e;
}

/// Two branches of `depth` nodes (3 x tanh(h @ W), 160x160) on sim:0 and on
/// sim:`devices - 1`, summed on the CPU; both inputs change every iteration.
/// `runner`: ParallelForward on the actor engine, else the sequential executor.
void parallel(benchmark::State& state, int devices, bool runner) {
  NoGradGuard no_grad;
  constexpr std::int64_t kSize = 160;
  constexpr int kDepth = 4;
  d1::Graph g;
  if (runner)
    g.set_forward_executor(std::make_shared<ParallelForward>(engine()));
  d1::NodeId x[2], sums[2];
  for (int k = 0; k < 2; ++k) {
    const Device dev = Device::sim(k % devices);
    x[k] = g.add_input("x", Tensor::randn({kSize, kSize}, 10 + k, DType::f64, dev));
    const d1::NodeId w =
      g.add_parameter("W", mul(Tensor::randn({kSize, kSize}, 20 + k, DType::f64, dev), 0.05));
    d1::NodeId h = x[k];
    for (int d = 0; d < kDepth; ++d)
      h = g.add_op("heavy", {h, w}, [](const variable_list& v) {
        Tensor r = v[0];
        for (int rep = 0; rep < 3; ++rep)
          r = tanh(matmul(r, v[1]));
        return r;
      });
    sums[k] = d1::to_device(g, d1::sum(g, h), Device::cpu());
  }
  const d1::NodeId out = d1::add(g, sums[0], sums[1]);
  g.forward(out);
  Tensor inputs[2][2];
  for (int k = 0; k < 2; ++k)
    for (int v = 0; v < 2; ++v)
      inputs[k][v] =
        Tensor::randn({kSize, kSize}, 100 + 2 * k + v, DType::f64, Device::sim(k % devices));
  int flip = 0;
  for (auto _ : state) {
    flip ^= 1;
    for (int k = 0; k < 2; ++k)
      g.set_value(x[k], inputs[k][flip]);
    benchmark::DoNotOptimize(g.forward(out));
  }
}

void register_all() {
  for (auto [name, changed] : {std::pair<const char*, std::size_t>{"one_input", 1},
                               {"all_inputs_full_recompute", SIZE_MAX},
                               {"nothing_changed_walk_only", 0}})
    benchmark::RegisterBenchmark((std::string("reforward_10000/") + name).c_str(),
                                 [changed](benchmark::State& s) { reforward(s, changed); })
      ->Unit(benchmark::kMicrosecond);
  for (int devices : {1, 2})
    benchmark::RegisterBenchmark(
      ("parallel_branches/" + std::to_string(devices) + "dev/actors").c_str(),
      [devices](benchmark::State& s) { parallel(s, devices, true); })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("parallel_branches/2dev/sequential_on_caller",
                               [](benchmark::State& s) { parallel(s, 2, false); })
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
}

} // namespace

int main(int argc, char** argv) {
  return actorgrad::bench::benchmark_main(argc, argv, register_all);
}
