/// bench_cpu_workers [Google Benchmark flags]
///
/// The targets of issue #60 (parallel CPU backward), each case on 1 and 2
/// CPU workers (EngineConfig::cpu_workers) side by side in one process,
/// backward wall time:
///   ensemble/16       16 MLPs of 4 x (Linear(64, 64) + Tanh), batch 32,
///                     loss = the sum of their outputs' sums: libtorch on
///                     its stock engine (`torch`) and through the bridge
///                     (`torch_actor_1w`, `torch_actor_2w`)
///   wide_dag/64x20    actorgrad's own ops: 64 independent branches of 20
///                     [28, 28] matrix products (one per MmBackward, about 5
///                     us each), joined by a chain of adds (`actor_1w`,
///                     `actor_2w`)
///   nothing to parallelise: actorgrad's chain_mul/1000 and mlp/4
///   (`actor_1w`, `actor_2w`); libtorch's transformer/1, mlp/4 and
///   chain_passthrough/1000 of bench_torch_bridge (`torch`,
///   `torch_actor_1w`, `torch_actor_2w`)
/// libtorch runs with one intra-op thread (at::set_num_threads(1)), as in
/// bench_torch_bridge, but for ensemble_2t/16: the ensemble with 2 intra-op
/// threads, how CPU workers and intra-op threads share the cores. Each benchmark builds its graph
/// once and runs backward with retain_graph; the CPU workers' engine is built before the timed
/// loop. Counters (wall time of one backward, every iteration timed):
///   best_us             the minimum over the iterations (least disturbed)
///   median_ns_per_iter  the median
///   nodes, ns_per_node  nodes the backward runs, best / nodes
///   vs_1w               2-worker rows: best / the same case's 1-worker best
///   vs_torch            torch_actor rows: best / the stock engine's best
/// Keep the default order: a row's ratios need the rows registered before it.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "actorgrad/actors/engine.h"
#include "bench/common/benchmark_main.h"
#include "bench/common/single_case.h"
#include "bench/common/timed_loop.h"
#include "bench/common/workloads.h"
#if ACTORGRAD_BENCH_HAVE_TORCH_BRIDGE
#include "actorgrad/actors/torch/install.h"
#include "bench/torch/torch_cases.h"
#endif

using namespace actorgrad;
using namespace actorgrad::bench;

namespace {

/// Side of the wide DAG's matrices: one MmBackward of [28, 28] is about 5 us.
constexpr int kWideSize = 28;

/// Best ns of each row so far, by case then engine.
std::map<std::string, std::map<std::string, double>> g_best;

/// `actor_Nw` / `torch_actor_Nw`.
std::string engine_name(const char* prefix, std::size_t workers) {
  return std::string(prefix) + "_" + std::to_string(workers) + "w";
}

/// `kind`, or `kind_Nt` for libtorch with N intra-op threads (N > 1).
std::string case_name(const std::string& kind, int intra_op) {
  return intra_op > 1 ? kind + "_" + std::to_string(intra_op) + "t" : kind;
}

/// Times `once` over the state's iterations and sets the counters of row
/// `eng` of case `key`.
void time_row(benchmark::State& state, const std::string& key, const std::string& eng,
              std::size_t nodes, const std::function<void()>& once) {
  once(); // warm-up: first-use allocations, lazily started threads
  const LoopTimes t = timed_loop(state, once);
  auto& row = g_best[key];
  row[eng] = t.best;
  state.counters["best_us"] = t.best / 1e3;
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["ns_per_node"] = t.best / static_cast<double>(nodes);
  const auto ratio_to = [&](const char* counter, const std::string& other) {
    if (other != eng && row.count(other))
      state.counters[counter] = t.best / row[other];
  };
  if (const auto w = eng.rfind("_2w"); w != std::string::npos)
    ratio_to("vs_1w", eng.substr(0, w) + "_1w");
  if (eng.rfind("torch_actor", 0) == 0)
    ratio_to("vs_torch", "torch");
}

/// The engine with `workers` CPU workers, shared by the process.
Engine& engine_with(std::size_t workers) {
  static std::map<std::size_t, std::unique_ptr<Engine>> engines;
  auto& e = engines[workers];
  if (!e)
    e = std::make_unique<Engine>(EngineConfig{.cpu_workers = workers});
  return *e;
}

/// actorgrad's own graph `kind` (wide_dag, or a case of build_case) on
/// `workers` CPU workers.
void actorgrad_case(benchmark::State& state, const std::string& kind, int n, std::size_t workers) {
  Engine& engine = engine_with(workers);
  const Graph g = kind == "wide_dag" ? wide_dag(64, n, kWideSize) : build_case(kind, n);
  time_row(state, kind + "/" + std::to_string(n), engine_name("actor", workers), g.nodes,
           [&] { run_backward(engine, g); });
}

#if ACTORGRAD_BENCH_HAVE_TORCH_BRIDGE
/// libtorch's graph `kind` on its stock engine (workers 0) or through the
/// bridge on `workers` CPU workers.
void torch_case(benchmark::State& state, const std::string& kind, int n, std::size_t workers,
                int intra_op) {
  torchb::intra_op_threads(intra_op);
  const auto graph = torchb::make(kind, n);
  std::optional<actorgrad::torch::Scope> scope;
  if (workers > 0)
    scope.emplace(EngineConfig{.cpu_workers = workers});
  const auto calls = actorgrad::torch::stats().calls;
  time_row(state, case_name(kind, intra_op) + "/" + std::to_string(n),
           workers > 0 ? engine_name("torch_actor", workers) : "torch", torchb::nodes(*graph),
           [&] { torchb::backward(*graph); });
  if (workers > 0 &&
      actorgrad::torch::stats().calls - calls != static_cast<std::uint64_t>(state.iterations()) + 1)
    state.SkipWithError("a backward call did not run on actorgrad");
}
#endif

void register_all() {
  const auto add = [](const std::string& name, std::function<void(benchmark::State&)> f) {
    benchmark::RegisterBenchmark(name.c_str(), std::move(f))
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime(); // the workers' time is not the caller's CPU time
  };
  struct Case {
    std::string kind;
    int n;
    int intra_op = 1;
  };
#if ACTORGRAD_BENCH_HAVE_TORCH_BRIDGE
  for (const Case& c : {Case{"ensemble", 16}, Case{"ensemble", 16, 2}, Case{"transformer", 1},
                        Case{"mlp", 4}, Case{"chain_passthrough", 1000}})
    for (std::size_t workers : {0, 1, 2})
      add(case_name(c.kind, c.intra_op) + "/" + std::to_string(c.n) + "/" +
            (workers > 0 ? engine_name("torch_actor", workers) : "torch"),
          [c, workers](benchmark::State& s) { torch_case(s, c.kind, c.n, workers, c.intra_op); });
#endif
  for (const Case& c : {Case{"wide_dag", 20}, Case{"chain_mul", 1000}, Case{"mlp", 4}})
    for (std::size_t workers : {1, 2})
      add(c.kind + "/" + (c.kind == "wide_dag" ? "64x" : "") + std::to_string(c.n) + "/" +
            engine_name("actor", workers),
          [c, workers](benchmark::State& s) { actorgrad_case(s, c.kind, c.n, workers); });
}

} // namespace

int main(int argc, char** argv) {
  return actorgrad::bench::benchmark_main(argc, argv, register_all);
}
