#pragma once
/// @file event_buffer.h
/// One actor's append-only event log: written by that actor only, readable
/// by any thread at any time, without a lock.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actorgrad/actors/trace/event.h"

namespace actorgrad::trace {

/// What a Recorder shares with its buffers so that they can drop the events
/// of old passes (Note [Keeping the last passes] in recorder.h).
struct Retention {
  /// Events of GraphTasks with smaller ids are dropped: raised (never
  /// lowered) by the thread that finishes a pass (release); read (acquire)
  /// by each buffer's producer when it opens a chunk and by snapshots.
  std::atomic<std::uint64_t> drop_below{0};
  /// Snapshots walking the buffers now: incremented and decremented by each
  /// snapshot, read by a producer before it frees a chunk it unlinked (all
  /// seq_cst: Note [Freeing chunks under readers] in event_buffer.cpp).
  std::atomic<int> readers{0};
  /// Chunks held by every buffer of the recording: raised and lowered by
  /// the producers, read by Recorder::held_bytes (relaxed: a counter).
  std::atomic<std::int64_t> chunks{0};
  /// Set once before any buffer exists: when `chunks` reaches
  /// `warn_chunks` (0: never), the producer that made it so calls
  /// `on_large` with the bytes held.
  std::int64_t warn_chunks = 0;
  std::function<void(std::int64_t bytes)> on_large;
};

/// A single-producer log of Events in fixed-size chunks linked into a list.
///
/// The producer writes an event into the tail chunk and then publishes it
/// by storing the chunk's new count (release); a full chunk is followed by
/// a new one, published through `next` (release). A reader walks the
/// chunks from the head, reading only the published prefix of each
/// (acquire), so it sees a consistent prefix of the log while the producer
/// keeps appending. Published events are never written again. When the
/// producer opens a chunk, it unlinks the chunks at the head whose events
/// all belong to GraphTasks below Retention::drop_below and frees them once
/// no reader walks the buffers; the rest are freed with the buffer.
class EventBuffer {
public:
  /// A log for the actor named `actor`, dropping old chunks by `retention`
  /// (which must outlive it).
  EventBuffer(std::string actor, Retention& retention);
  ~EventBuffer();
  EventBuffer(const EventBuffer&) = delete;
  EventBuffer& operator=(const EventBuffer&) = delete;

  /// Appends `e`. Only the owning actor may call it.
  void append(Event&& e);

  /// The events published so far, in append order. Any thread, between
  /// incrementing Retention::readers and decrementing it.
  std::vector<Event> published() const;
  /// How many events the buffer holds. Same rule as published().
  std::size_t held() const;

  const std::string& actor() const { return actor_; }

  /// Bytes of one chunk (kChunkEvents events).
  static std::size_t chunk_bytes();

  /// Link of the Recorder's lock-free list of buffers (set before the
  /// buffer is published there, read-only afterwards).
  EventBuffer* next_buffer = nullptr;

private:
  static constexpr std::size_t kChunkEvents = 256;
  struct Chunk {
    std::array<Event, kChunkEvents> events;
    std::atomic<std::size_t> count{0};
    std::atomic<Chunk*> next{nullptr};
    /// The largest graph_task of its events; the producer's only.
    std::uint64_t max_task = 0;
  };

  /// Opens a new tail chunk, then drops the old ones it may.
  void open_chunk();
  /// Counts a new chunk in Retention::chunks (and warns there).
  void count_chunk();
  /// Unlinks the head chunks below Retention::drop_below; frees what it
  /// unlinked (now or earlier) when no reader walks the buffers.
  void drop_old_chunks();

  const std::string actor_;
  Retention& retention_;
  /// The oldest chunk kept: moved on by the producer (seq_cst), read by readers.
  std::atomic<Chunk*> head_;
  /// The chunk being filled; the producer's only.
  Chunk* tail_;
  /// Chunks unlinked but not yet freed; the producer's only.
  std::vector<Chunk*> retired_;
};

} // namespace actorgrad::trace
