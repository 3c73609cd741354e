#pragma once
/// @file doorbell.h
/// The flag an engine actor's thread sleeps on while its mailbox is empty. Internal.

#include <atomic>
#include <cstdint>

namespace actorgrad::detail {

/// One sleeper (the thread of the actor that owns it), any number of
/// ringers (the threads that put something in that actor's mailbox, or
/// that made true what its owner waits for: Note [Wake-up without a
/// message] in actors/detail/runner.cpp).
///
/// Note [Doorbell]
/// The sleeper announces its sleep, then looks at its mailbox once more,
/// and sleeps only if that is still empty; a ringer first puts its message
/// in the mailbox, then looks whether the owner announced a sleep, and only
/// then wakes it. Every access here, and the mailbox's own push and
/// emptiness check (CAF's lifo_inbox: seq_cst compare-exchange and load),
/// is sequentially consistent, so in their single total order either the
/// sleeper's second look comes after the push (it sees the message and does
/// not sleep) or the ringer's look comes after the announcement (it wakes
/// the sleeper): a message is never left waiting beside a sleeping owner.
/// A ringer that finds the owner awake writes nothing, so a busy actor's
/// senders do not contend for the flag's cache line. The sleep itself is
/// std::atomic::wait (a futex on Linux), which returns only once the flag
/// changed, so a spurious wake-up just sleeps again. libstdc++'s wait first
/// polls the flag a few rounds (pause, then sched_yield) before the futex.
/// A raw futex call without that poll counted about 150 instructions fewer
/// a hop under callgrind; its wall time was within this 2-core VM's noise
/// (bench/HISTORY.md, "Engine actors sleep on a doorbell"), so the portable
/// call stays.
class Doorbell {
public:
  /// Any thread, after its message is in the owner's mailbox: wakes the
  /// owner if it sleeps or is about to.
  void ring() noexcept {
    if (state_.load() == asleep && state_.exchange(awake) == asleep)
      state_.notify_one();
  }

  /// The owner: sleeps until rung, unless `has_mail()` is true once the
  /// sleep is announced.
  template <class HasMail>
  void sleep_unless(HasMail has_mail) {
    state_.store(asleep);
    if (has_mail()) {
      state_.store(awake, std::memory_order_relaxed); // only the owner stores asleep
      return;
    }
    state_.wait(asleep);
  }

private:
  static constexpr std::uint32_t awake = 0;
  static constexpr std::uint32_t asleep = 1;
  /// Written by the owner (asleep, or awake when it did not sleep) and by a
  /// ringer (awake); read by both.
  std::atomic<std::uint32_t> state_{awake};
};

} // namespace actorgrad::detail
