#pragma once
/// @file input_buffer.h
/// Where the gradients bound for one node's inputs add up.
/// Internal (libengine/engine/detail/, not installed).

#include <cstddef>
#include <optional>

#include "actorgrad/device/event.h"
#include "actorgrad/libengine/engine/detail/spare_stack.h"
#include "actorgrad/libengine/tensor/tensor.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad::detail {

/// Where a gradient is accumulated and which stream that must first wait
/// for (see Note [Accumulation streams] in input_buffer.cpp).
struct AccumulationPlan {
  /// None for a device without streams.
  std::optional<Stream> accumulate;
  std::optional<Stream> wait_for;
};

/// The plan for a gradient on `var` made on `producer` for a node running
/// on `consumer` (PyTorch's InputBuffer::add cases).
AccumulationPlan plan_accumulation(Device var, const std::optional<Stream>& producer,
                                   const std::optional<Stream>& consumer);

/// The stream on which a node made `grad`, one of its outputs: the producer
/// of InputBuffer::add. `node_stream` (the node's own stream, where it ran)
/// when `grad` is on that stream's device; else, on a device with streams,
/// the calling thread's current stream of `grad`'s device, where a copy the
/// node made landed; none on the CPU. Call it on the thread that ran the
/// node (see Note [Producer streams] in input_buffer.cpp).
std::optional<Stream> producer_stream(const std::optional<Stream>& node_stream, const Tensor& grad);

/// One slot per input of a node (PyTorch's InputBuffer). Gradients arriving
/// on the same slot are added; the buffer becomes the node's input list when
/// its dependencies reach zero. Owned by the actor that runs the node.
class InputBuffer {
public:
  InputBuffer() = default;
  explicit InputBuffer(std::size_t size) : buffer_(size) {}
  /// A buffer whose slots are `slots` (each empty or a gradient already
  /// accumulated there).
  explicit InputBuffer(variable_list&& slots) : buffer_(std::move(slots)) {}

  /// Gives this buffer, which has no slots, `size` empty ones, in a slot
  /// list this thread recycled when it kept one (Note [Recycled input
  /// lists] in input_buffer.cpp).
  void make_slots(std::size_t size);
  /// Empties `inputs`, a node's input list after its call, and keeps its
  /// storage for make_slots() on this thread, within the bounds of
  /// SpareInputLists; a list not kept keeps its storage.
  static void recycle(variable_list&& inputs);

  /// Adds `grad` into slot `pos` (in place when this buffer holds the only
  /// reference and grad mode is off, else out of place so a create_graph
  /// backward keeps its graph).
  ///
  /// On a device with streams, `producer` is the stream that made `grad`
  /// (producer_stream()) and `consumer` the stream of the node this buffer feeds;
  /// the accumulation stream and the event waits follow PyTorch's cases (see
  /// Note [Accumulation streams] in input_buffer.cpp). `ready`, when given,
  /// was recorded on `producer` just after `grad` was produced.
  void add(std::size_t pos, Tensor&& grad, const std::optional<Stream>& producer = std::nullopt,
           const std::optional<Stream>& consumer = std::nullopt, const Event* ready = nullptr);

  /// add() where it needs no kernel, stream or grad mode, without a call:
  /// `grad` undefined (nothing to add) or the first gradient of slot `pos`
  /// on the CPU (kept as it is). Returns whether it was; else `grad` is
  /// left untouched for add().
  bool add_plain(std::size_t pos, Tensor& grad) {
    if (!grad.defined())
      return true;
    if (pos >= buffer_.size() || buffer_[pos].defined() || !grad.impl()->storage->device.is_cpu())
      return false;
    buffer_[pos] = std::move(grad);
    return true;
  }
  std::size_t size() const { return buffer_.size(); }
  bool empty() const { return buffer_.empty(); }
  Tensor& operator[](std::size_t pos) { return buffer_[pos]; }

  /// Moves the slots out as the node's input list.
  static variable_list variables(InputBuffer&& b) { return std::move(b.buffer_); }

private:
  variable_list buffer_;
};

/// This thread's kept input lists (Note [Recycled input lists] in
/// input_buffer.cpp): 8 lists of at most 16 slots.
using SpareInputLists = SpareVectors<variable_list, 8, 16>;

inline void InputBuffer::make_slots(std::size_t size) {
  // A list with no storage (this one, moved from or never filled) owns
  // nothing: it can take a kept list's place.
  if (buffer_.capacity() == 0 && SpareInputLists::stack::size() != 0)
    SpareInputLists::stack::take(buffer_);
  buffer_.reserve(size);
  for (std::size_t i = 0; i < size; ++i)
    buffer_.emplace_back();
}

inline void InputBuffer::recycle(variable_list&& inputs) {
  SpareInputLists::keep(std::move(inputs)); // its tensors go now, as they would with the list
}

} // namespace actorgrad::detail
