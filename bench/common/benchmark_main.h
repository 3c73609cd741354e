#pragma once
/// @file benchmark_main.h
/// The main() of a Google Benchmark binary whose engines are process-wide.

#include <cstdio>
#include <cstdlib>

#include <benchmark/benchmark.h>

namespace actorgrad::bench {

/// Runs the benchmarks that `register_all` registers with the command
/// line's flags, then ends the process without destroying the process-wide
/// engines and graphs the benchmarks made (their teardown is not measured).
template <class RegisterAll>
int benchmark_main(int argc, char** argv, RegisterAll register_all) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::fflush(stdout);
  std::_Exit(0);
}

} // namespace actorgrad::bench
