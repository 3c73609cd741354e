#pragma once
/// @file summary.h
/// Figures of a timeline: per-actor load, queue waits, message traffic and,
/// per backward call, its critical path and parallelism.
/// Internal (tools/trace/detail/, not installed).

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "actorgrad/tools/trace/detail/op_table.h"
#include "actorgrad/tools/trace/detail/parallelism.h"
#include "actorgrad/tools/trace/detail/queue_depth.h"
#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::trace::detail {

/// Nearest-rank percentiles of a set of durations (0 when empty).
struct Percentiles {
  std::size_t count = 0;
  std::int64_t p50_ns = 0;
  std::int64_t p99_ns = 0;
};

/// The load of one actor over the whole recording.
struct ActorStats {
  std::string actor;
  /// Time inside node slices (nested reentrant slices counted once).
  std::int64_t busy_ns = 0;
  /// busy_ns over the recording's span, in percent.
  double busy_percent = 0;
  /// Node executions.
  std::size_t tasks = 0;
  std::size_t messages_in = 0;
  std::size_t messages_out = 0;
  /// Queue wait of its nodes: start minus the arrival of the last input.
  Percentiles queue_wait;
};

/// The messages of one kind from one actor to another.
struct EdgeStats {
  std::size_t from_actor = 0;
  std::size_t to_actor = 0;
  MessageKind kind = MessageKind::none;
  std::size_t count = 0;
  std::int64_t mean_latency_ns = 0;
};

/// One node (or item of device work) of a critical path and how it was reached.
struct PathStep {
  /// Index into Timeline::slices, or into Timeline::device_spans when on_device.
  std::size_t slice = 0;
  bool on_device = false;
  /// Latency of the message that carried the input from the previous step
  /// (0 for the first step and for an input passed on the same actor).
  std::int64_t latency_ns = 0;
  /// True when that input came as a message.
  bool via_message = false;
};

/// The chain of nodes (and device work) that gated one backward call's end
/// (see Note [Critical path by last arrival] in summary.cpp): from the sink
/// or device work that finished last, back through each one's
/// last-arriving input.
struct CriticalPath {
  std::uint64_t graph_task = 0;
  /// The process that ran it (index into Timeline::processes).
  std::size_t process = 0;
  std::vector<PathStep> steps;
  /// From the first step's start to the last step's end (at most wall_ns).
  std::int64_t length_ns = 0;
  /// The call's span: its first node's start to the end of its last node
  /// or device work.
  std::int64_t wall_ns = 0;
  /// When the call's first node started.
  std::int64_t start_ns = 0;
};

/// One step of a cross-process critical path: a local pass, or a message
/// between processes (a RemoteGrad or a RemoteAck).
struct ProcessStep {
  bool message = false;
  /// Into Summary::critical_paths for a pass, into Timeline::messages for
  /// a message.
  std::size_t index = 0;
};

/// What gated a distributed backward's end across processes (Note
/// [Cross-process critical path] in summary.cpp): from its caller's local
/// pass to the reply that came back last.
struct ProcessPath {
  std::vector<ProcessStep> steps;
  /// The caller's pass's first node's start, and the last reply's receipt.
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

/// What one device stream ran of the recorded work.
struct StreamStats {
  std::string stream;
  /// Kernels and copies, and the time they ran (busy).
  std::size_t kernels = 0;
  std::int64_t busy_ns = 0;
  /// busy_ns over the recording's span, in percent.
  double busy_percent = 0;
  /// Waits for other streams' events, and the time they held the stream.
  std::size_t waits = 0;
  std::int64_t wait_ns = 0;
};

/// Everything the text summary and the HTML report show.
struct Summary {
  std::int64_t span_ns = 0;
  std::vector<ActorStats> actors; ///< in Timeline::actors order
  std::vector<EdgeStats> edges;
  /// Over every node of the recording.
  Percentiles queue_wait;
  /// Messages sent but never received (see Message::to_actor).
  std::size_t unreceived = 0;
  /// One per backward call, in order of their first node.
  std::vector<CriticalPath> critical_paths;
  /// The same calls' per-track busy %, parallelism and longest chain of
  /// dependent nodes, in the same order (parallelism.h).
  std::vector<PassParallelism> parallelism;
  /// One per distributed backward whose messages between processes the
  /// timeline holds (a merge of its processes' recordings), in order.
  std::vector<ProcessPath> process_paths;
  /// Per node name, by total time (op_table.h).
  std::vector<OpStats> ops;
  /// Per actor, in Timeline::actors order (queue_depth.h).
  std::vector<QueueDepth> queues;
  /// Per stream, in Timeline::streams order.
  std::vector<StreamStats> streams;
};

/// Computes the summary of `tl`.
Summary summarize(const Timeline& tl);

/// The summary as text: an actor table, the streams, the queues, the
/// operations, message edges, and per backward call its parallelism (busy %
/// per track) and its critical path with its nodes. Each list shows its first `top` rows
/// (0: all) and says how many it left out.
std::string format_summary(const Timeline& tl, const Summary& s, std::size_t top = 20);

/// One step of a cross-process critical path in words: `RemoteGrad rank 0
/// -> rank 1: 85.2 us in flight`, `pass GraphTask 7 on rank 1: 1.2 ms, its
/// critical path 12 nodes`.
std::string describe_step(const Timeline& tl, const Summary& s, const ProcessStep& step);

/// The parallelism of pass `p` in words: `parallelism of GraphTask 7: 1.85x
/// (node time ... in ... wall); longest chain ...`, then a line per track
/// with its busy % of the pass.
std::string describe_parallelism(const Timeline& tl, const CriticalPath& p,
                                 const PassParallelism& par);

/// `GraphTask N`, and ` on PROCESS` when the timeline has several processes.
std::string task_name(const Timeline& tl, const CriticalPath& p);

/// `1.234 ms`, `56.7 us`, `890 ns`.
std::string format_duration(std::int64_t ns);

/// How many of `n` rows a text list cut to `top` rows (0: all) shows.
std::size_t rows_shown(std::size_t n, std::size_t top);

/// The line that says how many rows such a list left out (nothing when none).
void note_rows_left_out(std::ostream& out, std::size_t n, std::size_t top, const char* what);

} // namespace actorgrad::trace::detail
