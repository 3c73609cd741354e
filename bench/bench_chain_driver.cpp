/// bench_chain_driver ENGINE CASE N [ITERS] [--mem]
///
/// Builds one graph (CASE: chain_passthrough, chain_mul, fan, mlp,
/// random_dag, transformer (libtorch engines only), or reentrant: N = depth,
/// see bench/common/reentrant.h), runs
/// its backward once to warm up, then ITERS more times
/// (default 10) between CALLGRIND_START_INSTRUMENTATION and
/// CALLGRIND_STOP_INSTRUMENTATION, so `valgrind --tool=callgrind
/// --instr-atstart=no` counts the backward passes only. ENGINE: actor
/// (or actor_spinN: EngineConfig::spin_before_block of N µs),
/// baseline, reference, sequential (lower bound), torch, torch_seq (libtorch
/// nodes called directly), torch_actor (libtorch's nodes on the actor engine
/// through the torch bridge); the libtorch engines run with one intra-op
/// thread. Prints one line: engine case n nodes iters
/// ns_per_node peak_rss_graph_bytes peak_rss_after_bytes peak_rss_start_bytes
/// (the peak resident set after building the graph, after the backward
/// passes, and at start, before the graph: libraries and the started,
/// idle engine).
/// With --mem, one backward only (no warm-up), to read the peak memory of
/// a backward from ru_maxrss.
/// Built as bench_chain_memory (with ACTORGRAD_BENCH_HEAP_COUNTER, linking
/// bench/common/heap_counter.cpp), the line ends with two more fields:
/// heap_live_graph_bytes heap_peak_backward_bytes (the heap's live bytes
/// before the backward passes and their peak during them: Note [Counting
/// the heap, not the resident set]).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#if ACTORGRAD_BENCH_HAVE_CALLGRIND
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

#include "bench/common/single_case.h"
#if ACTORGRAD_BENCH_HEAP_COUNTER
#include "bench/common/heap_counter.h"
#endif

using namespace actorgrad;
using namespace actorgrad::bench;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ENGINE CASE N [ITERS] [--mem]\n", argv[0]);
    return 2;
  }
  const std::string eng = argv[1], kind = argv[2];
  const int n = std::atoi(argv[3]);
  int iters = argc > 4 && argv[4][0] != '-' ? std::atoi(argv[4]) : 10;
  bool mem = false;
  for (int i = 4; i < argc; ++i)
    if (std::string(argv[i]) == "--mem")
      mem = true;

  // Note [One malloc mode for every engine]
  // glibc's malloc and free take no lock and use no atomic operation while
  // the process has never had a second thread (__libc_single_threaded); one
  // thread started, even one that ended, switches the process to the
  // locked path for good. The actor engine's process always has threads,
  // the sequential bound's and the reference executor's had none, so they
  // were measured on a faster malloc: on the 10^6 pass-through chain the
  // reference executor took 251-253 ns a node alone and 392-400 with one
  // idle thread, the actor engine's figure, at the same instruction count.
  // Every engine here runs in a process that has had a second thread, as
  // every application that embeds an engine has.
  std::thread([] {}).join();

  // Start the engine first, so that "start" holds its idle threads and
  // actor system and "graph" holds the graph alone.
  const auto& names = engine_names();
  if (std::find(names.begin(), names.end(), eng) != names.end())
    engine(eng);
  const std::size_t rss_start = peak_rss_bytes();
  std::unique_ptr<SingleCase> bench_case;
#if ACTORGRAD_BENCH_HAVE_TORCH
  if (eng.rfind("torch", 0) == 0)
    torchb::single_intra_op_thread();
#endif
  try {
    bench_case = std::make_unique<SingleCase>(eng, kind, n);
  } catch (const std::runtime_error& e) { // a torch engine without libtorch
    std::fprintf(stderr, "%s\n", e.what());
    return 77;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  const std::size_t nodes = bench_case->nodes();
  auto once = [&] { bench_case->run(); };
  const std::size_t rss_graph = peak_rss_bytes();
  if (mem)
    iters = 1;
  else
    once(); // warm-up: first-use allocations, lazily started threads
#if ACTORGRAD_BENCH_HEAP_COUNTER
  const std::size_t heap_graph = heap_counter::live_bytes();
  heap_counter::reset_peak();
#endif
  const auto t0 = std::chrono::steady_clock::now();
  CALLGRIND_START_INSTRUMENTATION;
  for (int i = 0; i < iters; ++i)
    once();
  CALLGRIND_STOP_INSTRUMENTATION;
  const auto t1 = std::chrono::steady_clock::now();
  const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  std::printf("%s %s %d %zu %d %.1f %zu %zu %zu", eng.c_str(), kind.c_str(), n, nodes, iters,
              ns / iters / static_cast<double>(nodes), rss_graph, peak_rss_bytes(), rss_start);
#if ACTORGRAD_BENCH_HEAP_COUNTER
  std::printf(" %zu %zu", heap_graph, heap_counter::peak_bytes());
#endif
  std::printf("\n");
  std::fflush(stdout);
  std::_Exit(0); // skip static destruction of engines and graphs
}
