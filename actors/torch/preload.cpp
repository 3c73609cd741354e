/// @file preload.cpp
/// libactorgrad_torch_preload.so: loaded into an unmodified libtorch program
/// (LD_PRELOAD), its initializer installs the actor engine as libtorch's
/// default engine (install.h), configured by the environment:
///
///   ACTORGRAD_DEVICES  devices to serve besides the CPU, as for the default
///                      engine ("sim:2", "sim:0,sim:3"; parse_devices in
///                      actors/default_engine.h); libtorch's CPU nodes need
///                      none. Default: none.
///   ACTORGRAD_TRACE    path.json (Chrome trace) or path.html (report): records
///                      every backward pass and writes the file at exit;
///                      "path.html:N" keeps the last N passes only.
///
/// A bad value is reported on stderr and the program runs on libtorch's own
/// engine.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "actorgrad/actors/default_engine.h"
#include "actorgrad/actors/torch/install.h"
#include "actorgrad/tools/trace/report_files.h"

namespace actorgrad::torch {

namespace {

/// What ACTORGRAD_TRACE asked for.
struct TraceRequest {
  trace::ReportPaths paths;
  /// 0: every pass.
  std::size_t last = 0;
};

TraceRequest trace_request(std::string text) {
  TraceRequest r;
  if (auto colon = text.rfind(':'); colon != std::string::npos) {
    const std::string n = text.substr(colon + 1);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || std::stoul(n) == 0)
      throw std::invalid_argument("ACTORGRAD_TRACE='" + text +
                                  "': the number after ':' must be a positive count of passes");
    r.last = std::stoul(n);
    text.resize(colon);
  }
  auto ends_with = [&](const char* ext) {
    const std::string e = ext;
    return text.size() > e.size() && text.compare(text.size() - e.size(), e.size(), e) == 0;
  };
  if (ends_with(".json"))
    r.paths.json = text;
  else if (ends_with(".html"))
    r.paths.html = text;
  else
    throw std::invalid_argument("ACTORGRAD_TRACE='" + text +
                                "': name a .json (Chrome trace) or .html (report) file");
  return r;
}

/// Keeps the events of the last `n` top-level passes (and of the reentrant
/// calls they made, which have later GraphTask ids).
void keep_last(trace::Trace& t, std::size_t n) {
  std::set<std::uint64_t> passes;
  for (const auto& track : t.tracks)
    for (const auto& e : track.events)
      if (e.depth == 0 && e.graph_task != 0)
        passes.insert(e.graph_task);
  if (passes.size() <= n)
    return;
  const std::uint64_t first = *std::next(passes.begin(), static_cast<long>(passes.size() - n));
  for (auto& track : t.tracks)
    std::erase_if(track.events, [&](const trace::Event& e) { return e.graph_task < first; });
  std::erase_if(t.tracks, [](const trace::Track& track) { return track.events.empty(); });
}

TraceRequest* pending_trace = nullptr;

void write_trace_at_exit() {
  try {
    trace::Trace t = engine().stop_recording();
    if (pending_trace->last)
      keep_last(t, pending_trace->last);
    trace::write_reports(trace::build_timeline(t), pending_trace->paths);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actorgrad preload: writing ACTORGRAD_TRACE failed: %s\n", e.what());
  }
}

__attribute__((constructor)) void install_from_environment() {
  try {
    TraceRequest request;
    const char* trace_env = std::getenv("ACTORGRAD_TRACE");
    if (trace_env && *trace_env)
      request = trace_request(trace_env);
    EngineConfig config;
    const char* devices = std::getenv("ACTORGRAD_DEVICES");
    config.devices = parse_devices(devices ? devices : "");
    install(std::move(config));
    if (trace_env && *trace_env) {
      pending_trace = new TraceRequest(std::move(request)); // lives until exit
      engine().start_recording();
      std::atexit(write_trace_at_exit);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actorgrad preload: not installed: %s\n", e.what());
  }
}

} // namespace

} // namespace actorgrad::torch
