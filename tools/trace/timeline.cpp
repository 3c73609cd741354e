#include "actorgrad/tools/trace/timeline.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

namespace actorgrad::trace {

namespace {

using NodeKey = std::pair<std::uint64_t, std::uint64_t>; // graph task, sequence_nr

/// The events of every track, merged per actor name, in time order.
std::vector<Track> merge_tracks(const Trace& trace) {
  std::vector<Track> merged;
  for (const Track& t : trace.tracks) {
    auto it = std::find_if(merged.begin(), merged.end(),
                           [&](const Track& m) { return m.actor == t.actor; });
    if (it == merged.end()) {
      merged.push_back(t);
      continue;
    }
    it->events.insert(it->events.end(), t.events.begin(), t.events.end());
    std::stable_sort(it->events.begin(), it->events.end(),
                     [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; });
  }
  std::stable_sort(merged.begin(), merged.end(), [](const Track& a, const Track& b) {
    auto first = [](const Track& t) { return t.events.empty() ? 0 : t.events.front().ts_ns; };
    return first(a) < first(b);
  });
  return merged;
}

/// The end of a message between processes that `e` recorded on `actor`.
RemoteEnd remote_end(const Event& e, std::size_t actor) {
  return {e.message, e.kind == EventKind::send, e.message_id, e.graph_task, e.node, actor, e.ts_ns};
}

/// The device spans of the launches that ran, and the records (Note [Stream tracks]).
template <class StreamNamed>
void add_device_spans(Timeline& tl,
                      const std::map<std::uint64_t, std::pair<std::size_t, Event>>& launches,
                      const std::map<std::uint64_t, std::pair<std::size_t, Event>>& runs,
                      StreamNamed&& stream_named) {
  auto span_of = [&](std::uint64_t id, std::size_t actor, const Event& l) {
    DeviceSpan d;
    d.kind = l.work;
    d.op = l.op;
    d.launcher = actor;
    d.launch_ns = l.ts_ns;
    d.graph_task = l.graph_task;
    d.node = l.node;
    d.sequence_nr = l.sequence_nr;
    d.id = id;
    return d;
  };
  std::map<std::pair<std::size_t, std::uint64_t>, std::int64_t> end_of; // stream, point -> end
  for (const auto& [id, launch] : launches) {
    auto run = runs.find(id);
    if (run == runs.end())
      continue;
    const Event& r = run->second.second;
    DeviceSpan d = span_of(id, launch.first, launch.second);
    d.stream = run->second.first;
    d.point = r.point;
    d.start_ns = r.ts_ns;
    d.end_ns = r.end_ns;
    if (d.kind == DeviceWork::wait) {
      d.waits_for = stream_named(launch.second.source.str());
      d.waits_for_point = launch.second.point;
    }
    end_of[{d.stream, d.point}] = d.end_ns;
    tl.device_spans.push_back(std::move(d));
  }
  for (const auto& [id, launch] : launches) {
    const Event& l = launch.second;
    if (l.work != DeviceWork::record)
      continue;
    DeviceSpan d = span_of(id, launch.first, l);
    d.stream = stream_named(l.source.str());
    d.point = l.point;
    d.start_ns = l.ts_ns;
    if (auto it = end_of.find({d.stream, d.point}); it != end_of.end())
      d.start_ns = std::max(d.start_ns, it->second);
    d.end_ns = d.start_ns;
    tl.device_spans.push_back(std::move(d));
  }
}

} // namespace

void Timeline::normalize() {
  std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    if (a.actor != b.actor)
      return a.actor < b.actor;
    if (a.start_ns != b.start_ns)
      return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;
  });
  std::stable_sort(messages.begin(), messages.end(),
                   [](const Message& a, const Message& b) { return a.send_ns < b.send_ns; });
  std::stable_sort(remote_ends.begin(), remote_ends.end(),
                   [](const RemoteEnd& a, const RemoteEnd& b) { return a.ts_ns < b.ts_ns; });
  std::stable_sort(device_spans.begin(), device_spans.end(),
                   [](const DeviceSpan& a, const DeviceSpan& b) {
                     return a.stream != b.stream ? a.stream < b.stream : a.start_ns < b.start_ns;
                   });
  bool any = false;
  auto see = [&](std::int64_t ts) {
    begin_ns = any ? std::min(begin_ns, ts) : ts;
    end_ns = any ? std::max(end_ns, ts) : ts;
    any = true;
  };
  for (const Slice& s : slices) {
    see(s.ready_ns.value_or(s.start_ns));
    see(s.end_ns);
  }
  for (const Message& m : messages) {
    see(m.send_ns);
    if (m.recv_ns)
      see(*m.recv_ns);
  }
  for (const DeviceSpan& d : device_spans) {
    see(d.launch_ns);
    see(d.end_ns);
  }
  for (const RemoteEnd& r : remote_ends)
    see(r.ts_ns);
}

Timeline build_timeline(const Trace& trace) {
  Timeline tl;
  tl.processes.push_back({"pid " + std::to_string(trace.pid), trace.pid, trace.epoch_unix_ns, 0});
  // Note [Nodes that share a sequence number]
  // Ready times and inputs are keyed by (graph task, sequence_nr), which
  // libtorch does not make unique: every AccumulateGrad has UINT64_MAX. So
  // the ready times of a key go to its slices in order (the earliest
  // unclaimed one at or before each start, in start order), and each input
  // fed to a key goes to its first slice that starts at or after the feed,
  // whichever actor fed it and whichever runs the slice (a CPU worker may
  // feed a node that another worker then runs; taking the inputs at the
  // node_start while walking its actor's track lost those fed on a track
  // walked later). Keeping only the last ready time gave AccumulateGrads
  // ready times after their starts.
  std::map<NodeKey, std::vector<std::int64_t>> ready;
  struct Fed {
    NodeKey key;
    std::uint64_t producer;
    std::int64_t ts_ns;
  };
  std::vector<Fed> feds;
  std::map<std::uint64_t, Message> messages;
  std::map<std::uint64_t, std::pair<std::size_t, std::int64_t>> receipts; // id -> actor, ts
  std::map<std::uint64_t, std::pair<std::size_t, Event>> launches;        // id -> actor, launch
  std::map<std::uint64_t, std::pair<std::size_t, Event>> runs;            // id -> stream, run
  std::map<std::string, std::size_t> stream_index;
  auto stream_named = [&](const std::string& name) {
    auto [it, added] = stream_index.emplace(name, tl.streams.size());
    if (added)
      tl.streams.push_back(name);
    return it->second;
  };

  for (const Track& track : merge_tracks(trace)) {
    if (!track.events.empty() && track.events.front().kind == EventKind::device_run) {
      const std::size_t stream = stream_named(track.actor);
      for (const Event& e : track.events)
        runs.emplace(e.message_id, std::pair{stream, e});
      continue;
    }
    const std::size_t actor = tl.actors.size();
    tl.actors.push_back(track.actor);
    std::vector<std::size_t> open; // slices running on this actor, innermost last
    auto running_node = [&](std::uint64_t task) -> std::optional<std::uint64_t> {
      if (open.empty() || tl.slices[open.back()].graph_task != task)
        return std::nullopt;
      return tl.slices[open.back()].sequence_nr;
    };
    for (const Event& e : track.events) {
      switch (e.kind) {
      case EventKind::node_start: {
        tl.slices.push_back({actor,
                             e.graph_task,
                             e.node,
                             e.sequence_nr,
                             e.depth,
                             e.device,
                             e.stream,
                             e.ts_ns,
                             e.ts_ns,
                             std::nullopt,
                             {}});
        open.push_back(tl.slices.size() - 1);
        break;
      }
      case EventKind::node_end:
        if (open.empty() || tl.slices[open.back()].sequence_nr != e.sequence_nr)
          throw std::runtime_error("trace of " + track.actor + ": node_end of " + e.node +
                                   " without its node_start");
        tl.slices[open.back()].end_ns = e.ts_ns;
        open.pop_back();
        break;
      case EventKind::ready: ready[{e.graph_task, e.sequence_nr}].push_back(e.ts_ns); break;
      case EventKind::input:
        if (auto producer = running_node(e.graph_task))
          feds.push_back({{e.graph_task, e.sequence_nr}, *producer, e.ts_ns});
        break;
      case EventKind::send:
        if (crosses_processes(e.message))
          tl.remote_ends.push_back(remote_end(e, actor));
        else
          messages[e.message_id] = {e.message_id,
                                    e.message,
                                    e.graph_task,
                                    e.node,
                                    e.sequence_nr,
                                    e.input_nr,
                                    e.depth,
                                    e.device,
                                    actor,
                                    e.ts_ns,
                                    running_node(e.graph_task),
                                    std::nullopt,
                                    std::nullopt,
                                    0,
                                    0};
        break;
      case EventKind::receive:
        if (crosses_processes(e.message))
          tl.remote_ends.push_back(remote_end(e, actor));
        else
          receipts[e.message_id] = {actor, e.ts_ns};
        break;
      case EventKind::launch: launches.emplace(e.message_id, std::pair{actor, e}); break;
      case EventKind::device_run: // only on stream tracks
        break;
      }
    }
    // A slice still open was snapshotted while its node ran: it ends at the snapshot.
    for (std::size_t i : open)
      tl.slices[i].end_ns = track.events.back().ts_ns;
  }

  std::map<NodeKey, std::vector<std::size_t>> starts;
  for (std::size_t i = 0; i < tl.slices.size(); ++i)
    starts[{tl.slices[i].graph_task, tl.slices[i].sequence_nr}].push_back(i);
  for (auto& [key, slices] : starts) {
    std::sort(slices.begin(), slices.end(), [&](std::size_t a, std::size_t b) {
      return tl.slices[a].start_ns < tl.slices[b].start_ns;
    });
    auto it = ready.find(key);
    if (it == ready.end())
      continue;
    std::vector<std::int64_t>& times = it->second;
    std::sort(times.begin(), times.end());
    std::size_t next = 0;
    for (std::size_t i : slices)
      if (next < times.size() && times[next] <= tl.slices[i].start_ns)
        tl.slices[i].ready_ns = times[next++];
  }
  std::stable_sort(feds.begin(), feds.end(),
                   [](const Fed& a, const Fed& b) { return a.ts_ns < b.ts_ns; });
  for (const Fed& f : feds) {
    auto it = starts.find(f.key);
    if (it == starts.end())
      continue; // its node had not started when the snapshot was taken
    for (std::size_t i : it->second)
      if (tl.slices[i].start_ns >= f.ts_ns) {
        tl.slices[i].local_inputs.push_back(f.producer);
        break;
      }
  }
  for (auto& [id, m] : messages) {
    if (auto it = receipts.find(id); it != receipts.end()) {
      m.to_actor = it->second.first;
      m.recv_ns = it->second.second;
    }
    tl.messages.push_back(std::move(m));
  }
  add_device_spans(tl, launches, runs, stream_named);
  tl.normalize();
  return tl;
}

} // namespace actorgrad::trace
