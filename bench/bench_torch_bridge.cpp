/// bench_torch_bridge [Google Benchmark flags]
///
/// Wall time of libtorch backward passes on libtorch's stock engine
/// (`torch`) and on actorgrad's actor engine through the torch bridge
/// (`torch_actor`, actorgrad::torch::Scope around the timed loop), side by
/// side in one process, with one intra-op thread (at::set_num_threads(1)):
/// the transformer layer and the 4-layer MLP of bench/torch/torch_cases.h,
/// and the pass-through add chain of 1,000 nodes (the engines' own cost).
/// Each benchmark builds its graph once and runs backward with retain_graph.
/// Wall (real) time; counters: nodes, ns_per_node (wall). bench/HISTORY.md ("Torch bridge") has the
/// figures and the command.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <optional>
#include <string>

#if ACTORGRAD_BENCH_HAVE_TORCH_BRIDGE
#include "actorgrad/actors/torch/install.h"
#include "bench/torch/torch_cases.h"

namespace {

namespace torchb = actorgrad::bench::torchb;

void backward_wall_time(benchmark::State& state, const std::string& kind, int n,
                        bool on_actorgrad) {
  torchb::single_intra_op_thread();
  const auto graph = torchb::make(kind, n);
  std::optional<actorgrad::torch::Scope> scope;
  if (on_actorgrad)
    scope.emplace();
  torchb::backward(*graph); // warm-up: first-use allocations, lazily started threads
  const auto calls = actorgrad::torch::stats().calls;
  for (auto _ : state)
    torchb::backward(*graph);
  if (on_actorgrad &&
      actorgrad::torch::stats().calls - calls != static_cast<std::uint64_t>(state.iterations()))
    state.SkipWithError("a backward call did not run on actorgrad");
  const double nodes = static_cast<double>(torchb::nodes(*graph));
  state.counters["nodes"] = nodes;
  state.counters["ns_per_node"] =
    benchmark::Counter(nodes * static_cast<double>(state.iterations()),
                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

} // namespace

int main(int argc, char** argv) {
  struct Case {
    const char* kind;
    int n;
  };
  for (const Case c : {Case{"transformer", 1}, Case{"mlp", 4}, Case{"chain_passthrough", 1000}})
    for (const bool actor : {false, true})
      benchmark::RegisterBenchmark(
        (std::string(c.kind) + "/" + std::to_string(c.n) + "/" + (actor ? "torch_actor" : "torch"))
          .c_str(),
        [c, actor](benchmark::State& s) { backward_wall_time(s, c.kind, c.n, actor); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime(); // the actor engine's work is on its worker threads, not the caller's CPU
                         // time
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
#else
int main() {
  std::fprintf(stderr, "bench_torch_bridge: built without the torch bridge (actorgrad_torch)\n");
  return 77;
}
#endif
