#pragma once
/// @file pending_reads.h
/// Reads of a tensor's memory enqueued on streams, which an in-place write
/// that the host decided on alone must follow (Note [Pending reads]).

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "actorgrad/device/stream.h"

namespace actorgrad {

class Tensor;

/// The asynchronous reads of one Storage's memory: the streams that read
/// it, each once (a write orders itself after all work enqueued there; see
/// Note [Pending reads]). Kept for the storage's life.
class PendingReads {
public:
  PendingReads() = default;
  PendingReads(const PendingReads&) = delete;
  PendingReads& operator=(const PendingReads&) = delete;

  /// Records that work enqueued on `reader` reads this memory (before the
  /// reader's handle is dropped; allocates only for a new stream).
  void record(Stream reader);
  /// Whether a read was ever recorded (one atomic load).
  bool any() const { return any_.load(std::memory_order_acquire); }
  /// Makes work enqueued on `writer` from now on wait for the work enqueued
  /// so far on every recorded stream of its backend but `writer`.
  void order_before(Stream writer) const;
  /// The streams with a recorded read, in recording order.
  std::vector<Stream> streams() const;

private:
  using List = std::vector<Stream>;

  /// A Stream as one word (0: none), for first_.
  static std::uint64_t pack(Stream s) {
    return std::uint64_t{1} << 63 | std::uint64_t{static_cast<std::uint8_t>(s.device.type)} << 48 |
           std::uint64_t{static_cast<std::uint16_t>(s.device.index)} << 32 | s.id;
  }
  static Stream unpack(std::uint64_t w);

  /// Set (release) by record() once a stream is recorded, never cleared;
  /// read (acquire) by any() so that memory nobody read costs one load.
  std::atomic<bool> any_{false};
  /// The first reading stream, packed: most memory is read on one stream,
  /// which then costs one load to find again (no list). Written once by
  /// the first record() (compare-and-swap from 0); read by record(),
  /// order_before() and streams().
  std::atomic<std::uint64_t> first_{0};
  /// The reading streams after the first; replaced whole by
  /// record() (copy on write, compare-and-swap), read by order_before()
  /// and streams(). No lock: record() runs in device workers' handlers.
  std::atomic<std::shared_ptr<const List>> reads_;
};

/// Records on `t`'s storage that work just enqueued on `reader` reads it
/// (a copy to another device or stream). Nothing for a tensor on a device
/// without streams; else `reader` is added to its storage's streams when new.
void record_async_read(const Tensor& t, Stream reader);

/// Before an in-place write of `t` on the calling thread's current stream
/// of its device: makes that stream wait for the reads recorded on `t`'s
/// storage on other streams. Costs one atomic load when none was recorded.
void order_write_after_reads(const Tensor& t);

/// The streams recorded as reading `t`'s storage (for tests).
std::vector<Stream> pending_read_streams(const Tensor& t);

} // namespace actorgrad
