/// The engines on a real GPU, side by side in one process: the sequential
/// lower bound (the nodes called directly in ready order on the caller's
/// thread, bench/common/workloads.h), the mutex/condvar baseline
/// (bench/baseline, PyTorch's design) and the actor engine, serving cuda:0;
/// the actor engine also as actor_spinN: EngineConfig::spin_before_block of
/// N µs (Note [Spinning before blocking] in actors/detail/runner.cpp).
/// Exits 77 without a CUDA device (or in a build without the CUDA backend),
/// as the CUDA tests do.
///
/// Each case builds its graph once and runs backward on it repeatedly
/// (retain_graph), then waits for cuda:0's default stream, so a time is the
/// host's scheduling plus the GPU work it left behind. Cases:
///   mlp/E        the CLI's MLP 512-1024-1024-1024-10, batch 256, float32,
///                every layer on cuda:0 (GEMM-bound)
///   split_mlp/E  64-256-256-256-10, batch 64, layers alternating cuda:0 and
///                the CPU: each layer's gradient hops between device workers
///   chain/E/n    n elementwise products of a 256-element float32 tensor on
///                cuda:0: one small kernel a node
///   hops/E/n     n such products alternating the CPU and cuda:0, with a
///                device copy between each two: every node hops
/// Counters (wall time, min over iterations): us (per backward), ns_per_node,
/// overhead_ns_per_node (minus the sequential bound's), median_ns_per_iter,
/// and on actor rows actor_vs_baseline (overhead / baseline's overhead).
///
/// `--summary` (before Google Benchmark's flags): afterwards, for each case,
/// the actor engine's recording of 20 backward passes (after 50 unrecorded
/// ones) as `actorgrad trace --summary` prints it: where the time goes
/// (nodes, messages and their latency, device streams, critical path).

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/device/cuda/cuda_backend.h"
#include "actorgrad/device/stream.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/tensor/cuda/kernels_cuda.h"
#include "actorgrad/tools/trace/detail/summary.h"
#include "actorgrad/tools/trace/timeline.h"
#include "bench/baseline/baseline_engine.h"
#include "bench/common/timed_loop.h"
#include "bench/common/workloads.h"
#include "tools/cli/mlp.h"

using namespace actorgrad;
using namespace actorgrad::bench;

namespace {

constexpr Device gpu = Device::cuda(0);
constexpr Stream gpu_default = default_stream(gpu);

/// The engines under test, each serving cuda:0, made on first use: actor,
/// actor_spinN (see actor_config) or baseline.
Executor& cuda_engine(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Executor>> engines;
  auto& e = engines[name];
  if (!e) {
    if (auto config = actor_config(name, {gpu})) {
      e = std::make_unique<Engine>(std::move(*config));
    } else if (name == "baseline") {
      e = std::make_unique<BaselineEngine>(std::vector<Device>{gpu});
    } else {
      engines.erase(name);
      throw std::invalid_argument("unknown engine " + name);
    }
  }
  return *e;
}

Graph mlp_graph(const std::vector<std::int64_t>& sizes, std::int64_t batch,
                const std::vector<Device>& devices) {
  const cli::Mlp mlp(sizes, cli::Activation::relu, DType::f32, devices, 7);
  std::vector<std::int64_t> targets;
  for (std::int64_t i = 0; i < batch; ++i)
    targets.push_back((i * 7 + 3) % sizes.back());
  Graph g;
  g.keep = mlp.parameters();
  const auto x = Tensor::randn({batch, sizes.front()}, 11, DType::f32);
  return finish_graph(std::move(g), cross_entropy(mlp.forward(x), targets));
}

/// The `mlp` case: GEMM-bound, every layer on cuda:0.
Graph gemm_mlp() { return mlp_graph({512, 1024, 1024, 1024, 10}, 256, {gpu}); }

/// `y = y * c`, n times, on a 256-element float32 tensor; with `hop`, y
/// moves to the other device (the CPU or cuda:0) before each product.
Graph chain_graph(int n, bool hop) {
  const auto on = [](const Tensor& t, Device d) { return kernels::cuda::to_device(t, d); };
  const auto c_cpu = Tensor::full({256}, 1.0001, DType::f32);
  const auto c_gpu = on(c_cpu, gpu);
  auto x = on(Tensor::randn({256}, 3, DType::f32), gpu);
  x.set_requires_grad();
  Graph g;
  g.keep = {x, c_cpu, c_gpu};
  Tensor y = x;
  for (int i = 0; i < n; ++i) {
    const bool to_cpu = hop && i % 2 == 0;
    if (hop)
      y = to_device(y, to_cpu ? Device::cpu() : gpu);
    y = y * (to_cpu ? c_cpu : c_gpu);
  }
  return finish_graph(std::move(g), sum(hop && n % 2 == 1 ? to_device(y, gpu) : y));
}

/// Minimum ns per backward, by case then engine.
std::map<std::string, std::map<std::string, double>> g_best;

void run_case(benchmark::State& state, const std::string& key, const std::string& eng,
              const std::function<Graph()>& make) {
  try {
    const Graph g = make();
    std::unique_ptr<SequentialPlan> plan;
    std::function<void()> pass;
    if (eng == "sequential") {
      plan = std::make_unique<SequentialPlan>(g);
      pass = [&] { plan->run(); };
    } else {
      Executor& e = cuda_engine(eng);
      pass = [&] { run_backward(e, g); };
    }
    const std::function<void()> once = [&] {
      pass();
      synchronize(gpu_default);
    };
    once(); // warm-up: the plugin, the caching allocator, cuBLAS handles
    once();
    const double best = timed_loop(state, once).best;
    auto& row = g_best[key];
    row[eng] = best;
    const double nodes = static_cast<double>(g.nodes);
    state.counters["nodes"] = nodes;
    state.counters["us"] = best / 1e3;
    state.counters["ns_per_node"] = best / nodes;
    if (eng != "sequential" && row.count("sequential")) {
      const double overhead = best - row["sequential"];
      row[eng + "_overhead"] = overhead;
      state.counters["overhead_ns_per_node"] = overhead / nodes;
      if (eng == "actor" && row.count("baseline_overhead"))
        state.counters["actor_vs_baseline"] = overhead / row["baseline_overhead"];
    }
  } catch (const std::exception& ex) {
    state.SkipWithError(ex.what());
  }
}

/// Every case by name, in the order registered.
std::vector<std::pair<std::string, std::function<Graph()>>> g_cases;

void add(const std::string& key, const std::function<Graph()>& make, int iterations) {
  g_cases.emplace_back(key, make);
  for (const std::string eng : {"sequential", "baseline", "actor", "actor_spin20", "actor_spin100"})
    benchmark::RegisterBenchmark((key + "/" + eng).c_str(), [=](benchmark::State& s) {
      run_case(s, key, eng, make);
    })->Iterations(iterations);
}

/// --summary: each case's recorded actor backward passes, summarized.
void print_summaries() {
  auto& engine = static_cast<Engine&>(cuda_engine("actor"));
  for (const auto& [key, make] : g_cases) {
    const Graph g = make();
    for (int i = 0; i < 50; ++i)
      run_backward(engine, g);
    synchronize(gpu_default);
    engine.start_recording();
    for (int i = 0; i < 20; ++i)
      run_backward(engine, g);
    synchronize(gpu_default);
    const trace::Timeline tl = trace::build_timeline(engine.stop_recording());
    std::printf("\n== %s: 20 recorded backward passes of the actor engine\n%s", key.c_str(),
                trace::detail::format_summary(tl, trace::detail::summarize(tl), 12).c_str());
  }
}

void register_all() {
  add("mlp", gemm_mlp, 200);
  add(
    "split_mlp",
    [] {
      return mlp_graph({64, 256, 256, 256, 10}, 64, {gpu, Device::cpu()});
    },
    300);
  for (int n : {100, 1000})
    add(
      "chain/" + std::to_string(n), [n] { return chain_graph(n, false); }, n == 100 ? 300 : 50);
  add(
    "hops/100", [] { return chain_graph(100, true); }, 200);
}

/// About a second of GEMMs, so that the GPU's clocks have left their idle
/// level before the first case (the cases run in a fixed order).
void warm_up_gpu() {
  const Graph g = gemm_mlp();
  SequentialPlan plan(g);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < until) {
    plan.run();
    synchronize(gpu_default);
  }
}

} // namespace

int main(int argc, char** argv) {
  if (!cuda::available()) {
    std::puts("no CUDA device: skipped");
    return 77;
  }
  register_all();
  const bool summary = argc > 1 && std::string(argv[1]) == "--summary";
  if (summary) {
    argv[1] = argv[0];
    --argc;
    ++argv;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  warm_up_gpu();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (summary)
    print_summaries();
  std::fflush(stdout);
  std::_Exit(0); // the engines are process-wide: skip their teardown
}
