#pragma once
/// @file timeline.h
/// A recording (trace::Trace) turned into what the trace tools show: the
/// node executions of each actor and the messages between actors. It is
/// also exactly what the Chrome trace file holds (chrome_json.h), so a
/// written trace can be read back and summarized again.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actorgrad/actors/trace/event.h"

namespace actorgrad::trace {

/// One node execution on one actor.
struct Slice {
  std::size_t actor = 0; ///< index into Timeline::actors
  std::uint64_t graph_task = 0;
  std::string node;
  std::uint64_t sequence_nr = 0;
  int depth = 0;
  Device device;
  int stream = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// When the node's last input arrived (it became ready), if recorded.
  std::optional<std::int64_t> ready_ns;
  /// Sequence numbers of the nodes of the same task that fed this one
  /// without a message (on this actor, or on another, such as a CPU worker
  /// that fed a node the caller then ran), in the order they fed it.
  std::vector<std::uint64_t> local_inputs;

  std::int64_t duration_ns() const { return end_ns - start_ns; }
  /// start - ready: how long the ready node waited in its actor's heap.
  std::optional<std::int64_t> queue_wait_ns() const {
    return ready_ns ? std::optional(start_ns - *ready_ns) : std::nullopt;
  }
};

/// One message between actors.
struct Message {
  std::uint64_t id = 0;
  MessageKind kind = MessageKind::none;
  std::uint64_t graph_task = 0;
  /// The node the message is for (empty for a WakeUp), as in trace::Event.
  std::string node;
  std::uint64_t sequence_nr = 0;
  std::uint32_t input_nr = 0;
  int depth = 0;
  Device device;
  std::size_t from_actor = 0;
  std::int64_t send_ns = 0;
  /// The node whose run sent it (a Grad from its producer), if any.
  std::optional<std::uint64_t> producer;
  /// Receiver and time of receipt; unset for a message never received (a
  /// WakeUp that arrived after its task was done).
  std::optional<std::size_t> to_actor;
  std::optional<std::int64_t> recv_ns;
  /// A message between processes (RemoteGrad, RemoteAck; paired by a merge,
  /// merge.h): its flow id, and the receiver's pass (`graph_task` is the
  /// sender's; see trace::Event).
  std::uint64_t flow = 0;
  std::uint64_t to_graph_task = 0;

  bool received() const { return recv_ns.has_value(); }
  std::int64_t latency_ns() const { return recv_ns ? *recv_ns - send_ns : 0; }
};

/// One item of device work: launched by a node, run by a stream (Note
/// [Stream tracks] in actors/trace/recorder.h).
struct DeviceSpan {
  std::size_t stream = 0; ///< index into Timeline::streams
  DeviceWork kind = DeviceWork::kernel;
  /// The kernel's name (`wait`, `record` for those).
  std::string op;
  /// Its number on its stream (from 1, in enqueue order); for a record, the
  /// point it marks.
  std::uint64_t point = 0;
  /// When the stream ran it. A record is an instant: when the stream had
  /// run the item at its point (or its launch, if that was later).
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// Who launched it, and when: the node (of `graph_task`) on an actor.
  std::size_t launcher = 0; ///< index into Timeline::actors
  std::int64_t launch_ns = 0;
  std::uint64_t graph_task = 0;
  std::string node;
  std::uint64_t sequence_nr = 0;
  /// A wait: the stream it waited for (index into Timeline::streams) and
  /// the event's point there.
  std::optional<std::size_t> waits_for;
  std::uint64_t waits_for_point = 0;
  /// Pairs the launch with the run (the flow arrow's id).
  std::uint64_t id = 0;

  std::int64_t duration_ns() const { return end_ns - start_ns; }
};

/// One end of a message between processes whose other end is in another
/// process's recording (a send or receive event of kind RemoteGrad or
/// RemoteAck): a merge (merge.h) pairs it into a Message.
struct RemoteEnd {
  MessageKind kind = MessageKind::remote_grad;
  bool sent = false;
  std::uint64_t flow = 0;
  /// The local pass (see trace::Event).
  std::uint64_t graph_task = 0;
  /// The other process's name.
  std::string peer;
  std::size_t actor = 0; ///< index into Timeline::actors
  std::int64_t ts_ns = 0;
};

/// A process whose recording a timeline holds.
struct Process {
  /// "rank 0", a worker's "host:port", or "pid N".
  std::string name;
  std::int64_t pid = 0;
  /// When its recording started, on the wall clock (Trace::epoch_unix_ns).
  std::int64_t epoch_unix_ns = 0;
  /// What a merge added to its timestamps to put them on the merged clock
  /// (its epoch's distance from the earliest one, less its estimated clock
  /// offset; 0 in a single recording).
  std::int64_t shift_ns = 0;
};

/// The node executions and messages of a recording.
struct Timeline {
  /// The processes recorded: one, or one per recording merged (merge.h).
  std::vector<Process> processes;
  /// Actor names, one track each, in the order their first event happened.
  std::vector<std::string> actors;
  /// The process (index into `processes`) of each actor and of each
  /// stream; empty: all in process 0.
  std::vector<std::size_t> actor_process;
  std::vector<std::size_t> stream_process;
  /// Device streams that ran observed work, one track each (Stream::str()).
  std::vector<std::string> streams;
  /// Sorted by stream, then start time.
  std::vector<DeviceSpan> device_spans;
  /// Sorted by actor, then start time (outer slices before nested ones).
  std::vector<Slice> slices;
  /// Sorted by send time.
  std::vector<Message> messages;
  /// Ends of messages between processes not paired here, by time.
  std::vector<RemoteEnd> remote_ends;
  /// First and last timestamp of the recording.
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;

  /// Sorts slices and messages as documented and sets begin_ns / end_ns.
  void normalize();
  /// The process of actor `a` / of stream `s`.
  std::size_t process_of_actor(std::size_t a) const {
    return actor_process.empty() ? 0 : actor_process[a];
  }
  std::size_t process_of_stream(std::size_t s) const {
    return stream_process.empty() ? 0 : stream_process[s];
  }
  /// Actor `a`'s name, after its process's (`rank 1 / caller 4242`) when
  /// there are several processes.
  std::string actor_label(std::size_t a) const {
    return processes.size() > 1 ? process_name(process_of_actor(a)) + " / " + actors[a] : actors[a];
  }
  /// The name of process `p` ("" when the timeline names none).
  std::string process_name(std::size_t p) const {
    return p < processes.size() ? processes[p].name : std::string();
  }
};

/// Builds the timeline of `trace`. Tracks of the same actor (a caller
/// thread's successive calls) merge into one; a node slice spans a
/// node_start and its node_end; a message pairs the send and the receive
/// of one message id; a send made while a node of the same task ran on the
/// sending actor is attributed to that node. A device span pairs a launch
/// with its device_run (a launch not yet run is left out); a record gets
/// its time from its stream's spans. A message to or from another process
/// is a RemoteEnd. The one process is named "pid N".
Timeline build_timeline(const Trace& trace);

} // namespace actorgrad::trace
