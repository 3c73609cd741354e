#pragma once
/// @file chrome_json.h
/// A timeline as a Chrome Trace Event JSON file (loads in Perfetto and
/// chrome://tracing), and back.
/// Internal (tools/trace/detail/, not installed).
///
/// Layout: one process (pid 1; a merge, merge.h, has one per recording,
/// pid = its index + 1), named by a `process_name` metadata event whose
/// args also hold os_pid, epoch_unix_ns and shift_ns (Process); one track
/// (tid, unique in the file) per actor, named by a `thread_name` metadata
/// event. Per node execution an `X` slice (cat
/// "node") whose args carry graph_task, sequence_nr, depth, device, stream,
/// actor, ready_us, queue_wait_us and local_inputs. Per received message a
/// flow: `s` on the sender at the send, `f` on the receiver at the receipt,
/// sharing `id`, `cat` "message", `name` (Grad, Task, WakeUp) and `bp` "e";
/// the `s` args describe the message. A message end outside any node slice
/// sits in a short `X` marker slice (cat "message", at most 1 us, ending
/// before the actor's next event) so the arrow has a slice to bind to. A
/// message never received has only its send marker, with args
/// `unreceived: true` and the message's description. After the actors, one
/// track per device stream (its thread_name args add `stream: true`) with
/// an `X` slice (cat "device", named after the kernel) per device span,
/// args kind, point, launch_us, launched_by, graph_task, node, sequence_nr,
/// id, stream and, for a wait, waits_for and waits_for_point; a flow (cat
/// "launch", `bp` "e") goes from the launch on the launching actor's track
/// to the span's start (not for a record, an instant). A message between
/// processes whose other end is in another recording is an `X` marker
/// (cat "remote", named RemoteGrad or RemoteAck; args flow, side, peer,
/// graph_task); paired by a merge, it is a flow like any message, its `s`
/// args adding flow and to_graph_task.

#include <iosfwd>
#include <string>

#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::trace::detail {

/// Writes `tl` as Chrome trace JSON (timestamps in microseconds, to the ns).
void write_chrome_json(const Timeline& tl, std::ostream& out);

/// Reads a file written by write_chrome_json ("-": standard input). Throws
/// std::runtime_error (naming `path`) when it cannot be read or is not
/// such a trace.
Timeline read_chrome_json(const std::string& path);

} // namespace actorgrad::trace::detail
