#include "actorgrad/libengine/tensor/pending_reads.h"

#include <algorithm>

#include "actorgrad/device/event.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad {

// Note [Pending reads]
// The engine adds a gradient into another in place (InputBuffer::add,
// AccumulateGrad) when the host holds it alone: no handle elsewhere, so no
// later reader. But a reader may already have been enqueued. A copy to
// another device (ToCopyBackward's to_device) reads its source on a stream
// other than the one the engine accumulates on: the destination's on a
// sim, the source device's current stream on CUDA. On a sim the kernel
// holds a handle until it ran, so the count stays above one until then;
// but nothing orders the accumulation stream after that read (the race
// detector reports write-after-read), and a CUDA copy holds no handle at
// all, so the add could overwrite the gradient before the copy read it.
// (PyTorch's InputBuffer::accumulate has the same gap; its caching
// allocator's record_stream covers frees, not writes.) A node's own
// kernels are the other such reader: a backward may hand one gradient to
// two consumers (AddBackward returns it twice); one consumer's node reads
// it on its stream and drops it, and the other's buffer, now its sole
// holder, adds into it on another stream. So a copy records the reading
// stream in its source's storage, and so does the engine for a node's
// inputs that someone else still holds (ActorgradGraph::call_function); an
// in-place write first records an event on each of those streams and makes
// its own stream wait for it: an event wait, no host block, and one atomic
// load for memory nobody else read.
//
// The event is recorded when the write comes, not when the read is
// enqueued: it then follows every read enqueued on that stream so far
// (the writer may wait for more than the read, never for less), and a read
// costs no event. That matters: a node reads a shared gradient on almost
// every multi-consumer edge, and an event per read made the 4-device
// branches benchmark 86% dearer (callgrind, bench_chain_driver actor
// branches 4 100: 1,984 -> 3,688 instructions per node); recording only
// the stream, once per storage and stream, keeps it near the old cost.
// A stream is recorded before the write can see the reader's handle gone
// (the reader records it before it drops its handle), which
// order_write_after_reads' fence makes visible.

Stream PendingReads::unpack(std::uint64_t w) {
  return {
    Device(static_cast<DeviceType>(w >> 48 & 0xff), static_cast<std::int16_t>(w >> 32 & 0xffff)),
    static_cast<std::uint32_t>(w)};
}

void PendingReads::record(Stream reader) {
  const std::uint64_t word = pack(reader);
  std::uint64_t first = first_.load(std::memory_order_acquire);
  if (first == word)
    return; // recorded already: the writer's event covers every later read too
  if (first == 0 && first_.compare_exchange_strong(first, word, std::memory_order_acq_rel)) {
    any_.store(true, std::memory_order_release);
    return;
  }
  if (first == word)
    return; // another reader recorded the same stream first
  auto old = reads_.load(std::memory_order_acquire);
  for (;;) {
    if (old && std::find(old->begin(), old->end(), reader) != old->end())
      return;
    auto next = std::make_shared<List>(old ? *old : List{});
    next->push_back(reader);
    if (reads_.compare_exchange_weak(old, std::move(next), std::memory_order_acq_rel))
      break;
  }
  any_.store(true, std::memory_order_release);
}

void PendingReads::order_before(Stream writer) const {
  const auto wait_for = [writer](Stream reader) {
    if (reader != writer && reader.device.type == writer.device.type)
      Event::recorded_on(reader).block(writer);
  };
  if (const std::uint64_t first = first_.load(std::memory_order_acquire))
    wait_for(unpack(first));
  if (const auto reads = reads_.load(std::memory_order_acquire))
    for (const Stream reader : *reads)
      wait_for(reader);
}

std::vector<Stream> PendingReads::streams() const {
  std::vector<Stream> out;
  if (const std::uint64_t first = first_.load(std::memory_order_acquire))
    out.push_back(unpack(first));
  if (const auto reads = reads_.load(std::memory_order_acquire))
    out.insert(out.end(), reads->begin(), reads->end());
  return out;
}

void record_async_read(const Tensor& t, Stream reader) {
  if (has_streams(t.device()))
    t.impl()->storage->reads.record(reader);
}

void order_write_after_reads(const Tensor& t) {
  // The caller saw the last other handle gone (a relaxed use_count load);
  // this fence makes the reads recorded before that handle dropped visible.
  std::atomic_thread_fence(std::memory_order_acquire);
  const PendingReads& reads = t.impl()->storage->reads;
  if (reads.any())
    reads.order_before(current_stream(t.device()));
}

std::vector<Stream> pending_read_streams(const Tensor& t) {
  return t.impl()->storage->reads.streams();
}

} // namespace actorgrad
