#include "actorgrad/actors/trace/recorder.h"

#include <algorithm>
#include <thread>
#include <vector>

#include <unistd.h>

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

/// This thread's caller buffer, of one recording at a time: a caller's
/// Runner (and its ObservedActor, whose cache would find it) lives for one
/// call only, and a buffer per call would hold a chunk per call forever.
struct CallerBuffer {
  std::uint64_t recording = 0;
  EventBuffer* buffer = nullptr;
};
thread_local CallerBuffer caller_buffer;

/// The last top-level pass this thread started under a recording.
thread_local std::uint64_t last_pass_here = 0;

std::int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

} // namespace

Recorder::Recorder(RecordingOptions options)
  : serial_(next_serial.fetch_add(1, std::memory_order_relaxed)),
    epoch_(std::chrono::steady_clock::now()), epoch_unix_ns_(unix_now_ns()),
    options_(std::move(options)) {
  if (options_.keep_passes != 0) {
    finished_ = std::make_unique<std::atomic<std::uint64_t>[]>(options_.keep_passes);
  } else if (options_.warn_bytes != 0 && options_.on_large) {
    const auto chunk = static_cast<std::int64_t>(EventBuffer::chunk_bytes());
    retention_.warn_chunks = std::max<std::int64_t>(
      1, (static_cast<std::int64_t>(options_.warn_bytes) + chunk - 1) / chunk);
    retention_.on_large = [this](std::int64_t bytes) {
      options_.on_large(passes_finished(), static_cast<std::size_t>(bytes));
    };
  }
}

Recorder::~Recorder() {
  for (EventBuffer* b = buffers_.load(std::memory_order_acquire); b;) {
    EventBuffer* next = b->next_buffer;
    delete b;
    b = next;
  }
}

EventBuffer& Recorder::open_buffer(std::string actor) {
  auto* b = new EventBuffer(std::move(actor), retention_);
  b->next_buffer = buffers_.load(std::memory_order_relaxed);
  while (!buffers_.compare_exchange_weak(b->next_buffer, b, std::memory_order_release,
                                         std::memory_order_relaxed)) {
  }
  return *b;
}

Trace Recorder::snapshot() const {
  Trace t;
  t.epoch_unix_ns = epoch_unix_ns_;
  t.pid = ::getpid();
  retention_.readers.fetch_add(1, std::memory_order_seq_cst);
  for (const EventBuffer* b = buffers_.load(std::memory_order_acquire); b; b = b->next_buffer)
    t.tracks.push_back({b->actor(), b->published()});
  retention_.readers.fetch_sub(1, std::memory_order_seq_cst);
  // Read after the walk: at least what any producer dropped by.
  const std::uint64_t below = retention_.drop_below.load(std::memory_order_acquire);
  if (below != 0) {
    for (Track& track : t.tracks)
      std::erase_if(track.events,
                    [&](const Event& e) { return e.graph_task != 0 && e.graph_task < below; });
    std::erase_if(t.tracks, [](const Track& track) { return track.events.empty(); });
  }
  std::reverse(t.tracks.begin(), t.tracks.end());
  return t;
}

std::size_t Recorder::events_held() const {
  std::size_t held = 0;
  retention_.readers.fetch_add(1, std::memory_order_seq_cst);
  for (const EventBuffer* b = buffers_.load(std::memory_order_acquire); b; b = b->next_buffer)
    held += b->held();
  retention_.readers.fetch_sub(1, std::memory_order_seq_cst);
  return held;
}

std::size_t Recorder::bytes_held() const {
  return static_cast<std::size_t>(retention_.chunks.load(std::memory_order_relaxed)) *
         EventBuffer::chunk_bytes();
}

std::uint64_t Recorder::last_pass_started_here() { return last_pass_here; }

void Recorder::task_started(const ObservedActor&, const GraphTaskBase& t) {
  if (t.reentrant_depth != 0)
    return;
  last_pass_here = t.id;
  if (!finished_)
    return;
  for (auto& slot : running_) {
    std::uint64_t free = 0;
    if (slot.load(std::memory_order_relaxed) == 0 &&
        slot.compare_exchange_strong(free, t.id, std::memory_order_acq_rel))
      return;
  }
  unslotted_.fetch_add(1, std::memory_order_acq_rel);
}

void Recorder::task_finished(const ObservedActor&, const GraphTaskBase& t) {
  if (t.reentrant_depth != 0)
    return;
  const std::uint64_t k = finished_count_.fetch_add(1, std::memory_order_relaxed);
  if (!finished_)
    return;
  bool slotted = false;
  for (auto& slot : running_) {
    std::uint64_t mine = t.id;
    if (slot.compare_exchange_strong(mine, 0, std::memory_order_acq_rel)) {
      slotted = true;
      break;
    }
  }
  if (!slotted)
    unslotted_.fetch_sub(1, std::memory_order_acq_rel);
  finished_[k % options_.keep_passes].store(t.id, std::memory_order_release);
  if (k + 1 >= options_.keep_passes)
    advance_window();
}

void Recorder::advance_window() {
  if (unslotted_.load(std::memory_order_acquire) != 0)
    return;
  std::uint64_t below = UINT64_MAX;
  for (std::size_t i = 0; i < options_.keep_passes; ++i) {
    const std::uint64_t id = finished_[i].load(std::memory_order_acquire);
    if (id == 0)
      return; // a slot not yet written: fewer than keep_passes known
    below = std::min(below, id);
  }
  for (const auto& slot : running_)
    if (const std::uint64_t id = slot.load(std::memory_order_acquire); id != 0)
      below = std::min(below, id);
  std::uint64_t now = retention_.drop_below.load(std::memory_order_relaxed);
  while (now < below && !retention_.drop_below.compare_exchange_weak(
                          now, below, std::memory_order_release, std::memory_order_relaxed)) {
  }
}

void Recorder::wait_for_device_work(std::chrono::milliseconds limit) const {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (runs_pending_.load(std::memory_order_acquire) > 0 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::microseconds(50));
}

EventBuffer& Recorder::buffer_of(const ObservedActor& a) {
  if (a.cache.owner == serial_)
    return *static_cast<EventBuffer*>(a.cache.state);
  EventBuffer* b = nullptr;
  if (a.role != ObservedActor::Role::caller) {
    b = &open_buffer(a.name());
  } else if (caller_buffer.recording == serial_) {
    b = caller_buffer.buffer; // this thread's, opened by an earlier call
  } else {
    b = &open_buffer(a.name());
    caller_buffer = {serial_, b};
  }
  a.cache = {serial_, b};
  return *b;
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

void Recorder::remote_message(const ObservedActor& a, const RemoteMessage& m) {
  EventBuffer& buffer = buffer_of(a);
  Event e;
  e.ts_ns = since_start(m.at);
  e.kind = m.sent ? EventKind::send : EventKind::receive;
  e.message = m.kind;
  e.message_id = m.flow;
  e.graph_task = m.graph_task;
  e.node = m.peer;
  e.device = a.device;
  buffer.append(std::move(e));
}

DeviceRun Recorder::work_launched(const ObservedActor& a, const GraphTaskBase& t, const NodeInfo& n,
                                  const DeviceLaunch& work) {
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
