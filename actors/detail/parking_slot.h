#pragma once
/// @file parking_slot.h
/// One place where an owned object waits for the next user. Internal.

#include <atomic>
#include <memory>
#include <type_traits>
#include <utility>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_control_block.hpp>

namespace actorgrad::detail {

/// How a handle of type `Handle` gives up its object as a raw pointer and
/// takes it back: one specialization per kind of handle parked.
template <class Handle>
struct ParkedHandle;

/// An owning std::unique_ptr: the slot owns the object while it is parked.
template <class T>
struct ParkedHandle<std::unique_ptr<T>> {
  using pointer = T*;
  static pointer get(const std::unique_ptr<T>& h) { return h.get(); }
  static pointer release(std::unique_ptr<T>& h) { return h.release(); }
  static std::unique_ptr<T> adopt(pointer p) { return std::unique_ptr<T>(p); }
};

/// A CAF actor handle: the slot holds one strong reference to the actor.
template <>
struct ParkedHandle<caf::actor> {
  using pointer = caf::actor_control_block*;
  static pointer get(const caf::actor& h) { return caf::actor_cast<pointer>(h); }
  static pointer release(caf::actor& h) {
    return caf::actor_cast<caf::strong_actor_ptr>(std::move(h)).release();
  }
  static caf::actor adopt(pointer p) { return caf::actor{p, false}; }
};

/// Keeps at most one object (a handle of type `Handle` that owns it) for
/// whoever needs one next, on any thread, without a lock: an object is
/// parked by a compare-exchange from empty and taken by an exchange with
/// empty, so it has one owner at a time. The engine parks an idle async
/// coordinator (Note [Idle coordinator slot] in async_call.h) and a
/// caller's mailbox (Note [Parked caller mailbox] in
/// caller_mailbox_lease.cpp) in one each.
///
/// Every operation is sequentially consistent: a coordinator that parked
/// itself then reads whether calls wait for one, while the pool sets that
/// flag then takes the slot (Note [Calls that wait for a coordinator] in
/// coordinator_pool.cpp); each side must see the other's store. (On x86 a
/// read-modify-write costs the same in any order.)
template <class Handle>
class ParkingSlot {
public:
  using Traits = ParkedHandle<Handle>;

  ParkingSlot() = default;
  ParkingSlot(const ParkingSlot&) = delete;
  ParkingSlot& operator=(const ParkingSlot&) = delete;
  /// Destroys the parked object, if any.
  ~ParkingSlot() { take(); }

  /// Parks `h`'s object if the slot is empty (`h` is empty afterwards);
  /// false, `h` untouched, if the slot holds one already.
  bool park(Handle& h) {
    typename Traits::pointer empty = nullptr;
    if (!parked_.compare_exchange_strong(empty, Traits::get(h)))
      return false;
    Traits::release(h); // the slot's now
    return true;
  }

  /// The parked object (the slot is empty afterwards), or an empty handle.
  Handle take() {
    typename Traits::pointer p = parked_.exchange(nullptr);
    return p ? Traits::adopt(p) : Handle{};
  }

  /// Empties the slot if it holds the object `h` shares (the slot's share
  /// is dropped); false if it does not (someone took it meanwhile). Only
  /// for handles that share their object.
  bool unpark(const Handle& h) requires std::is_copy_constructible_v<Handle> {
    typename Traits::pointer p = Traits::get(h);
    if (!parked_.compare_exchange_strong(p, nullptr))
      return false;
    Traits::adopt(p); // a temporary that drops the slot's share
    return true;
  }

private:
  /// Written and read by whichever thread parks or takes (seq_cst, above).
  std::atomic<typename Traits::pointer> parked_{nullptr};
};

} // namespace actorgrad::detail
