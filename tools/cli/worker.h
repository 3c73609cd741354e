#pragma once
/// @file worker.h
/// `actorgrad worker`: a process that serves distributed autograd
/// (actors/remote/): it publishes its agent on host:port and runs the
/// forward ops and backward parts that callers send it, until SIGINT or
/// SIGTERM.

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace actorgrad::cli {

/// The flags of `actorgrad worker`, as parsed.
struct WorkerOptions {
  /// Required; 0 picks a free port.
  std::int64_t port = -1;
  std::string host = "127.0.0.1";
  std::int64_t timeout_ms = 10000;
  bool test_ops = false;
  /// Log only failures (and the start and stop lines).
  bool quiet = false;
  /// Also log each request served.
  bool verbose = false;
  /// Record the backward parts served and write them here when stopping
  /// (ACTORGRAD_TRACE's syntax: tools/trace/trace_request.h); "": no.
  std::string trace;
  bool operator==(const WorkerOptions&) const = default;
};

/// Adds the `worker` subcommand to `app`, parsing into `o`; returns it.
CLI::App* add_worker(CLI::App& app, WorkerOptions& o);

/// Runs `actorgrad worker` until SIGINT or SIGTERM; returns the exit status.
int run_worker(const WorkerOptions& o);

} // namespace actorgrad::cli
