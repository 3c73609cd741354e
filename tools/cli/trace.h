#pragma once
/// @file trace.h
/// `actorgrad trace`: records the message flow of one backward pass on the
/// actor engine (or reads a recording) and writes a Chrome trace, an HTML
/// report and a text summary (tools/trace/).

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace actorgrad::cli {

/// The flags of `actorgrad trace`, as parsed.
struct TraceOptions {
  /// `mlp`, `ensemble` (16 MLPs, losses summed) or `chain`.
  std::string model = "mlp";
  /// `cpu` or `sim:N` (flags.h device_set).
  std::string devices = "sim:2";
  /// EngineConfig::cpu_workers (engine_flags.h).
  std::int64_t cpu_workers = 1;
  std::int64_t hidden = 64;
  std::int64_t points = 500;
  std::int64_t nodes = 1000;
  std::uint64_t seed = 1;
  /// A recording to read instead of running ("-": standard input).
  std::string in;
  /// --diff BEFORE AFTER: compare two recordings (AFTER is read as --in).
  std::vector<std::string> diff;
  /// --merge A B ...: the recordings of several processes as one.
  std::vector<std::string> merge;
  /// Outputs ("" for none, "-" for standard output). With none of them
  /// given: `--out trace.json --summary -` (only the summary with --in).
  std::string out;
  std::string html;
  std::string summary;
  /// The per-op table as CSV.
  std::string ops_csv;
  /// Rows of each list of the summary; `all` shows every row.
  std::int64_t top = 20;
  bool all = false;
  bool operator==(const TraceOptions&) const = default;
};

/// Adds the `trace` subcommand to `app`, parsing into `o`; returns it.
CLI::App* add_trace(CLI::App& app, TraceOptions& o);

/// Runs `actorgrad trace`; returns the exit status.
int run_trace(const TraceOptions& o);

} // namespace actorgrad::cli
