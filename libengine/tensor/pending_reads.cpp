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
// allocator's record_stream covers frees, not writes.) So a copy records
// an event on the reading stream in its source's storage, and an in-place
// write first makes its stream wait for those events: an event wait, no
// host block, and none at all for memory nobody copied.

void PendingReads::record(Stream reader) {
  Event done = Event::recorded_on(reader);
  std::lock_guard lock(mutex_);
  auto same = std::find_if(reads_.begin(), reads_.end(),
                           [&](const auto& r) { return r.first == reader; });
  if (same != reads_.end())
    same->second = std::move(done); // a later point of one stream covers the earlier one
  else
    reads_.emplace_back(reader, std::move(done));
  any_.store(true, std::memory_order_release);
}

void PendingReads::order_before(Stream writer) const {
  std::vector<std::pair<Stream, Event>> reads;
  {
    std::lock_guard lock(mutex_);
    reads = reads_;
  }
  for (const auto& [reader, done] : reads)
    if (reader != writer && reader.device.type == writer.device.type)
      done.block(writer); // outside the lock: it may enqueue a wait
}

std::vector<Stream> PendingReads::streams() const {
  std::lock_guard lock(mutex_);
  std::vector<Stream> out;
  for (const auto& r : reads_)
    out.push_back(r.first);
  return out;
}

void record_async_read(const Tensor& t, Stream reader) {
  if (has_streams(t.device()))
    t.impl()->storage->reads.record(reader);
}

void order_write_after_reads(const Tensor& t) {
  const PendingReads& reads = t.impl()->storage->reads;
  if (reads.any())
    reads.order_before(current_stream(t.device()));
}

std::vector<Stream> pending_read_streams(const Tensor& t) {
  return t.impl()->storage->reads.streams();
}

} // namespace actorgrad
