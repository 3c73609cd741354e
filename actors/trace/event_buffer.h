#pragma once
/// @file event_buffer.h
/// One actor's append-only event log: written by that actor only, readable
/// by any thread at any time, without a lock.

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "actorgrad/actors/trace/event.h"

namespace actorgrad::trace {

/// A single-producer log of Events in fixed-size chunks linked into a list.
///
/// The producer writes an event into the tail chunk and then publishes it
/// by storing the chunk's new count (release); a full chunk is followed by
/// a new one, published through `next` (release). A reader walks the
/// chunks from the head, reading only the published prefix of each
/// (acquire), so it sees a consistent prefix of the log while the producer
/// keeps appending. Published events are never written again; chunks are
/// freed only with the buffer.
class EventBuffer {
public:
  /// A log for the actor named `actor`.
  explicit EventBuffer(std::string actor);
  ~EventBuffer();
  EventBuffer(const EventBuffer&) = delete;
  EventBuffer& operator=(const EventBuffer&) = delete;

  /// Appends `e`. Only the owning actor may call it.
  void append(Event&& e);

  /// The events published so far, in append order. Any thread.
  std::vector<Event> published() const;

  const std::string& actor() const { return actor_; }

  /// Link of the Recorder's lock-free list of buffers (set before the
  /// buffer is published there, read-only afterwards).
  EventBuffer* next_buffer = nullptr;

private:
  static constexpr std::size_t kChunkEvents = 256;
  struct Chunk {
    std::array<Event, kChunkEvents> events;
    std::atomic<std::size_t> count{0};
    std::atomic<Chunk*> next{nullptr};
  };

  const std::string actor_;
  Chunk* const head_;
  /// The chunk being filled; the producer's only.
  Chunk* tail_;
};

} // namespace actorgrad::trace
