#include "actorgrad/tools/trace/detail/queue_depth.h"

#include <algorithm>
#include <tuple>

namespace actorgrad::trace::detail {

namespace {

/// A change of one queue's length at a time.
struct Change {
  std::int64_t t_ns;
  int mailbox;
  int ready;
};

} // namespace

std::vector<QueueDepth> queue_depths(const Timeline& tl) {
  std::vector<QueueDepth> depths(tl.actors.size());
  std::vector<std::vector<Change>> changes(tl.actors.size());
  for (const Message& m : tl.messages) {
    if (!m.received())
      continue;
    QueueDepth& d = depths[*m.to_actor];
    changes[*m.to_actor].push_back({m.send_ns, +1, 0});
    changes[*m.to_actor].push_back({*m.recv_ns, -1, 0});
    ++d.received;
    d.total_mailbox_wait_ns += m.latency_ns();
    d.max_mailbox_wait_ns = std::max(d.max_mailbox_wait_ns, m.latency_ns());
  }
  for (const Slice& s : tl.slices)
    if (s.ready_ns) {
      changes[s.actor].push_back({*s.ready_ns, 0, +1});
      changes[s.actor].push_back({s.start_ns, 0, -1});
    }

  const double span = static_cast<double>(std::max<std::int64_t>(1, tl.end_ns - tl.begin_ns));
  for (std::size_t a = 0; a < depths.size(); ++a) {
    QueueDepth& d = depths[a];
    d.actor = a;
    auto& c = changes[a];
    // At one time, arrivals first: a message taken out the instant it was
    // sent was still in the mailbox for that instant.
    std::sort(c.begin(), c.end(), [](const Change& x, const Change& y) {
      return std::tuple(x.t_ns, -(x.mailbox + x.ready)) <
             std::tuple(y.t_ns, -(y.mailbox + y.ready));
    });
    DepthSample now{tl.begin_ns, 0, 0};
    double mailbox_area = 0, ready_area = 0;
    for (const Change& ch : c) {
      mailbox_area += double(now.mailbox) * double(ch.t_ns - now.t_ns);
      ready_area += double(now.ready) * double(ch.t_ns - now.t_ns);
      now.t_ns = ch.t_ns;
      now.mailbox += ch.mailbox;
      now.ready += ch.ready;
      d.max_mailbox = std::max(d.max_mailbox, now.mailbox);
      d.max_ready = std::max(d.max_ready, now.ready);
      if (!d.samples.empty() && d.samples.back().t_ns == now.t_ns)
        d.samples.back() = now;
      else
        d.samples.push_back(now);
    }
    d.mean_mailbox = mailbox_area / span;
    d.mean_ready = ready_area / span;
  }
  return depths;
}

} // namespace actorgrad::trace::detail
