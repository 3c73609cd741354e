/// @file preload.cpp
/// libactorgrad_torch_preload.so: loaded into an unmodified libtorch program
/// (LD_PRELOAD), its initializer installs the actor engine as libtorch's
/// default engine (install.h), configured by the environment:
///
///   ACTORGRAD_DEVICES  devices to serve besides the CPU, as for the default
///                      engine ("sim:2", "sim:0,sim:3"; parse_devices in
///                      actors/default_engine.h); libtorch's CPU nodes need
///                      none. Default: none.
///   ACTORGRAD_CPU_WORKERS
///                      threads that run a backward's CPU nodes, the caller
///                      included (EngineConfig::cpu_workers, 1 to 256;
///                      cpu_workers_from_env in actors/default_engine.h).
///                      Default: 1, the caller alone.
///   ACTORGRAD_CPU_SPREAD_BRANCH
///                      with several CPU workers, the nodes of its own a
///                      branch needs for a call to spread over them
///                      (EngineConfig::cpu_spread_branch, 1 to 999).
///                      Default: 8.
///   ACTORGRAD_TRACE    path.json (Chrome trace) or path.html (report): records
///                      every backward pass and writes the file at exit;
///                      "path.html:N" keeps the last N passes only, in
///                      memory too (RecordingOptions::keep_passes); without
///                      it, a recording past 256 MiB says so once on
///                      stderr. `%p` in the path is the process id, `%r`
///                      its rank (RANK, else `pid` and the id), `%%` a
///                      `%`; a process that ran no backward pass writes
///                      nothing (Note [Trace file names of many
///                      processes] in tools/trace/trace_request.h).
///
/// Distributed autograd (torch::distributed::autograd::backward and the
/// gradients other processes send) runs on the actor engine too
/// (take_over_distributed_autograd, install.h), and DistEngine::getDebugInfo
/// counts its passes (Note [Counting the passes that run on actors]).
///
/// A bad value is reported on stderr and the program runs on libtorch's own
/// engine.

#include <dlfcn.h>

#include <c10/util/Exception.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>

#include "actorgrad/actors/default_engine.h"
#include "actorgrad/actors/torch/detail/dist_autograd_abi.h"
#include "actorgrad/actors/torch/install.h"
#include "actorgrad/tools/trace/trace_request.h"

namespace actorgrad::torch {

namespace {

/// A recording that keeps every pass warns once it holds this much.
constexpr std::size_t kWarnBytes = std::size_t{256} << 20;

trace::TraceRequest* pending_trace = nullptr;

void write_trace_at_exit() {
  try {
    trace::write_recording(engine().stop_recording(), *pending_trace,
                           trace::TraceProcess::current());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actorgrad preload: writing ACTORGRAD_TRACE failed: %s\n", e.what());
  }
}

/// Says, once, that a recording of every pass has grown large.
void warn_large(std::uint64_t passes, std::size_t bytes) {
  std::fprintf(stderr,
               "actorgrad preload: ACTORGRAD_TRACE holds %llu backward passes in %zu MiB so far "
               "and keeps every pass until exit, where writing the file takes the longer the "
               "more it holds; ACTORGRAD_TRACE=PATH:N keeps only the last N passes\n",
               static_cast<unsigned long long>(passes), bytes >> 20);
}

__attribute__((constructor)) void install_from_environment() {
  try {
    trace::TraceRequest request;
    const char* trace_env = std::getenv("ACTORGRAD_TRACE");
    if (trace_env && *trace_env)
      request = trace::parse_trace_request(trace_env, "ACTORGRAD_TRACE");
    EngineConfig config;
    const char* devices = std::getenv("ACTORGRAD_DEVICES");
    config.devices = parse_devices(devices ? devices : "");
    install(cpu_lanes_from_env(std::move(config)));
    // torch.distributed.autograd too (Note [Distributed autograd on actors]);
    // a libtorch without distributed autograd keeps its own (false).
    take_over_distributed_autograd();
    if (trace_env && *trace_env) {
      pending_trace = new trace::TraceRequest(std::move(request)); // lives until exit
      trace::RecordingOptions options;
      options.keep_passes = pending_trace->keep_passes;
      options.warn_bytes = kWarnBytes;
      options.on_large = warn_large;
      engine().start_recording(std::move(options));
      std::atexit(write_trace_at_exit);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actorgrad preload: not installed: %s\n", e.what());
  }
}

} // namespace

} // namespace actorgrad::torch

// Note [Counting the passes that run on actors]
// DistEngine::getDebugInfo (dist_autograd._get_debug_info() in Python)
// says in "num_current_backward_passes" how many distributed backward
// passes run in this process; libtorch counts those of its own DistEngine,
// which runs none once they run on actors. The preload library defines the
// function itself: loaded first, its definition is the one every caller
// binds to, the program and libraries loaded later alike (libtorch_python.so
// calls it through its PLT), and it adds the passes running on actors
// (stats().distributed_running) to what libtorch's definition, the next
// one (dlsym(RTLD_NEXT), called as a function whose first argument is the
// object, as dist_engine.cpp calls DistEngine's), counts. The Python
// module cannot interpose (Python loads it after libtorch, with
// RTLD_LOCAL): install() wraps dist_autograd._get_debug_info instead
// (tools/python/actorgrad/torch.py), but not in a process that runs under
// this library (a program that calls uninstall() and install() to set its
// own options), where the wrapper would count each pass a second time: it
// looks for actorgrad_debug_info_counts_actors, defined below, in the
// process's global scope (debug_info_counts_actors in python/module.cpp).
std::unordered_map<std::string, int>
torch::distributed::autograd::DistEngine::getDebugInfo() const {
  using DebugInfoFn = std::unordered_map<std::string, int> (*)(const DistEngine*);
  static const auto libtorchs = reinterpret_cast<DebugInfoFn>(
    dlsym(RTLD_NEXT, "_ZNK5torch11distributed8autograd10DistEngine12getDebugInfoB5cxx11Ev"));
  TORCH_CHECK(libtorchs, "actorgrad preload: libtorch's DistEngine::getDebugInfo not found");
  auto info = libtorchs(this);
  info["num_current_backward_passes"] +=
    static_cast<int>(actorgrad::torch::stats().distributed_running);
  return info;
}

/// Says that DistEngine::getDebugInfo counts the passes on actors (Note
/// [Counting the passes that run on actors]).
extern "C" [[gnu::visibility("default")]] const int actorgrad_debug_info_counts_actors = 1;
