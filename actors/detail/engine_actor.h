#pragma once
/// @file engine_actor.h
/// The CAF blocking actor every engine thread of its own is: one that
/// sleeps on a doorbell, not on CAF's mutex and condition variable. Internal.

#include <caf/blocking_actor.hpp>

#include "actorgrad/actors/detail/doorbell.h"

namespace actorgrad::detail {

/// A caf::blocking_actor (a thread of its own, receiving with `dequeue` and
/// `receive` as any blocking actor does) whose wait for mail is a Doorbell.
///
/// Note [Waking an actor without a lock]
/// A CAF 0.17 blocking actor that finds its mailbox empty marks it blocked
/// and waits on a condition variable under a mutex; every message that
/// then arrives takes that mutex to notify it. Device workers and pool
/// actors run out of work after nearly every node of a cross-device graph,
/// so the mutex and the condition variable were a fifth of a device hop
/// (about 340 of its 1,700 instructions: bench/HISTORY.md, "Device hop").
/// Here `await_data`, which `dequeue` and `receive` call when the mailbox
/// is empty, sleeps on a Doorbell instead and never marks the mailbox
/// blocked, so CAF's push stays a lone compare-exchange, and `enqueue`
/// rings the doorbell after it (Note [Doorbell]). A timed wait (a `receive`
/// with a timeout) still takes CAF's own path, which stays correct: a
/// blocked mailbox is notified by CAF's push itself. A ring needs the actor
/// alive, which it is: CAF's senders call `enqueue` through a strong
/// reference, which the sender must hold until `enqueue` returns, not
/// reach through the message it sends.
class EngineActor : public caf::blocking_actor {
public:
  explicit EngineActor(caf::actor_config& cfg) : caf::blocking_actor(cfg) {}

  /// CAF's push, then the doorbell.
  void enqueue(caf::mailbox_element_ptr ptr, caf::execution_unit* host) override;

  using caf::blocking_actor::await_data;
  /// Returns once the mailbox holds a message.
  void await_data() override {
    await_mail_or([] { return false; });
  }

  /// The owner: returns once the mailbox holds a message or `stop()` is
  /// true, checked before each sleep; wake() makes it check again (Note
  /// [Wake-up without a message] in actors/detail/runner.cpp).
  template <class Stop>
  void await_mail_or(Stop stop) {
    while (mailbox().empty() && !stop())
      doorbell_.sleep_unless([&] { return !mailbox().empty() || stop(); });
  }

  /// Any thread that holds a strong reference to this actor, after it made
  /// the owner's `stop()` true: wakes the owner if it sleeps.
  void wake() noexcept { doorbell_.ring(); }

  /// How much a CPU lane of a spread call wants work (Note [Parallel CPU
  /// nodes] in cpu_lanes.h): it runs its last ready task (hungry), or waits
  /// for mail with nothing to run (waiting).
  enum class Want : std::uint8_t { none, hungry, waiting };
  /// The owner, as its want of work changes (Runner::dispatch_until,
  /// Runner::await_message).
  void set_idle(Want level) noexcept { idle_.store(level, std::memory_order_relaxed); }
  /// Whether this actor wants work now (a glance: claim_idle decides).
  bool wants_work() const noexcept { return idle_.load(std::memory_order_relaxed) != Want::none; }
  /// Another CPU lane of a spread call: when this actor wants work at
  /// `least` or more, takes it to want none (so that two lanes do not both
  /// hand it work) and returns true.
  bool claim_idle(Want least) noexcept {
    Want level = idle_.load(std::memory_order_relaxed);
    return level != Want::none && level >= least &&
           idle_.compare_exchange_strong(level, Want::none, std::memory_order_relaxed);
  }

private:
  Doorbell doorbell_;
  /// Written by the owner (set_idle) and by a lane that claims it
  /// (claim_idle); read by the lanes of spread calls. A hint only: work
  /// handed over is a message, which the mailbox orders.
  std::atomic<Want> idle_{Want::none};
};

} // namespace actorgrad::detail
