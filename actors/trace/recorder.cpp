#include "actorgrad/actors/trace/recorder.h"

#include <algorithm>

namespace actorgrad::trace {

namespace {
std::atomic<std::uint64_t> next_serial{1};
} // namespace

Recorder::Recorder()
  : serial_(next_serial.fetch_add(1, std::memory_order_relaxed)),
    epoch_(std::chrono::steady_clock::now()) {}

Recorder::~Recorder() {
  for (EventBuffer* b = buffers_.load(std::memory_order_acquire); b;) {
    EventBuffer* next = b->next_buffer;
    delete b;
    b = next;
  }
}

EventBuffer& Recorder::open_buffer(std::string actor) {
  auto* b = new EventBuffer(std::move(actor));
  b->next_buffer = buffers_.load(std::memory_order_relaxed);
  while (!buffers_.compare_exchange_weak(b->next_buffer, b, std::memory_order_release,
                                         std::memory_order_relaxed)) {
  }
  return *b;
}

Trace Recorder::snapshot() const {
  Trace t;
  for (const EventBuffer* b = buffers_.load(std::memory_order_acquire); b; b = b->next_buffer)
    t.tracks.push_back({b->actor(), b->published()});
  std::reverse(t.tracks.begin(), t.tracks.end());
  return t;
}

EventBuffer& Recorder::buffer_of(const ObservedActor& a) {
  if (a.cache.owner != serial_)
    a.cache = {serial_, &open_buffer(a.name())};
  return *static_cast<EventBuffer*>(a.cache.state);
}

void Recorder::record(const ObservedActor& a, EventKind kind, const GraphTaskBase& t,
                      const NodeInfo& n, MessageKind message, std::uint64_t message_id,
                      std::uint32_t input_nr) {
  EventBuffer& buffer = buffer_of(a);
  Event e;
  e.ts_ns = now();
  e.kind = kind;
  e.message = message;
  e.graph_task = t.id;
  e.message_id = message_id;
  e.node = n.name;
  e.sequence_nr = n.sequence_nr;
  e.depth = t.reentrant_depth;
  e.device = n.name.empty() ? a.device : n.device;
  e.stream = n.stream;
  e.input_nr = input_nr;
  buffer.append(std::move(e));
}

void Recorder::node_ready(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) {
  record(a, EventKind::ready, t, n);
}

void Recorder::node_fed(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n,
                        std::uint32_t input_nr) {
  record(a, EventKind::input, t, n, MessageKind::none, 0, input_nr);
}

void Recorder::node_started(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) {
  record(a, EventKind::node_start, t, n);
}

void Recorder::node_finished(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n) {
  record(a, EventKind::node_end, t, n);
}

std::uint64_t Recorder::message_sent(const ObservedActor& a, const GraphTaskBase& t,
                                     MessageKind kind, const NodeInfo& n, std::uint32_t input_nr) {
  const std::uint64_t id = next_message_id();
  record(a, EventKind::send, t, n, kind, id, input_nr);
  return id;
}

void Recorder::message_received(const ObservedActor& a, const GraphTaskBase& t, MessageKind kind,
                                const NodeInfo& n, std::uint64_t id, std::uint32_t input_nr) {
  record(a, EventKind::receive, t, n, kind, id, input_nr);
}

} // namespace actorgrad::trace
