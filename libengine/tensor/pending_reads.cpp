#include "libengine/tensor/pending_reads.h"

#include <algorithm>

#include "libengine/tensor/tensor_impl.h"

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
// holder, adds into it on another stream. So a copy records an event on
// the reading stream in its source's storage, and so does the engine for
// a node's inputs that someone else still holds after the call
// (ActorgradGraph::call_function); an in-place write first makes its
// stream wait for those events: an event wait, no host block, and one
// atomic load for memory nobody else read.

void PendingReads::record(Stream reader) {
  const Event done = Event::recorded_on(reader);
  auto old = reads_.load(std::memory_order_acquire);
  for (;;) {
    auto next = std::make_shared<List>(old ? *old : List{});
    auto same = std::find_if(next->begin(), next->end(),
                             [&](const auto& r) { return r.first == reader; });
    if (same != next->end())
      same->second = done; // a later point of one stream covers the earlier one
    else
      next->emplace_back(reader, done);
    if (reads_.compare_exchange_weak(old, std::move(next), std::memory_order_acq_rel))
      break;
  }
  any_.store(true, std::memory_order_release);
}

void PendingReads::order_before(Stream writer) const {
  const auto reads = reads_.load(std::memory_order_acquire);
  if (!reads)
    return;
  for (const auto& [reader, done] : *reads)
    if (reader != writer && reader.device.type == writer.device.type)
      done.block(writer);
}

std::vector<Stream> PendingReads::streams() const {
  std::vector<Stream> out;
  if (const auto reads = reads_.load(std::memory_order_acquire))
    for (const auto& r : *reads)
      out.push_back(r.first);
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
