#include "actorgrad/libengine/engine/detail/input_buffer.h"

#include "actorgrad/device/guards.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/engine/detail/stream_sync.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "actorgrad/libengine/tensor/pending_reads.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad::detail {

namespace {

// Only the engine holds this tensor and its storage: safe to add in place.
bool sole_owner(const Tensor& t) {
  return t.use_count() == 1 && t.impl()->storage.use_count() == 1;
}

} // namespace

// Note [Recycled input lists]
// A node's slot list was allocated when its first gradient arrived and
// freed when its call returned: a malloc and a free for every node run,
// about 145 of the pass-through chain's 1,463 instructions a node. After
// the call the list is only a spent vector, so the thread that ran the
// node keeps it (emptied) and the next buffer this thread makes takes it:
// a chain runs on one list. Per thread, with no lock: a buffer is made by
// the thread that adds its node's first gradient (the node's owner) and
// recycled by the one that ran the node, the same thread on one device
// and in run_all_here; a list that crosses to another thread stays there.
// Bounded (SpareInputLists, Note [Storage a thread keeps]); a
// longer list goes back to malloc.

// Note [Accumulation streams]
// PyTorch's InputBuffer::add picks where a gradient on a device with streams
// is accumulated, and what that stream must wait for first, from the devices
// of the gradient (var), of its producer's stream and of its consumer's:
//  (1) var on the producer's and the consumer's device: accumulate on the
//      consumer's stream, after the producer's stream;
//  (2) var on the consumer's device only (PyTorch: it was copied there by a
//      device thread, on that device's default stream): on the consumer's
//      stream, after the consumer device's default stream. The engine names
//      the stream a copy ran on as its producer (Note [Producer streams]),
//      which makes that case (1);
//  (3) var on the producer's device only: on the producer device's default
//      stream, after the producer's stream;
//  (4) neither: on the var device's default stream, with no wait.
// The wait happens even when the slot is empty: the consumer reads the
// gradient on its own stream later, and the accumulation stream of (1) and
// (2) is that stream.
AccumulationPlan plan_accumulation(Device var, const std::optional<Stream>& producer,
                                   const std::optional<Stream>& consumer) {
  if (!has_streams(var))
    return {};
  const bool on_producer = producer && producer->device == var;
  const bool on_consumer = consumer && consumer->device == var;
  if (on_producer && on_consumer)
    return {consumer, producer};
  if (on_consumer)
    return {consumer, default_stream(var)};
  if (on_producer)
    return {default_stream(var), producer};
  return {default_stream(var), std::nullopt};
}

// Note [Producer streams]
// A node runs on its own stream, but a gradient it returns on another device
// was made by a copy on the running thread's current stream of that device
// (kernels run on the current stream). On a device worker that is the
// device's default stream, which is what PyTorch's case (2) waits for. The
// thread that runs CPU nodes (the caller of backward, in the actor engine
// and in the reference executor, where it runs every node) keeps the
// caller's current streams, and those may be pool streams: a CPU node's
// copy to a device (ToCopyBackward of a device-to-CPU move) lands there, and
// waiting for the default stream orders nothing. So the producer of a
// gradient is the stream it was made on, read on the producing thread right
// after the node ran: the node's stream for its own device, the thread's
// current stream for any other. The gradient is then on its producer's
// device, and case (1) orders the consumer after the stream that made it;
// a Grad message carries an event recorded there.
std::optional<Stream> producer_stream(const std::optional<Stream>& node_stream,
                                      const Tensor& grad) {
  if (!grad.defined())
    return node_stream;
  const Device d = grad.device();
  if (node_stream && node_stream->device == d)
    return node_stream;
  if (d.is_cpu() || !has_streams(d)) // the CPU first: no backend lookup
    return std::nullopt;
  return current_stream(d);
}

void InputBuffer::add(std::size_t pos, Tensor&& grad, const std::optional<Stream>& producer,
                      const std::optional<Stream>& consumer, const Event* ready) {
  if (!grad.defined())
    return;
  // The CPU has no streams: no plan to make (the common case, without a call).
  std::optional<Stream> accumulate_on;
  if (const Device d = grad.device(); !d.is_cpu()) {
    const auto plan = plan_accumulation(d, producer, consumer);
    if (plan.wait_for)
      wait_for_stream(*plan.accumulate, *plan.wait_for, ready);
    accumulate_on = plan.accumulate;
  }
  Tensor& old = buffer_.at(pos);
  if (!old.defined()) { // the first gradient is kept as it is: no kernel, no stream to set
    old = std::move(grad);
    return;
  }
  OptionalStreamGuard guard(accumulate_on);
  if (GradMode::is_enabled()) {
    old = actorgrad::add(old, grad); // create_graph: keep the sum's graph
  } else if (sole_owner(old)) {
    order_write_after_reads(old); // a copy may not have read it yet (Note [Pending reads])
    kernels::add_(old, grad, 1.0);
  } else if (sole_owner(grad)) {
    order_write_after_reads(grad);
    kernels::add_(grad, old, 1.0);
    old = std::move(grad);
  } else {
    old = kernels::add(old, grad);
  }
}

} // namespace actorgrad::detail
