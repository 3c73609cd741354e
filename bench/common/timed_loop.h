#pragma once
/// @file timed_loop.h
/// A Google Benchmark loop that keeps every iteration's wall time, for the
/// minimum (the least disturbed run on a shared machine) and the median.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
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
  auto mid = times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2);
  std::nth_element(times.begin(), mid, times.end());
  const LoopTimes t{*std::min_element(times.begin(), times.end()), *mid};
  state.counters["median_ns_per_iter"] = t.median;
  return t;
}

} // namespace actorgrad::bench
