#include "actorgrad/tools/trace/detail/clock_offsets.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <utility>

namespace actorgrad::trace::detail {

namespace {

std::int64_t median(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// What the messages between processes a < b say about theta = b's clock
/// minus a's.
struct PairEvidence {
  /// NTP estimates, one per request with its reply.
  std::vector<std::int64_t> estimates;
  /// theta <= upper (from a -> b), theta >= lower (from b -> a).
  std::optional<std::int64_t> upper, lower;
};

std::int64_t theta_of(const PairEvidence& p) {
  std::int64_t theta = p.estimates.empty() ? 0 : median(p.estimates);
  if (p.lower && p.upper && *p.lower > *p.upper) // drift or a broken clock: split the difference
    return (*p.lower + *p.upper) / 2;
  if (p.upper)
    theta = std::min(theta, *p.upper);
  if (p.lower)
    theta = std::max(theta, *p.lower);
  return theta;
}

} // namespace

std::vector<std::int64_t> estimate_clock_offsets(std::size_t processes,
                                                 const std::vector<ClockSample>& samples) {
  std::map<std::pair<std::size_t, std::size_t>, PairEvidence> pairs;
  std::map<std::uint64_t, std::vector<const ClockSample*>> by_flow;
  for (const ClockSample& m : samples) {
    if (m.from == m.to || m.from >= processes || m.to >= processes)
      continue;
    const bool forward = m.from < m.to;
    PairEvidence& p = pairs[std::minmax(m.from, m.to)];
    const std::int64_t d = m.recv_ns - m.send_ns; // delay + theta (forward) or delay - theta
    if (forward)
      p.upper = p.upper ? std::min(*p.upper, d) : d;
    else
      p.lower = p.lower ? std::max(*p.lower, -d) : -d;
    if (m.flow != 0)
      by_flow[m.flow].push_back(&m);
  }
  for (const auto& [flow, ms] : by_flow) {
    if (ms.size() != 2 || ms[0]->from != ms[1]->to || ms[0]->to != ms[1]->from)
      continue;
    const ClockSample* ab = ms[0]->from < ms[0]->to ? ms[0] : ms[1];
    const ClockSample* ba = ab == ms[0] ? ms[1] : ms[0];
    pairs[{ab->from, ab->to}].estimates.push_back(
      ((ab->recv_ns - ab->send_ns) - (ba->recv_ns - ba->send_ns)) / 2);
  }

  std::vector<std::int64_t> offsets(processes, 0);
  std::vector<bool> known(processes, false);
  for (std::size_t start = 0; start < processes; ++start) {
    if (known[start])
      continue;
    // Offset 0: process 0, or the first of a group that exchanged nothing with it.
    known[start] = true;
    std::deque<std::size_t> todo{start};
    while (!todo.empty()) {
      const std::size_t a = todo.front();
      todo.pop_front();
      for (const auto& [key, evidence] : pairs) {
        const auto [lo, hi] = key;
        if ((lo != a && hi != a) || known[lo == a ? hi : lo])
          continue;
        const std::size_t b = lo == a ? hi : lo;
        const std::int64_t theta = theta_of(evidence); // hi's clock minus lo's
        offsets[b] = offsets[a] + (lo == a ? theta : -theta);
        known[b] = true;
        todo.push_back(b);
      }
    }
  }
  return offsets;
}

} // namespace actorgrad::trace::detail
