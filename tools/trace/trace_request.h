#pragma once
/// @file trace_request.h
/// A process's own recording, as ACTORGRAD_TRACE (the preload library,
/// actors/torch/preload.cpp) or `actorgrad worker --trace` asks for it:
/// the file to write at exit, the passes to keep, and the file name of
/// each process of a multi-process program.

#include <cstddef>
#include <cstdint>
#include <string>

#include "actorgrad/actors/trace/event.h"
#include "actorgrad/tools/trace/report_files.h"

namespace actorgrad::trace {

/// `PATH.json` (Chrome trace) or `PATH.html` (report), then optionally `:N`
/// (keep the last N passes only). PATH may hold `%p` (the process id), `%r`
/// (its rank: Note [Trace file names of many processes]) and `%%` (a `%`).
struct TraceRequest {
  /// The path as given (with its % sequences; expand_trace_path).
  std::string path;
  /// 0: every pass.
  std::size_t keep_passes = 0;
};

/// Parses `spec`. Throws std::invalid_argument naming `what` (`ACTORGRAD_TRACE`)
/// and the problem: no .json or .html, a bad count after ':', an unknown
/// `%` sequence.
TraceRequest parse_trace_request(const std::string& spec, const std::string& what);

// Note [Trace file names of many processes]
// A launcher (torchrun, mp.spawn, mpirun, a shell script, `timeout`) runs
// several processes with the same environment, so one ACTORGRAD_TRACE
// names every process's file: `%p` becomes the process id and `%r` its
// rank: the RANK environment variable when it is set (torchrun, mp.spawn
// with it set, most MPI wrappers), else the distributed worker's name when
// the process is one (`127.0.0.1-4242` for `actorgrad worker`), else `pid`
// and the process id. A rank is made safe for a file name: characters
// other than letters, digits, `.`, `_` and `-` become `-`. And a process
// that recorded nothing writes nothing (write_recording), so a launcher
// that loaded the preload library too (`timeout 300 ./app` does) does not
// overwrite its child's file with an empty one.

/// Who a process is, for its trace's file name and its name in a merge.
struct TraceProcess {
  std::int64_t pid = 0;
  /// RANK, when set and not empty.
  std::string rank;
  /// The distributed worker's name (`host:port`), when the process is one.
  std::string worker;

  /// This process: its pid and RANK; `worker` as given.
  static TraceProcess current(std::string worker = {});
  /// `rank R`, else the worker's name, else `pid N`: the process's name in
  /// its trace and in a merge (Timeline's Process::name).
  std::string label() const;
  /// What `%r` becomes (Note [Trace file names of many processes]).
  std::string rank_in_path() const;
};

/// `path` with `%p`, `%r` and `%%` replaced for `who`.
std::string expand_trace_path(const std::string& path, const TraceProcess& who);

/// Writes recording `t` of process `who` as `request` asks (its path
/// expanded; .json or .html by its ending) and returns the path written,
/// or returns "" and writes nothing when `t` holds no event (the process
/// ran no recorded backward pass). Throws std::runtime_error naming a file
/// that cannot be written.
std::string write_recording(const Trace& t, const TraceRequest& request, const TraceProcess& who);

} // namespace actorgrad::trace
