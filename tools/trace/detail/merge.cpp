#include "actorgrad/tools/trace/detail/merge.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "actorgrad/tools/trace/detail/clock_offsets.h"

namespace actorgrad::trace::detail {

namespace {

/// Where a part's processes, actors and streams start in the merge, and
/// how far its clock's zero is from the earliest part's.
struct Placement {
  std::size_t process = 0;
  std::size_t actor = 0;
  std::size_t stream = 0;
  std::int64_t wall_shift_ns = 0;
};

/// The earliest wall-clock start of `tl`'s processes (its clock's zero; 0
/// when none is known).
std::int64_t zero_of(const Timeline& tl) {
  std::int64_t zero = std::numeric_limits<std::int64_t>::max();
  for (const Process& p : tl.processes)
    if (p.epoch_unix_ns != 0)
      zero = std::min(zero, p.epoch_unix_ns - p.shift_ns);
  return zero == std::numeric_limits<std::int64_t>::max() ? 0 : zero;
}

/// A remote end of the merge: its process and its time on the lined-up clock.
struct End {
  const RemoteEnd* end;
  std::size_t actor;
  std::size_t process;
  std::int64_t ts_ns;
};

} // namespace

Timeline merge_timelines(const std::vector<Timeline>& parts) {
  Timeline out;
  std::vector<Placement> place;
  std::int64_t base = std::numeric_limits<std::int64_t>::max();
  for (const Timeline& tl : parts)
    if (const std::int64_t zero = zero_of(tl); zero != 0)
      base = std::min(base, zero);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Timeline& tl = parts[i];
    const std::int64_t zero = zero_of(tl);
    place.push_back(
      {out.processes.size(), out.actors.size(), out.streams.size(), zero != 0 ? zero - base : 0});
    if (tl.processes.empty())
      out.processes.push_back({"recording " + std::to_string(i + 1), 0, 0, 0});
    out.processes.insert(out.processes.end(), tl.processes.begin(), tl.processes.end());
    for (std::size_t a = 0; a < tl.actors.size(); ++a) {
      out.actors.push_back(tl.actors[a]);
      out.actor_process.push_back(place[i].process + tl.process_of_actor(a));
    }
    for (std::size_t s = 0; s < tl.streams.size(); ++s) {
      out.streams.push_back(tl.streams[s]);
      out.stream_process.push_back(place[i].process + tl.process_of_stream(s));
    }
  }

  // Pair the ends of the messages between processes by kind and flow.
  std::map<std::tuple<MessageKind, std::uint64_t, bool>, std::vector<End>> ends;
  for (std::size_t i = 0; i < parts.size(); ++i)
    for (const RemoteEnd& r : parts[i].remote_ends) {
      const std::size_t actor = place[i].actor + r.actor;
      ends[{r.kind, r.flow, r.sent}].push_back(
        {&r, actor, out.actor_process[actor], r.ts_ns + place[i].wall_shift_ns});
    }
  struct Pair {
    End send, receive;
  };
  std::vector<Pair> pairs;
  std::vector<End> unpaired;
  for (auto& [key, side] : ends) {
    const auto& [kind, flow, sent] = key;
    auto other = ends.find({kind, flow, !sent});
    const bool one_each = side.size() == 1 && other != ends.end() && other->second.size() == 1 &&
                          other->second.front().process != side.front().process;
    if (!one_each) {
      unpaired.insert(unpaired.end(), side.begin(), side.end());
    } else if (sent) {
      pairs.push_back({side.front(), other->second.front()});
    }
  }
  std::vector<ClockSample> samples;
  for (const Pair& p : pairs)
    samples.push_back(
      {p.send.process, p.receive.process, p.send.ts_ns, p.receive.ts_ns, p.send.end->flow});
  const std::vector<std::int64_t> offsets = estimate_clock_offsets(out.processes.size(), samples);

  // Every timestamp of process p moves by its part's wall shift less its offset.
  std::vector<std::int64_t> shift(out.processes.size());
  for (std::size_t i = 0; i < parts.size(); ++i)
    for (std::size_t p = place[i].process;
         p < (i + 1 < parts.size() ? place[i + 1].process : out.processes.size()); ++p) {
      shift[p] = place[i].wall_shift_ns - offsets[p];
      out.processes[p].shift_ns += shift[p];
    }
  std::uint64_t next_id = 1;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Timeline& tl = parts[i];
    const Placement& at = place[i];
    for (Slice s : tl.slices) {
      s.actor += at.actor;
      const std::int64_t d = shift[out.actor_process[s.actor]];
      s.start_ns += d;
      s.end_ns += d;
      if (s.ready_ns)
        *s.ready_ns += d;
      out.slices.push_back(std::move(s));
    }
    for (Message m : tl.messages) {
      m.id = next_id++;
      m.from_actor += at.actor;
      const std::int64_t d = shift[out.actor_process[m.from_actor]];
      m.send_ns += d;
      if (m.to_actor) {
        *m.to_actor += at.actor;
        *m.recv_ns += shift[out.actor_process[*m.to_actor]];
      }
      out.messages.push_back(std::move(m));
    }
    for (DeviceSpan ds : tl.device_spans) {
      ds.id = next_id++;
      ds.stream += at.stream;
      ds.launcher += at.actor;
      if (ds.waits_for)
        *ds.waits_for += at.stream;
      const std::int64_t d = shift[out.stream_process[ds.stream]];
      ds.start_ns += d;
      ds.end_ns += d;
      ds.launch_ns += shift[out.actor_process[ds.launcher]];
      out.device_spans.push_back(std::move(ds));
    }
  }
  for (const Pair& p : pairs) {
    Message m;
    m.id = next_id++;
    m.kind = p.send.end->kind;
    m.graph_task = p.send.end->graph_task;
    m.from_actor = p.send.actor;
    m.send_ns = p.send.end->ts_ns + shift[p.send.process];
    m.to_actor = p.receive.actor;
    m.recv_ns = p.receive.end->ts_ns + shift[p.receive.process];
    m.flow = p.send.end->flow;
    m.to_graph_task = p.receive.end->graph_task;
    out.messages.push_back(std::move(m));
  }
  for (const End& e : unpaired) {
    RemoteEnd r = *e.end;
    r.actor = e.actor;
    r.ts_ns += shift[e.process];
    out.remote_ends.push_back(std::move(r));
  }
  out.normalize();
  return out;
}

} // namespace actorgrad::trace::detail
