#pragma once
/// @file timed_loop.h
/// A Google Benchmark loop that keeps every iteration's wall time, for the
/// minimum (the least disturbed run on a shared machine) and the median.
/// With ACTORGRAD_BENCH_ITERATION_TIMES set in the environment, each run of
/// a loop also writes its iterations' times in order to stderr, one line
/// ("iteration_us: t1 t2 ...") before the benchmark's own line: how a
/// repetition warms up (bench/RESULTS.md, "the host's warm-up").

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace actorgrad::bench {

/// Wall time of one iteration over a benchmark's iterations, in ns.
struct LoopTimes {
  double best;   ///< the minimum: the least disturbed iteration
  double median; ///< the typical one
};

/// Times `once` per iteration; sets the counter median_ns_per_iter.
inline LoopTimes timed_loop(benchmark::State& state, const std::function<void()>& once) {
  using clk = std::chrono::steady_clock;
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(state.max_iterations));
  for (auto _ : state) {
    auto t0 = clk::now();
    once();
    times.push_back(std::chrono::duration<double, std::nano>(clk::now() - t0).count());
  }
  if (std::getenv("ACTORGRAD_BENCH_ITERATION_TIMES") != nullptr) {
    std::fputs("iteration_us:", stderr);
    for (double t : times)
      std::fprintf(stderr, " %.0f", t / 1000);
    std::fputc('\n', stderr);
  }
  auto mid = times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2);
  std::nth_element(times.begin(), mid, times.end());
  const LoopTimes t{*std::min_element(times.begin(), times.end()), *mid};
  state.counters["median_ns_per_iter"] = t.median;
  return t;
}

} // namespace actorgrad::bench
