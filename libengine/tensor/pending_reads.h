#pragma once
/// @file pending_reads.h
/// Reads of a tensor's memory enqueued on streams, which an in-place write
/// that the host decided on alone must follow (Note [Pending reads]).

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "device/event.h"

namespace actorgrad {

class Tensor;

/// The asynchronous reads of one Storage's memory: per reading stream, an
/// event recorded just after the last read enqueued there. At most one
/// entry per stream; kept for the storage's life (a completed event orders
/// at no cost).
class PendingReads {
public:
  PendingReads() = default;
  PendingReads(const PendingReads&) = delete;
  PendingReads& operator=(const PendingReads&) = delete;

  /// Records that work just enqueued on `reader` reads this memory.
  void record(Stream reader);
  /// Whether a read was ever recorded (one atomic load).
  bool any() const { return any_.load(std::memory_order_acquire); }
  /// Makes work enqueued on `writer` from now on wait for every recorded
  /// read on another stream of its backend.
  void order_before(Stream writer) const;
  /// The streams with a recorded read, in recording order.
  std::vector<Stream> streams() const;

private:
  using List = std::vector<std::pair<Stream, Event>>;

  /// Set (release) by record() once a list exists, never cleared; read
  /// (acquire) by any() so that memory nobody copied costs one load.
  std::atomic<bool> any_{false};
  /// Per stream, an event recorded after its last read; replaced whole by
  /// record() (copy on write, compare-and-swap), read by order_before()
  /// and streams(). No lock: record() runs in device workers' handlers.
  std::atomic<std::shared_ptr<const List>> reads_;
};

/// Records on `t`'s storage that work just enqueued on `reader` reads it
/// (a copy to another device or stream). Nothing for a tensor on a device
/// without streams.
void record_async_read(const Tensor& t, Stream reader);

/// Before an in-place write of `t` on the calling thread's current stream
/// of its device: makes that stream wait for the reads recorded on `t`'s
/// storage on other streams. Costs one atomic load when none was recorded.
void order_write_after_reads(const Tensor& t);

/// The streams recorded as reading `t`'s storage (for tests).
std::vector<Stream> pending_read_streams(const Tensor& t);

} // namespace actorgrad
