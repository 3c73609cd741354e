/// The cost of the engine's recorder (actors/trace/recorder.h, an EngineObserver) on the chain
/// of 10^4 pass-through nodes (bench/common/workloads.h), run by one Engine
/// with recording off and on.
///
/// Off is the engine as everyone runs it: the recorder is compiled in and
/// each observation site costs one untaken branch on TaskContext::observer.
/// Its cost against the engine without the recorder is measured with
/// callgrind (instructions, not time), since the recorder cannot be compiled
/// out:
///
///   valgrind --tool=callgrind --instr-atstart=no
///     build/bench/bench_chain_driver actor chain_passthrough 10000 10
///
/// on this commit and on the one before it (the driver counts only the
/// backward passes).
///
/// Counters (wall time; the machine is shared, so the minimum over the
/// iterations is the least disturbed run): ns_per_node (min), mean_ns_per_node,
/// and, when on, events per node and the time of the snapshot
/// (stop_recording), which is not in ns_per_node.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>

#include "actorgrad/actors/engine.h"
#include "bench/common/workloads.h"

using namespace actorgrad;
using namespace actorgrad::bench;
using clk = std::chrono::steady_clock;

namespace {

constexpr int kChainNodes = 10'000;

void BM_chain_recording(benchmark::State& state) {
  const bool on = state.range(0) != 0;
  Engine engine{EngineConfig{}};
  const Graph chain = chain_passthrough(kChainNodes);
  run_backward(engine, chain); // warm-up

  double best = 1e300, total = 0, snapshot_ns = 0;
  std::size_t events = 0;
  for (auto _ : state) {
    if (on)
      engine.start_recording();
    const auto t0 = clk::now();
    run_backward(engine, chain);
    const double ns = std::chrono::duration<double, std::nano>(clk::now() - t0).count();
    best = std::min(best, ns);
    total += ns;
    if (on) {
      const auto s0 = clk::now();
      const trace::Trace t = engine.stop_recording();
      snapshot_ns += std::chrono::duration<double, std::nano>(clk::now() - s0).count();
      events = 0;
      for (const auto& track : t.tracks)
        events += track.events.size();
    }
    state.SetIterationTime(ns * 1e-9);
  }
  const double iters = static_cast<double>(state.iterations());
  const double nodes = static_cast<double>(chain.nodes);
  state.counters["ns_per_node"] = best / nodes;
  state.counters["mean_ns_per_node"] = total / iters / nodes;
  if (on) {
    state.counters["events_per_node"] = static_cast<double>(events) / nodes;
    state.counters["snapshot_ms"] = snapshot_ns / iters / 1e6;
  }
  state.SetLabel(on ? "recording on" : "recording off");
}

} // namespace

// Off, on, off again: a drift of the machine's speed shows as a gap between the two offs.
BENCHMARK(BM_chain_recording)->Arg(0)->Arg(1)->Arg(0)->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);

BENCHMARK_MAIN();
