#pragma once
/// @file race_detector_state.h
/// The detector's vector clocks. Internal to the sim backend.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "actorgrad/device/sim/race_detector.h"

namespace actorgrad::sim::detail {

/// Note [Vector clocks for stream races]
/// Every timeline (the host is slot 0, each sim stream one more slot) has a
/// vector clock: entry j is how many ops of timeline j are known to come
/// before this timeline's next op. An op enqueued on stream S first takes in
/// the host's clock (the host enqueued it, so whatever the host knew, S now
/// follows), then advances S's own entry; an event records a copy of its
/// stream's clock; waiting on it joins that copy into the waiting stream's
/// clock; a host synchronize joins the stream's (or event's) clock into the
/// host's. A buffer remembers (writer slot, writer's entry after the write)
/// and, for each timeline that read it since, (reader slot, its entry after
/// the read). An access from timeline T is ordered after that write iff T is
/// the writer or clock(T)[writer] >= point; a write must be ordered so after
/// each of those reads too (a stream overwriting what another has yet to
/// read); otherwise it is a race. Every sim buffer a kernel touches is
/// checked, the source of a copy from another sim device included. All of
/// this happens when work is enqueued, in program order, so a report does
/// not depend on the random delays: the delays only decide whether the race
/// would also have corrupted the data.
///
/// The host is one timeline for all threads: a host thread that synchronizes
/// a stream makes the result known to every host thread. Threads hand data
/// to each other through messages that the detector cannot see, and that
/// ordering is real, so per-thread host clocks would report false races.
class RaceDetectorState {
public:
  using Clock = std::vector<std::uint64_t>;

  std::mutex& mutex() { return mutex_; }

  /// A new timeline slot named `name`. Locked.
  int add_timeline(std::string name);
  /// An op of `slot` touching `accesses`: checks them and advances. Locked.
  void on_launch(int slot, const char* op, const std::vector<Access>& accesses);
  /// A host access. Locked.
  void on_host_access(const Access& access, const char* op);
  Clock clock_of(int slot) const { return clocks_.at(slot); }
  /// Timeline `slot` now follows everything `c` knows. Locked.
  void join(int slot, const Clock& c);

  std::vector<std::string> reports() const { return reports_; }
  void clear_reports() { reports_.clear(); }

private:
  void check(int slot, const Access& a, const char* op);
  void advance(int slot);

  std::mutex mutex_;
  std::vector<Clock> clocks_{Clock(1, 0)};
  std::vector<std::string> names_{"the host"};
  std::vector<std::string> reports_;
};

/// The process-wide detector.
RaceDetectorState& race_detector();

} // namespace actorgrad::sim::detail
