#include "actorgrad/tools/trace/summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

namespace actorgrad::trace {

namespace {

Percentiles percentiles(std::vector<std::int64_t> v) {
  Percentiles p;
  p.count = v.size();
  if (v.empty())
    return p;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) {
    auto r = static_cast<std::size_t>(q * static_cast<double>(v.size()) + 0.999999);
    return v[std::clamp<std::size_t>(r, 1, v.size()) - 1];
  };
  p.p50_ns = rank(0.50);
  p.p99_ns = rank(0.99);
  return p;
}

/// Time covered by the outermost slices of one actor (slices sorted by start).
std::int64_t busy_time(const std::vector<const Slice*>& slices) {
  std::int64_t busy = 0;
  std::int64_t covered_until = 0;
  bool any = false;
  for (const Slice* s : slices) {
    if (any && s->end_ns <= covered_until)
      continue; // nested in a slice already counted
    const std::int64_t from = any ? std::max(s->start_ns, covered_until) : s->start_ns;
    busy += s->end_ns - from;
    covered_until = s->end_ns;
    any = true;
  }
  return busy;
}

// Note [Critical path by last arrival]
// A node starts only once its last input has arrived, so the critical path
// runs back from the sink that finished last, each step to the producer
// whose gradient arrived last: at its receipt for a message, at the
// producer's end for an input passed on the same actor. Its length is the
// time from its first node's start to its last node's end, so it can never
// exceed the call's wall time. Summing the steps' durations and message
// latencies instead counted twice the time a message is in flight while
// its sender's span (which covers the sending) goes on: a 100-node chain
// over sim:2 showed 484 us of path in 326 us of wall.

/// The critical path of the slices `task_slices` of one task (sorted by start).
CriticalPath critical_path(const Timeline& tl, std::uint64_t task,
                           const std::vector<std::size_t>& task_slices) {
  struct In {
    std::size_t from;
    std::int64_t arrival_ns;
    std::int64_t latency_ns;
    bool message;
  };
  std::map<std::uint64_t, std::size_t> by_seq;
  for (std::size_t i : task_slices)
    by_seq.emplace(tl.slices[i].sequence_nr, i);
  std::map<std::size_t, std::vector<In>> in;
  for (std::size_t i : task_slices)
    for (std::uint64_t p : tl.slices[i].local_inputs)
      if (auto it = by_seq.find(p); it != by_seq.end())
        in[i].push_back({it->second, tl.slices[it->second].end_ns, 0, false});
  for (const Message& m : tl.messages) {
    if (m.graph_task != task || !m.producer || !m.received())
      continue;
    auto from = by_seq.find(*m.producer);
    auto to = by_seq.find(m.sequence_nr);
    if (from != by_seq.end() && to != by_seq.end())
      in[to->second].push_back({from->second, *m.recv_ns, m.latency_ns(), true});
  }

  // The path ends at the sink (a node feeding none of the task's nodes)
  // that finished last: an actor may record a producer's end only after the
  // sink it fed has finished.
  std::set<std::size_t> feeds;
  for (const auto& [to, edges] : in)
    for (const In& e : edges)
      feeds.insert(e.from);
  std::optional<std::size_t> last;
  for (std::size_t i : task_slices)
    if (!feeds.count(i) && (!last || tl.slices[i].end_ns > tl.slices[*last].end_ns))
      last = i;
  if (!last) // not a DAG as recorded (a snapshot taken mid-run): the last to finish
    for (std::size_t i : task_slices)
      if (!last || tl.slices[i].end_ns > tl.slices[*last].end_ns)
        last = i;

  CriticalPath path{task, {}, 0, 0};
  std::set<std::size_t> on_path;
  for (std::size_t at = *last; on_path.insert(at).second;) {
    const In* gate = nullptr;
    for (const In& e : in[at])
      if (!gate || e.arrival_ns > gate->arrival_ns)
        gate = &e;
    path.steps.push_back({at, gate ? gate->latency_ns : 0, gate && gate->message});
    if (!gate)
      break;
    at = gate->from;
  }
  std::reverse(path.steps.begin(), path.steps.end());
  path.length_ns = tl.slices[*last].end_ns - tl.slices[path.steps.front().slice].start_ns;
  std::int64_t first_start = tl.slices[task_slices.front()].start_ns, last_end = 0;
  for (std::size_t i : task_slices)
    last_end = std::max(last_end, tl.slices[i].end_ns);
  path.wall_ns = last_end - first_start;
  return path;
}

} // namespace

Summary summarize(const Timeline& tl) {
  Summary s;
  s.span_ns = tl.end_ns - tl.begin_ns;
  std::vector<std::vector<const Slice*>> per_actor(tl.actors.size());
  std::vector<std::vector<std::int64_t>> waits(tl.actors.size());
  std::vector<std::int64_t> all_waits;
  std::vector<std::uint64_t> task_order;
  std::map<std::uint64_t, std::vector<std::size_t>> task_slices;
  for (std::size_t i = 0; i < tl.slices.size(); ++i) {
    const Slice& sl = tl.slices[i];
    per_actor[sl.actor].push_back(&sl);
    if (auto w = sl.queue_wait_ns()) {
      waits[sl.actor].push_back(*w);
      all_waits.push_back(*w);
    }
    task_slices[sl.graph_task].push_back(i);
  }
  for (std::size_t a = 0; a < tl.actors.size(); ++a) {
    ActorStats st;
    st.actor = tl.actors[a];
    st.busy_ns = busy_time(per_actor[a]);
    st.busy_percent = s.span_ns > 0 ? 100.0 * double(st.busy_ns) / double(s.span_ns) : 0;
    st.tasks = per_actor[a].size();
    st.queue_wait = percentiles(waits[a]);
    s.actors.push_back(st);
  }
  s.queue_wait = percentiles(all_waits);

  std::map<std::tuple<std::size_t, std::size_t, MessageKind>, std::pair<std::size_t, std::int64_t>>
    edges;
  for (const Message& m : tl.messages) {
    ++s.actors[m.from_actor].messages_out;
    if (!m.to_actor) {
      ++s.unreceived;
      continue;
    }
    ++s.actors[*m.to_actor].messages_in;
    auto& [count, total] = edges[{m.from_actor, *m.to_actor, m.kind}];
    ++count;
    total += m.latency_ns();
  }
  for (const auto& [key, value] : edges) {
    const auto& [from, to, kind] = key;
    s.edges.push_back({from, to, kind, value.first,
                       value.second / static_cast<std::int64_t>(value.first)});
  }

  for (auto& [task, idx] : task_slices) {
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      return tl.slices[a].start_ns < tl.slices[b].start_ns;
    });
    s.critical_paths.push_back(critical_path(tl, task, idx));
  }
  s.ops = op_table(tl);
  s.queues = queue_depths(tl);
  std::sort(s.critical_paths.begin(), s.critical_paths.end(),
            [&](const CriticalPath& a, const CriticalPath& b) {
              return tl.slices[a.steps.front().slice].start_ns <
                     tl.slices[b.steps.front().slice].start_ns;
            });
  return s;
}

std::string format_duration(std::int64_t ns) {
  char buf[32];
  if (ns >= 1'000'000)
    std::snprintf(buf, sizeof buf, "%.3f ms", double(ns) / 1e6);
  else if (ns >= 1'000)
    std::snprintf(buf, sizeof buf, "%.1f us", double(ns) / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  return buf;
}

std::size_t rows_shown(std::size_t n, std::size_t top) { return top == 0 ? n : std::min(n, top); }

void note_rows_left_out(std::ostream& out, std::size_t n, std::size_t top, const char* what) {
  if (rows_shown(n, top) < n)
    out << "  ... " << n - rows_shown(n, top) << " more " << what
        << " not shown (--top N, --all)\n";
}

std::string format_summary(const Timeline& tl, const Summary& s, std::size_t top) {
  std::ostringstream out;
  char line[512];
  std::size_t nodes = tl.slices.size();
  out << "recording: " << format_duration(s.span_ns) << ", " << tl.actors.size() << " actors, "
      << nodes << " node executions, " << tl.messages.size() << " messages";
  if (s.unreceived)
    out << " (" << s.unreceived << " never received)";
  out << "\nqueue wait over all nodes: p50 " << format_duration(s.queue_wait.p50_ns) << ", p99 "
      << format_duration(s.queue_wait.p99_ns) << "\n\n";

  std::snprintf(line, sizeof line, "%-26s %7s %11s %7s %7s %7s %11s %11s\n", "actor", "busy %",
                "busy", "tasks", "msg in", "msg out", "wait p50", "wait p99");
  out << line;
  for (const ActorStats& a : s.actors) {
    std::snprintf(line, sizeof line, "%-26s %6.1f%% %11s %7zu %7zu %7zu %11s %11s\n",
                  a.actor.c_str(), a.busy_percent, format_duration(a.busy_ns).c_str(), a.tasks,
                  a.messages_in, a.messages_out, format_duration(a.queue_wait.p50_ns).c_str(),
                  format_duration(a.queue_wait.p99_ns).c_str());
    out << line;
  }

  if (!tl.actors.empty()) {
    out << "\nqueues (engine messages in the mailbox, ready nodes in the heap)\n";
    std::snprintf(line, sizeof line, "%-26s %8s %8s %11s %11s %8s %8s\n", "actor", "mbox max",
                  "mbox avg", "wait mean", "wait max", "heap max", "heap avg");
    out << line;
    for (const QueueDepth& q : s.queues) {
      std::snprintf(line, sizeof line, "%-26s %8lld %8.2f %11s %11s %8lld %8.2f\n",
                    tl.actors[q.actor].c_str(), static_cast<long long>(q.max_mailbox),
                    q.mean_mailbox, format_duration(q.mean_mailbox_wait_ns()).c_str(),
                    format_duration(q.max_mailbox_wait_ns).c_str(),
                    static_cast<long long>(q.max_ready), q.mean_ready);
      out << line;
    }
  }

  if (!s.ops.empty()) {
    out << "\noperations (by total time)\n";
    std::snprintf(line, sizeof line, "  %-32s %7s %11s %11s %11s %11s %11s %7s\n", "name", "calls",
                  "total", "self", "mean", "min", "max", "self %");
    out << line;
    for (std::size_t i = 0; i < rows_shown(s.ops.size(), top); ++i) {
      const OpStats& op = s.ops[i];
      std::snprintf(line, sizeof line, "  %-32s %7zu %11s %11s %11s %11s %11s %6.1f%%\n",
                    op.name.c_str(), op.calls, format_duration(op.total_ns).c_str(),
                    format_duration(op.self_ns).c_str(), format_duration(op.mean_ns()).c_str(),
                    format_duration(op.min_ns).c_str(), format_duration(op.max_ns).c_str(),
                    op.share_percent);
      out << line;
    }
    note_rows_left_out(out, s.ops.size(), top, "operations");
  }

  if (!s.edges.empty()) {
    out << "\nmessages (from -> to: kind, count, mean latency)\n";
    for (std::size_t i = 0; i < rows_shown(s.edges.size(), top); ++i) {
      const EdgeStats& e = s.edges[i];
      std::snprintf(line, sizeof line, "  %s -> %s: %s x%zu, %s\n",
                    tl.actors[e.from_actor].c_str(), tl.actors[e.to_actor].c_str(),
                    message_name(e.kind), e.count, format_duration(e.mean_latency_ns).c_str());
      out << line;
    }
    note_rows_left_out(out, s.edges.size(), top, "message edges");
  }

  for (const CriticalPath& p : s.critical_paths) {
    out << "\ncritical path of GraphTask " << p.graph_task << ": " << p.steps.size()
        << " nodes, " << format_duration(p.length_ns) << " from its first start to its end ("
        << format_duration(p.wall_ns) << " wall)\n";
    for (std::size_t i = 0; i < rows_shown(p.steps.size(), top); ++i) {
      const PathStep& step = p.steps[i];
      const Slice& sl = tl.slices[step.slice];
      if (step.via_message)
        out << "    | message " << format_duration(step.latency_ns) << "\n";
      std::snprintf(line, sizeof line, "  %-24s seq %-8llu %-22s %11s\n", sl.node.c_str(),
                    static_cast<unsigned long long>(sl.sequence_nr),
                    tl.actors[sl.actor].c_str(), format_duration(sl.duration_ns()).c_str());
      out << line;
    }
    note_rows_left_out(out, p.steps.size(), top, "nodes of this path");
  }
  return out.str();
}

} // namespace actorgrad::trace
