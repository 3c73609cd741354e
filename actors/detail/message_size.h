#pragma once
/// @file message_size.h
/// The one size of the messages a backward pass sends for its nodes. Internal.

#include <cstddef>

namespace actorgrad::detail {

// Note [Per-node messages share a heap size class]
// A message between engine actors is a CAF mailbox element that the
// sender's thread allocates and the receiver's thread frees. glibc's malloc
// keeps a small cache of freed chunks per thread and per size class
// (tcache). A thread that frees chunks of one size and allocates chunks of
// another finds that cache empty at each allocation and full at each free,
// and takes malloc's slow paths both times. A device's actor that
// receives a Task (a 152-byte element) and sends a Grad (240 bytes) did
// that, as did a caller that sends a Task and receives a WakeUp (104 bytes;
// since sent only under an observer: Note [Wake-up without a message] in
// actors/detail/runner.cpp). With the messages a pass sends for its nodes
// (Grad, Task, WakeUp) all of one size, the chunk a thread frees is the one
// it allocates next, whichever of them it sends (bench/HISTORY.md, "A
// coordinator woken without a message"). Task and WakeUp are filled
// up to Grad's size; the static_asserts keep the three equal, so a field
// added to one of them shrinks its fill (or raises this size for all).
// Their mailbox elements still differed (CAF's element of a Task took 232
// bytes, a Grad's 240: malloc chunks of 240 and 256 bytes), until they
// became RecycledElements, which take one block size from one per-thread stack
// (Note [Mailbox elements kept by the thread that frees them] in
// recycled_element.h).

/// The size of Grad, Task and WakeUp.
inline constexpr std::size_t per_node_message_size = 144;

/// Zeroed bytes that bring a message whose fields take `used` bytes up to
/// per_node_message_size.
template <std::size_t used>
struct SizeFill {
  std::byte bytes[per_node_message_size - used]{};
};

} // namespace actorgrad::detail
