#include "actorgrad/device/sim/race_detector_state.h"

#include <algorithm>

namespace actorgrad::sim {

namespace detail {

RaceDetectorState& race_detector() {
  // Leaked on purpose: stream threads may still report during static destruction.
  static auto* state = new RaceDetectorState;
  return *state;
}

int RaceDetectorState::add_timeline(std::string name) {
  names_.push_back(std::move(name));
  for (Clock& c : clocks_)
    c.resize(names_.size(), 0);
  clocks_.emplace_back(names_.size(), 0);
  return static_cast<int>(names_.size()) - 1;
}

void RaceDetectorState::join(int slot, const Clock& c) {
  Clock& mine = clocks_.at(slot);
  for (std::size_t j = 0; j < c.size(); ++j)
    mine[j] = std::max(mine[j], c[j]);
}

void RaceDetectorState::advance(int slot) { ++clocks_[slot][slot]; }

void RaceDetectorState::check(int slot, const Access& a, const char* op) {
  BufferState& b = *a.buffer;
  const auto unordered = [&](const AccessPoint& earlier) {
    return earlier.slot >= 0 && earlier.slot != slot && clocks_[slot][earlier.slot] < earlier.point;
  };
  const auto report = [&](const AccessPoint& earlier, bool earlier_wrote) {
    auto who = [this](int s, const std::string& what) {
      return s == 0 ? std::string("the host") : what + " on " + names_[s];
    };
    reports_.push_back(
      "race on " + a.what + ": " + who(slot, op) + (a.write ? " writes" : " reads") + " it, but " +
      who(earlier.slot, earlier.op) + (earlier_wrote ? " wrote" : " read") +
      " it and nothing orders " + (slot == 0 ? "the host" : names_[slot]) + " after that " +
      (earlier_wrote ? "write" : "read") + " (no event wait or synchronize)");
  };
  if (unordered(b.write))
    report(b.write, true);
  const AccessPoint now{slot, clocks_[slot][slot], op};
  if (!a.write) {
    for (AccessPoint& r : b.reads)
      if (r.slot == slot) {
        r = now;
        return;
      }
    b.reads.push_back(now);
    return;
  }
  // A write must also follow the reads since the last write: a kernel that
  // overwrites what another stream has yet to read (say, an in-place add) is
  // a race as well.
  for (const AccessPoint& r : b.reads)
    if (unordered(r)) {
      report(r, false);
      break;
    }
  b.write = now;
  b.reads.clear();
}

void RaceDetectorState::on_launch(int slot, const char* op, const std::vector<Access>& accesses) {
  join(slot, clocks_[0]);
  advance(slot);
  for (const Access& a : accesses)
    check(slot, a, op);
}

void RaceDetectorState::on_host_access(const Access& access, const char* op) {
  advance(0);
  check(0, access, op);
}

} // namespace detail

std::vector<std::string> race_reports() {
  auto& d = detail::race_detector();
  std::lock_guard lock(d.mutex());
  return d.reports();
}

void clear_race_reports() {
  auto& d = detail::race_detector();
  std::lock_guard lock(d.mutex());
  d.clear_reports();
}

} // namespace actorgrad::sim
