#pragma once
/// @file queue_depth.h
/// How full each actor's mailbox and ready heap were over a recording,
/// derived from its messages and node slices.
/// Internal (tools/trace/detail/, not installed).

#include <cstdint>
#include <vector>

#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::trace::detail {

/// The lengths of one actor's queues from `t_ns` until the next sample.
struct DepthSample {
  std::int64_t t_ns = 0;
  /// Engine messages sent to the actor and not yet handled by it.
  std::int64_t mailbox = 0;
  /// Its ready nodes not yet started.
  std::int64_t ready = 0;
};

/// One actor's queues over the recording.
///
/// Note [Queue depth from the trace]
/// Every engine message is recorded when it is sent (it enters the
/// receiver's mailbox) and when the receiver takes it out, and every node
/// when it became ready (pushed onto its actor's heap) and when it started
/// (popped): so the two lengths at any time are counts of these events, with
/// nothing sampled at run time. They cover what the recorder sees: engine
/// messages (gradients, tasks, wake-ups), not CAF's system messages, and a
/// message never received (Message::to_actor unset) has no known receiver.
struct QueueDepth {
  std::size_t actor = 0; ///< index into Timeline::actors
  /// Each change of either length, in time order (equal times merged).
  std::vector<DepthSample> samples;
  std::int64_t max_mailbox = 0;
  std::int64_t max_ready = 0;
  /// Time-weighted over the recording's span.
  double mean_mailbox = 0;
  double mean_ready = 0;
  /// Messages it received, and the longest and total time one waited in
  /// its mailbox (sent to taken out).
  std::size_t received = 0;
  std::int64_t max_mailbox_wait_ns = 0;
  std::int64_t total_mailbox_wait_ns = 0;
  std::int64_t mean_mailbox_wait_ns() const {
    return received ? total_mailbox_wait_ns / static_cast<std::int64_t>(received) : 0;
  }
};

/// One entry per actor, in Timeline::actors order.
std::vector<QueueDepth> queue_depths(const Timeline& tl);

} // namespace actorgrad::trace::detail
