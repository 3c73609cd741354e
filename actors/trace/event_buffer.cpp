#include "actorgrad/actors/trace/event_buffer.h"

#include <algorithm>

namespace actorgrad::trace {

// Note [Freeing chunks under readers]
// A snapshot increments Retention::readers before it loads any buffer's
// head and decrements it after its last read of a chunk; a producer stores
// the new head before it loads `readers`, and frees the chunks it unlinked
// only when it reads 0. All four are seq_cst, so they have one order: if
// the producer's load of `readers` comes before a snapshot's increment, its
// store of the head came before too, and that snapshot starts at the new
// head and never reaches an unlinked chunk; otherwise the producer sees the
// snapshot and keeps the chunks for a later try (its next chunk, or the
// buffer's destruction). Without it a snapshot taken while actors keep
// recording (Engine::stop_recording of a recording whose calls still run)
// could read a freed chunk.

EventBuffer::EventBuffer(std::string actor, Retention& retention)
  : actor_(std::move(actor)), retention_(retention), head_(new Chunk), tail_(head_.load()) {
  count_chunk();
}

EventBuffer::~EventBuffer() {
  std::int64_t freed = 0;
  for (Chunk* c = head_.load(std::memory_order_relaxed); c; ++freed) {
    Chunk* next = c->next.load(std::memory_order_relaxed);
    delete c;
    c = next;
  }
  for (Chunk* c : retired_)
    delete c;
  freed += static_cast<std::int64_t>(retired_.size());
  retention_.chunks.fetch_sub(freed, std::memory_order_relaxed);
}

std::size_t EventBuffer::chunk_bytes() { return sizeof(Chunk); }

void EventBuffer::append(Event&& e) {
  std::size_t n = tail_->count.load(std::memory_order_relaxed);
  if (n == kChunkEvents) {
    open_chunk();
    n = 0;
  }
  tail_->max_task = std::max(tail_->max_task, e.graph_task);
  tail_->events[n] = std::move(e);
  tail_->count.store(n + 1, std::memory_order_release);
}

void EventBuffer::open_chunk() {
  auto* fresh = new Chunk;
  tail_->next.store(fresh, std::memory_order_release);
  tail_ = fresh;
  count_chunk();
  drop_old_chunks();
}

void EventBuffer::count_chunk() {
  const std::int64_t held = retention_.chunks.fetch_add(1, std::memory_order_relaxed) + 1;
  if (retention_.warn_chunks != 0 && held == retention_.warn_chunks)
    retention_.on_large(held * static_cast<std::int64_t>(chunk_bytes()));
}

void EventBuffer::drop_old_chunks() {
  const std::uint64_t below = retention_.drop_below.load(std::memory_order_acquire);
  Chunk* head = head_.load(std::memory_order_relaxed);
  while (head != tail_ && head->max_task < below) {
    retired_.push_back(head);
    head = head->next.load(std::memory_order_relaxed);
    head_.store(head, std::memory_order_seq_cst);
  }
  if (retired_.empty() || retention_.readers.load(std::memory_order_seq_cst) != 0)
    return;
  for (Chunk* c : retired_)
    delete c;
  retention_.chunks.fetch_sub(static_cast<std::int64_t>(retired_.size()),
                              std::memory_order_relaxed);
  retired_.clear();
}

std::vector<Event> EventBuffer::published() const {
  std::vector<Event> out;
  for (const Chunk* c = head_.load(std::memory_order_seq_cst); c;
       c = c->next.load(std::memory_order_acquire)) {
    const std::size_t n = c->count.load(std::memory_order_acquire);
    out.insert(out.end(), c->events.begin(), c->events.begin() + static_cast<std::ptrdiff_t>(n));
    if (n < kChunkEvents)
      break; // the rest was appended after `n` was read: not part of this prefix
  }
  return out;
}

std::size_t EventBuffer::held() const {
  std::size_t held = 0;
  for (const Chunk* c = head_.load(std::memory_order_seq_cst); c;
       c = c->next.load(std::memory_order_acquire)) {
    const std::size_t n = c->count.load(std::memory_order_acquire);
    held += n;
    if (n < kChunkEvents)
      break;
  }
  return held;
}

} // namespace actorgrad::trace
