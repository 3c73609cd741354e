#include "actorgrad/actors/trace/recorder.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace actorgrad::trace {

namespace {

std::atomic<std::uint64_t> next_serial{1};

/// A buffer of one stream in one recording, opened by this thread.
struct StreamBuffer {
  std::uint64_t recording;
  Stream stream;
  EventBuffer* buffer;
};
/// This thread's stream buffers, of one recording at a time: a sim stream's
/// thread runs one stream; a GPU driver's callback thread may run several.
thread_local std::vector<StreamBuffer> stream_buffers;

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

void Recorder::wait_for_device_work(std::chrono::milliseconds limit) const {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (runs_pending_.load(std::memory_order_acquire) > 0 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::microseconds(50));
}

EventBuffer& Recorder::buffer_of(const ObservedActor& a) {
  if (a.cache.owner != serial_)
    a.cache = {serial_, &open_buffer(a.name())};
  return *static_cast<EventBuffer*>(a.cache.state);
}

EventBuffer& Recorder::stream_buffer(Stream s) {
  if (!stream_buffers.empty() && stream_buffers.front().recording != serial_)
    stream_buffers.clear(); // an earlier recording's: never written again from here
  for (const StreamBuffer& b : stream_buffers)
    if (b.stream == s)
      return *b.buffer;
  EventBuffer& b = open_buffer(s.str());
  stream_buffers.push_back({serial_, s, &b});
  return b;
}

Event Recorder::event_of(const ObservedActor& a, EventKind kind, const GraphTaskBase& t,
                         const NodeInfo& n) const {
  Event e;
  e.ts_ns = now();
  e.kind = kind;
  e.graph_task = t.id;
  e.node = n.name;
  e.sequence_nr = n.sequence_nr;
  e.depth = t.reentrant_depth;
  e.device = n.name.empty() ? a.device : n.device;
  e.stream = n.stream;
  return e;
}

void Recorder::record(const ObservedActor& a, EventKind kind, const GraphTaskBase& t,
                      const NodeInfo& n, MessageKind message, std::uint64_t message_id,
                      std::uint32_t input_nr) {
  EventBuffer& buffer = buffer_of(a);
  Event e = event_of(a, kind, t, n);
  e.message = message;
  e.message_id = message_id;
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

DeviceRun Recorder::work_launched(const ObservedActor& a, const GraphTaskBase& t,
                                  const NodeInfo& n, const DeviceLaunch& work) {
  EventBuffer& buffer = buffer_of(a);
  Event e = event_of(a, EventKind::launch, t, n);
  const std::uint64_t id = next_message_id();
  e.message_id = id;
  e.device = work.stream.device; // the launch's stream, not the node's
  e.stream = static_cast<int>(work.stream.id);
  e.work = work.kind;
  e.op = work.op;
  e.source = work.source;
  e.point = work.point;
  buffer.append(std::move(e));
  if (work.kind == DeviceWork::record)
    return {};
  runs_pending_.fetch_add(1, std::memory_order_relaxed);
  return [self = shared_from_this(), id, task = t.id,
          s = work.stream](std::uint64_t point, std::chrono::steady_clock::time_point start,
                           std::chrono::steady_clock::time_point end) {
    Event run;
    run.ts_ns = self->since_start(start);
    run.end_ns = self->since_start(end);
    run.kind = EventKind::device_run;
    run.message_id = id;
    run.graph_task = task;
    run.device = s.device;
    run.stream = static_cast<int>(s.id);
    run.point = point;
    self->stream_buffer(s).append(std::move(run));
    self->runs_pending_.fetch_sub(1, std::memory_order_release);
  };
}

} // namespace actorgrad::trace
