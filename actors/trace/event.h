#pragma once
/// @file event.h
/// What the engine's recorder writes: one Event per message sent or
/// received and per node made ready, fed or run, grouped per actor.

#include <cstdint>
#include <string>
#include <vector>

#include "actorgrad/device/device.h"
#include "actorgrad/device/launch_observer.h"
#include "actorgrad/device/stream.h"

namespace actorgrad::trace {

/// What happened.
enum class EventKind : std::uint8_t {
  send,       ///< this actor sent a message (`message_id` pairs it with its receive)
  receive,    ///< this actor took a message from its mailbox
  ready,      ///< `node`'s last input arrived: it entered this actor's ready heap
  input,      ///< the running node fed an output to `node`, owned by this actor (no message)
  node_start, ///< this actor started running `node`
  node_end,   ///< ... and finished it (its outputs delivered)
  launch, ///< the running `node` launched device work (`message_id` pairs it with its device_run)
  device_run, ///< a stream ran launched work, from `ts_ns` to `end_ns` (on the stream's own track)
};

/// The engine message an Event of kind send or receive is about. The last
/// two cross processes (actors/remote/): a gradient a distributed agent
/// sends to another process's agent (a GradRequest), and the reply that the
/// work it caused there is done (its Ack).
enum class MessageKind : std::uint8_t { none, grad, task, wake_up, remote_grad, remote_ack };

/// `Grad`, `Task`, `WakeUp` (the message type names of actors/messages.h),
/// `RemoteGrad`, `RemoteAck`.
const char* message_name(MessageKind k);
/// Whether `k` goes to another process (remote_grad, remote_ack).
inline bool crosses_processes(MessageKind k) {
  return k == MessageKind::remote_grad || k == MessageKind::remote_ack;
}
/// Inverse of message_name; MessageKind::none for any other text.
MessageKind parse_message_name(const std::string& name);

/// One recorded event. For a message, `node` is the node it is for (the
/// consumer of a Grad, the node of a Task; none for a WakeUp); for a
/// message that crosses processes it names the other process (its agent's
/// name, `host:port`), and `graph_task` is the local pass that sent the
/// gradient, that the received gradient started, or whose end (with what
/// it caused) the reply reports.
struct Event {
  /// Nanoseconds on the recorder's monotonic clock (steady_clock) since the
  /// recording started; shared by every actor.
  std::int64_t ts_ns = 0;
  EventKind kind = EventKind::node_start;
  MessageKind message = MessageKind::none;
  /// GraphTask::id of the backward call.
  std::uint64_t graph_task = 0;
  /// Pairs a send with its receive (unique within a recording; 0 otherwise).
  /// For a message that crosses processes: the flow id that both processes
  /// record (unique across them; Note [Flows between processes] in
  /// actors/remote/detail/agent.cpp).
  std::uint64_t message_id = 0;
  /// Node::name(), empty when there is no node.
  std::string node;
  std::uint64_t sequence_nr = 0;
  /// GraphTask::reentrant_depth.
  int depth = 0;
  /// The node's device (the recording actor's device when there is no node).
  Device device;
  /// The id of the device stream the node runs on (0: the default stream,
  /// or a device without streams).
  int stream = 0;
  /// Input slot of `node` a Grad or an input event fills.
  std::uint32_t input_nr = 0;

  // -- device work (launch and device_run; see Note [Stream tracks]) -----------
  /// launch: what was launched. For a launch `device` and `stream` name the
  /// stream it went to, `node` the node that launched it.
  DeviceWork work = DeviceWork::none;
  /// launch: the kernel's name (a string literal).
  const char* op = "";
  /// launch of a wait: the stream waited for; of a record: the stream recorded.
  Stream source;
  /// device_run: the item's number on its stream (from 1, in enqueue order);
  /// launch of a wait or a record: the event's point on `source`.
  std::uint64_t point = 0;
  /// device_run: when the item finished (`ts_ns`: when it started).
  std::int64_t end_ns = 0;
};

/// The events of one actor, in the order it recorded them (so `ts_ns` never
/// decreases along a track), or the device_run events of one stream.
struct Track {
  /// "caller <thread id>", "sim:0 worker", "async coordinator <actor id>";
  /// for a stream its Stream::str(),
  /// `sim:0/stream 1`.
  std::string actor;
  std::vector<Event> events;
};

/// A recording: one track per actor that recorded anything.
struct Trace {
  std::vector<Track> tracks;
  /// The wall clock (system_clock, ns since the Unix epoch) when the
  /// recording started, i.e. at its ts_ns 0: lines up the recordings of
  /// several processes (tools/trace/detail/merge.h).
  std::int64_t epoch_unix_ns = 0;
  /// The recording process's id.
  std::int64_t pid = 0;
};

} // namespace actorgrad::trace
