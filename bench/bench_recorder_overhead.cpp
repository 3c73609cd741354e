/// The cost of the engine's recorder (actors/trace/recorder.h, an
/// EngineObserver) on the chain of 10^4 pass-through nodes and on the MLP
/// (4 layers, 32x64; bench/common/workloads.h), each run by one Engine with
/// recording off and on, alternating off/on/off so that a drift of the
/// machine's speed shows as a gap between the two offs.
///
/// Off is the engine as everyone runs it: the recorder is compiled in and
/// each observation site costs one untaken branch on TaskContext::observer;
/// a CPU-only call on a caller runs straight through run_all_here (Note
/// [CPU calls on a caller] in actors/detail/runner.cpp). On, every node is
/// observed, so the call takes the runner's dispatch loop: the cost of
/// recording includes that loop.
///
/// Counters (wall time; the machine is shared, so the minimum over the
/// iterations is the least disturbed run): ns_per_node (min),
/// mean_ns_per_node, and, when on, events per node and the time of the
/// snapshot (stop_recording), which is not in ns_per_node. The overhead
/// figures (on minus off, per event and as a share of the backward) are
/// computed from the two minima, as bench/RESULTS.md shows.
///
/// BM_mlp_long_recording: one recording across all the iterations, as a
/// long program recorded with ACTORGRAD_TRACE is: off (range 0), every pass
/// kept (1), the last 5 kept (2, RecordingOptions::keep_passes: older
/// passes' chunks dropped as new ones finish). Counters: ns_per_pass (min)
/// and mean_ns_per_pass, the bytes the recording holds a pass (kept: grows
/// with the passes; last 5: a constant), and the snapshot's time at the end
/// (snapshot_ms, not in the pass times: what exit pays to write the file).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/trace/recorder.h"
#include "bench/common/workloads.h"

using namespace actorgrad;
using namespace actorgrad::bench;
using clk = std::chrono::steady_clock;

namespace {

constexpr int kChainNodes = 10'000;

/// Runs `graph`'s backward with recording off (range 0) or on (1).
void run_recording(benchmark::State& state, const Graph& graph) {
  const bool on = state.range(0) != 0;
  Engine engine{EngineConfig{}};
  run_backward(engine, graph); // warm-up

  double best = 1e300, total = 0, snapshot_ns = 0;
  std::size_t events = 0;
  for (auto _ : state) {
    if (on)
      engine.start_recording();
    const auto t0 = clk::now();
    run_backward(engine, graph);
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
  const double nodes = static_cast<double>(graph.nodes);
  state.counters["ns_per_node"] = best / nodes;
  state.counters["mean_ns_per_node"] = total / iters / nodes;
  if (on) {
    state.counters["events_per_node"] = static_cast<double>(events) / nodes;
    state.counters["snapshot_ms"] = snapshot_ns / iters / 1e6;
  }
  state.SetLabel(on ? "recording on" : "recording off");
}

void BM_chain_recording(benchmark::State& state) {
  static const Graph chain = chain_passthrough(kChainNodes);
  run_recording(state, chain);
}

void BM_mlp_recording(benchmark::State& state) {
  static const Graph net = mlp();
  run_recording(state, net);
}

void BM_mlp_long_recording(benchmark::State& state) {
  static const Graph net = mlp();
  const auto mode = state.range(0);
  Engine engine{EngineConfig{}};
  run_backward(engine, net); // warm-up
  if (mode == 1)
    engine.start_recording();
  else if (mode == 2)
    engine.start_recording(trace::RecordingOptions::last(5));
  double best = 1e300, total = 0;
  for (auto _ : state) {
    const auto t0 = clk::now();
    run_backward(engine, net);
    const double ns = std::chrono::duration<double, std::nano>(clk::now() - t0).count();
    best = std::min(best, ns);
    total += ns;
    state.SetIterationTime(ns * 1e-9);
  }
  const double passes = static_cast<double>(state.iterations());
  state.counters["ns_per_pass"] = best;
  state.counters["mean_ns_per_pass"] = total / passes;
  if (mode != 0) {
    state.counters["bytes_held_per_pass"] =
      static_cast<double>(engine.recording()->bytes_held()) / passes;
    state.counters["events_held"] = static_cast<double>(engine.recording()->events_held());
    const auto s0 = clk::now();
    const trace::Trace t = engine.stop_recording();
    state.counters["snapshot_ms"] =
      std::chrono::duration<double, std::milli>(clk::now() - s0).count();
  }
  state.SetLabel(mode == 0 ? "off" : mode == 1 ? "every pass kept" : "last 5 kept");
}

} // namespace

// Off, on, off again: a drift of the machine's speed shows as a gap between the two offs.
BENCHMARK(BM_chain_recording)
  ->Arg(0)
  ->Arg(1)
  ->Arg(0)
  ->UseManualTime()
  ->Unit(benchmark::kMillisecond)
  ->MinTime(2.0);
BENCHMARK(BM_mlp_recording)
  ->Arg(0)
  ->Arg(1)
  ->Arg(0)
  ->UseManualTime()
  ->Unit(benchmark::kMicrosecond)
  ->MinTime(2.0);
// Off, every pass kept, the last 5 kept, off again.
BENCHMARK(BM_mlp_long_recording)
  ->Arg(0)
  ->Arg(1)
  ->Arg(2)
  ->Arg(0)
  ->UseManualTime()
  ->Unit(benchmark::kMicrosecond)
  ->MinTime(2.0);

BENCHMARK_MAIN();
