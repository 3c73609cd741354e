#pragma once
/// @file event.h
/// What the engine's recorder writes: one Event per message sent or
/// received and per node made ready, fed or run, grouped per actor.

#include <cstdint>
#include <string>
#include <vector>

#include "actorgrad/device/device.h"

namespace actorgrad::trace {

/// What happened.
enum class EventKind : std::uint8_t {
  send,       ///< this actor sent a message (`message_id` pairs it with its receive)
  receive,    ///< this actor took a message from its mailbox
  ready,      ///< `node`'s last input arrived: it entered this actor's ready heap
  input,      ///< the running node fed an output to `node`, owned by this actor (no message)
  node_start, ///< this actor started running `node`
  node_end,   ///< ... and finished it (its outputs delivered)
};

/// The engine message an Event of kind send or receive is about.
enum class MessageKind : std::uint8_t { none, grad, task, wake_up };

/// `Grad`, `Task`, `WakeUp` (the message type names of actors/messages.h).
const char* message_name(MessageKind k);
/// Inverse of message_name; MessageKind::none for any other text.
MessageKind parse_message_name(const std::string& name);

/// One recorded event. For a message, `node` is the node it is for (the
/// consumer of a Grad, the node of a Task; none for a WakeUp).
struct Event {
  /// Nanoseconds on the recorder's monotonic clock (steady_clock) since the
  /// recording started; shared by every actor.
  std::int64_t ts_ns = 0;
  EventKind kind = EventKind::node_start;
  MessageKind message = MessageKind::none;
  /// GraphTask::id of the backward call.
  std::uint64_t graph_task = 0;
  /// Pairs a send with its receive (unique within a recording; 0 otherwise).
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
};

/// The events of one actor, in the order it recorded them (so `ts_ns` never
/// decreases along a track).
struct Track {
  /// "caller <thread id>", "sim:0 worker", "pool worker <actor id>",
  /// "async coordinator <actor id>".
  std::string actor;
  std::vector<Event> events;
};

/// A recording: one track per actor that recorded anything.
struct Trace {
  std::vector<Track> tracks;
};

} // namespace actorgrad::trace
