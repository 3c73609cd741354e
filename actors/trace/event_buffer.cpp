#include "actorgrad/actors/trace/event_buffer.h"

namespace actorgrad::trace {

EventBuffer::EventBuffer(std::string actor)
  : actor_(std::move(actor)), head_(new Chunk), tail_(head_) {}

EventBuffer::~EventBuffer() {
  for (Chunk* c = head_; c;) {
    Chunk* next = c->next.load(std::memory_order_relaxed);
    delete c;
    c = next;
  }
}

void EventBuffer::append(Event&& e) {
  std::size_t n = tail_->count.load(std::memory_order_relaxed);
  if (n == kChunkEvents) {
    auto* fresh = new Chunk;
    tail_->next.store(fresh, std::memory_order_release);
    tail_ = fresh;
    n = 0;
  }
  tail_->events[n] = std::move(e);
  tail_->count.store(n + 1, std::memory_order_release);
}

std::vector<Event> EventBuffer::published() const {
  std::vector<Event> out;
  for (const Chunk* c = head_; c; c = c->next.load(std::memory_order_acquire)) {
    const std::size_t n = c->count.load(std::memory_order_acquire);
    out.insert(out.end(), c->events.begin(), c->events.begin() + static_cast<std::ptrdiff_t>(n));
    if (n < kChunkEvents)
      break; // the rest was appended after `n` was read: not part of this prefix
  }
  return out;
}

} // namespace actorgrad::trace
