#pragma once
/// @file clock_offsets.h
/// The clock offsets between processes, estimated from the messages they
/// sent each other (for merge.h).
/// Internal (tools/trace/detail/, not installed).
///
/// Note [Clock offsets from message pairs]
/// Each process stamps its events with its own clock. A merge first lines
/// the recordings up by the wall clock at which each started
/// (Trace::epoch_unix_ns), which is right on one host and off by the hosts'
/// clock difference (NTP: often milliseconds) between hosts. What is left is
/// estimated from the messages, as NTP does. Say process b's clock reads
/// theta more than a's. A message a -> b sent at s1 (a's clock) and received
/// at r1 (b's) took r1 - s1 - theta; its reply b -> a, s2 and r2, took
/// r2 - s2 + theta. If both took as long, theta = ((r1 - s1) - (r2 - s2)) / 2;
/// each request and its reply (a RemoteGrad and its RemoteAck) give one such
/// estimate, and the median of them is taken (robust to a few slow ones).
/// Causality bounds theta whatever the delays: no message is received before
/// it was sent, so theta <= r - s of every a -> b message and theta >= s - r
/// of every b -> a one. With messages one way only there is no estimate,
/// only a bound: theta stays 0 (the wall clocks are trusted) unless the
/// bound rules that out, then it is the bound's nearest value. An estimate
/// outside the bounds (a slow reply) is moved inside them. Pairs of
/// processes with messages form a graph; each process's offset from the
/// first (processes[0]) is the sum along a breadth-first path to it; a
/// group of processes that exchanged nothing with it is lined up with its
/// own first process, which keeps its wall-clock alignment (offset 0).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace actorgrad::trace::detail {

/// One message between two processes, its times each on its own process's
/// clock (after the wall-clock alignment).
struct ClockSample {
  std::size_t from = 0;
  std::size_t to = 0;
  std::int64_t send_ns = 0;
  std::int64_t recv_ns = 0;
  /// Pairs a request with its reply (the same flow id, the reply going the
  /// other way); 0: unpaired.
  std::uint64_t flow = 0;
};

/// Each process's clock offset from process 0's (Note [Clock offsets from
/// message pairs]): process p's clock reads offsets[p] more, so p's time t
/// is t - offsets[p] on process 0's clock. `processes` entries.
std::vector<std::int64_t> estimate_clock_offsets(std::size_t processes,
                                                 const std::vector<ClockSample>& samples);

} // namespace actorgrad::trace::detail
