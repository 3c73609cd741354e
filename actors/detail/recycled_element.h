#pragma once
/// @file recycled_element.h
/// The mailbox element of an engine message, whose memory the thread that
/// frees it keeps for its next one. Internal.

#include <algorithm>
#include <cstddef>
#include <utility>

#include <caf/detail/tuple_vals.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/message_id.hpp>
#include <caf/type_erased_tuple.hpp>

#include "actorgrad/actors/messages.h"
#include "actorgrad/libengine/engine/detail/recycling_allocator.h"

namespace actorgrad::detail {

// Note [Mailbox elements kept by the thread that frees them]
// A message is a CAF mailbox element that the sender's thread allocates and
// the receiver's thread frees once it handled it. With malloc, each of those
// is a call through glibc's per-thread cache: about 130 instructions a
// message between two device actors (callgrind, `hops 2`: malloc 41, free 21,
// _int_free 66 a message on each device's thread), on top of Note [Per-node
// messages share a heap size class], which keeps them off the slow paths. A
// device actor in a pipeline, or either end of a hop, frees about as many
// elements as it sends. So the elements of the per-node messages (Grad, Task,
// WakeUp) take their blocks from a RecyclingAllocator of one block size that
// fits each of them: the freeing thread keeps up to 64 of them, and its next
// send takes the last one kept, a few instructions each way: a device hop
// went from 1,254 to 1,145 instructions in the regenerated table
// (bench/HISTORY.md, "Mailbox elements kept by the thread that frees
// them"). A thread that only sends (a caller that makes a root Task) still
// allocates, and one that only receives frees past its 64, as before.
//
// CAF 0.17 allocates every element with `new mailbox_element_vals<T>`, a
// final class, and frees it with `delete this` through its virtual
// destructor, which calls the operator delete of the element's own class.
// So RecycledElement repeats mailbox_element_vals for one message type and adds
// that class its own operator new and delete; everything that reads or
// moves an element (handlers, MessageType, forwards) sees the same
// mailbox_element and type_erased_tuple as before.

/// A block for a per-node message's element: the one this thread kept
/// last, if any. Defined below, with the block's size.
inline void* take_element_block();
/// Keeps `block` for this thread's next element, or frees it.
inline void keep_element_block(void* block) noexcept;

/// The mailbox element of one engine message M (see the note above).
template <class M>
class RecycledElement final : public caf::mailbox_element,
                              public caf::detail::tuple_vals_impl<caf::type_erased_tuple, M> {
public:
  /// An element without a sender, as caf::anon_send makes it.
  template <class U>
  RecycledElement(caf::message_id mid, U&& m)
    : caf::mailbox_element(nullptr, mid, {}),
      caf::detail::tuple_vals_impl<caf::type_erased_tuple, M>(std::forward<U>(m)) {}

  caf::type_erased_tuple& content() override { return *this; }
  const caf::type_erased_tuple& content() const override { return *this; }

  caf::message move_content_to_message() override {
    return caf::make_message(std::move(std::get<0>(this->data())));
  }
  caf::message copy_content_to_message() const override {
    return caf::make_message(std::get<0>(this->data()));
  }

  /// The block this thread kept last, if any (see the note above).
  static void* operator new(std::size_t) { return take_element_block(); }
  /// Keeps the block for this thread's next element, or frees it.
  static void operator delete(void* block) noexcept { keep_element_block(block); }
};

/// A block that holds the mailbox element of any per-node message.
struct alignas(std::max_align_t) ElementBlock {
  std::byte bytes[std::max({sizeof(RecycledElement<msg::Grad>), sizeof(RecycledElement<msg::Task>),
                            sizeof(RecycledElement<msg::WakeUp>)})];
};

inline void* take_element_block() { return RecyclingAllocator<ElementBlock>{}.allocate(1); }

inline void keep_element_block(void* block) noexcept {
  RecyclingAllocator<ElementBlock>{}.deallocate(static_cast<ElementBlock*>(block), 1);
}

} // namespace actorgrad::detail
