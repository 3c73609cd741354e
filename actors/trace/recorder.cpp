#include "actors/trace/recorder.h"

#include <algorithm>

namespace actorgrad::trace {

Recorder::Recorder() : epoch_(std::chrono::steady_clock::now()) {}

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

} // namespace actorgrad::trace
