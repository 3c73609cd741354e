#include "actorgrad/tools/trace/detail/summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "actorgrad/tools/trace/detail/slice_inputs.h"

namespace actorgrad::trace::detail {

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
//
// On an asynchronous device the nodes only launch work; the device work of
// the call (Note [Stream tracks]) joins the graph: an item starts after its
// launch (inside its node's span), after the item before it on its stream,
// and a wait after the item it waits for. So the path may end on a stream
// and pass through kernels, and the call's wall time runs to the end of its
// last device work. Without that, the path of a chain on async sim was the
// launches' 0.66 ms against 3.6 ms of device work.

/// A node slice or a device span of the task.
struct Element {
  std::size_t index;
  bool on_device;
};

/// The critical path of the slices `task_slices` (sorted by start) and the
/// device spans `task_spans` of one task.
CriticalPath critical_path(const Timeline& tl, std::size_t process, std::uint64_t task,
                           const std::vector<std::size_t>& task_slices,
                           const std::vector<std::size_t>& task_spans) {
  struct In {
    Element from;
    std::int64_t arrival_ns;
    std::int64_t latency_ns;
    bool message;
  };
  auto end_of = [&](Element e) {
    return e.on_device ? tl.device_spans[e.index].end_ns : tl.slices[e.index].end_ns;
  };
  auto start_of = [&](Element e) {
    return e.on_device ? tl.device_spans[e.index].start_ns : tl.slices[e.index].start_ns;
  };
  std::map<std::uint64_t, std::size_t> by_seq;
  for (std::size_t i : task_slices)
    by_seq.emplace(tl.slices[i].sequence_nr, i);
  std::map<std::size_t, std::vector<In>> in, device_in;
  for (const auto& [to, inputs] : slice_inputs(tl, process, task, task_slices))
    for (const SliceInput& e : inputs)
      in[to].push_back({{e.from, false}, e.arrival_ns, e.latency_ns, e.message});
  std::map<std::pair<std::size_t, std::uint64_t>, std::size_t> at_point; // stream, point -> span
  for (std::size_t j : task_spans)
    at_point.emplace(std::pair{tl.device_spans[j].stream, tl.device_spans[j].point}, j);
  for (std::size_t j : task_spans) {
    const DeviceSpan& d = tl.device_spans[j];
    if (auto it = by_seq.find(d.sequence_nr); it != by_seq.end())
      device_in[j].push_back({{it->second, false}, d.launch_ns, 0, false});
    if (auto it = at_point.find({d.stream, d.point - 1}); it != at_point.end())
      device_in[j].push_back({{it->second, true}, tl.device_spans[it->second].end_ns, 0, false});
    if (d.waits_for)
      if (auto it = at_point.find({*d.waits_for, d.waits_for_point}); it != at_point.end())
        device_in[j].push_back({{it->second, true}, tl.device_spans[it->second].end_ns, 0, false});
  }

  // The path ends at the sink (a node feeding none of the task's nodes) or
  // the device work that finished last: an actor may record a producer's
  // end only after the sink it fed has finished.
  std::set<std::size_t> feeds;
  for (const auto& [to, edges] : in)
    for (const In& e : edges)
      feeds.insert(e.from.index);
  std::optional<Element> last;
  auto consider = [&](Element e) {
    if (!last || end_of(e) > end_of(*last))
      last = e;
  };
  for (std::size_t i : task_slices)
    if (!feeds.count(i))
      consider({i, false});
  for (std::size_t j : task_spans)
    consider({j, true});
  if (!last) // not a DAG as recorded (a snapshot taken mid-run): the last to finish
    for (std::size_t i : task_slices)
      consider({i, false});

  CriticalPath path{task, process, {}, 0, 0, 0};
  std::set<std::pair<std::size_t, bool>> on_path;
  for (Element at = *last; on_path.insert({at.index, at.on_device}).second;) {
    const In* gate = nullptr;
    for (const In& e : (at.on_device ? device_in : in)[at.index])
      if (!gate || e.arrival_ns > gate->arrival_ns)
        gate = &e;
    path.steps.push_back(
      {at.index, at.on_device, gate ? gate->latency_ns : 0, gate && gate->message});
    if (!gate)
      break;
    at = gate->from;
  }
  std::reverse(path.steps.begin(), path.steps.end());
  const PathStep& first = path.steps.front();
  path.length_ns = end_of(*last) - start_of({first.slice, first.on_device});
  std::int64_t first_start = tl.slices[task_slices.front()].start_ns, last_end = 0;
  for (std::size_t i : task_slices)
    last_end = std::max(last_end, tl.slices[i].end_ns);
  for (std::size_t j : task_spans)
    last_end = std::max(last_end, tl.device_spans[j].end_ns);
  path.wall_ns = last_end - first_start;
  path.start_ns = first_start;
  return path;
}

// Note [Cross-process critical path]
// A distributed backward (Note [Distributed backward] in
// actors/remote/detail/agent.cpp) is a tree of local passes joined by messages: a
// pass's gradients for other processes leave as RemoteGrads when it ends,
// each starts a pass on its receiver, and each receiver replies (RemoteAck)
// once its pass and every request that pass sent are answered; the
// caller's backward ends with the last reply to the requests of its own
// pass. So, as within a pass, the path runs back from what came last: the
// last reply the caller's pass got; from a reply, to what its sender waited
// for last: its own pass's end, or the last reply to a request that pass
// sent; from a pass, to the RemoteGrad that started it, and from that to
// the pass that sent it, up to the caller's pass, which no message started.
// Each pass on the path is one step, with its own critical path.

using TaskKey = std::pair<std::size_t, std::uint64_t>; // process, graph task

std::vector<ProcessPath> process_paths(const Timeline& tl, const std::vector<CriticalPath>& paths) {
  std::map<TaskKey, std::size_t> pass_of;
  for (std::size_t i = 0; i < paths.size(); ++i)
    pass_of[{paths[i].process, paths[i].graph_task}] = i;
  std::map<std::uint64_t, std::size_t> grad_of, ack_of; // by flow
  std::map<TaskKey, std::vector<std::size_t>> sent_by;  // the RemoteGrads a pass sent
  std::map<TaskKey, std::size_t> started_by;            // the RemoteGrad that started a pass
  for (std::size_t j = 0; j < tl.messages.size(); ++j) {
    const Message& m = tl.messages[j];
    if (m.flow == 0 || !m.received())
      continue;
    if (m.kind == MessageKind::remote_ack) {
      ack_of[m.flow] = j;
    } else if (m.kind == MessageKind::remote_grad) {
      grad_of[m.flow] = j;
      sent_by[{tl.process_of_actor(m.from_actor), m.graph_task}].push_back(j);
      started_by[{tl.process_of_actor(*m.to_actor), m.to_graph_task}] = j;
    }
  }
  auto last_reply = [&](const TaskKey& pass) -> std::optional<std::size_t> {
    std::optional<std::size_t> last;
    for (std::size_t g : sent_by[pass])
      if (auto a = ack_of.find(tl.messages[g].flow); a != ack_of.end())
        if (!last || *tl.messages[a->second].recv_ns > *tl.messages[*last].recv_ns)
          last = a->second;
    return last;
  };
  auto add_pass = [&](std::vector<ProcessStep>& steps, const TaskKey& pass) {
    if (auto it = pass_of.find(pass); it != pass_of.end())
      steps.push_back({false, it->second});
  };

  std::vector<ProcessPath> out;
  for (const auto& [root, grads] : sent_by) {
    if (started_by.count(root))
      continue;
    const std::optional<std::size_t> last = last_reply(root);
    if (!last)
      continue;
    std::vector<ProcessStep> rev; // from the end back
    std::size_t reply = *last;
    for (std::size_t guard = 0; guard <= tl.messages.size(); ++guard) {
      rev.push_back({true, reply});
      auto g = grad_of.find(tl.messages[reply].flow);
      if (g == grad_of.end())
        break;
      const Message& grad = tl.messages[g->second];
      const TaskKey pass{tl.process_of_actor(*grad.to_actor), grad.to_graph_task};
      std::int64_t pass_end = *grad.recv_ns;
      if (auto it = pass_of.find(pass); it != pass_of.end())
        pass_end = paths[it->second].start_ns + paths[it->second].wall_ns;
      if (auto nested = last_reply(pass); nested && *tl.messages[*nested].recv_ns > pass_end) {
        reply = *nested;
        continue;
      }
      add_pass(rev, pass);
      rev.push_back({true, g->second});
      TaskKey sender{tl.process_of_actor(grad.from_actor), grad.graph_task};
      for (std::size_t up = 0; up <= tl.messages.size(); ++up) {
        add_pass(rev, sender);
        auto in = started_by.find(sender);
        if (sender == root || in == started_by.end())
          break;
        rev.push_back({true, in->second});
        const Message& m = tl.messages[in->second];
        sender = {tl.process_of_actor(m.from_actor), m.graph_task};
      }
      break;
    }
    ProcessPath p;
    p.steps.assign(rev.rbegin(), rev.rend());
    auto root_pass = pass_of.find(root);
    p.start_ns = root_pass != pass_of.end() ? paths[root_pass->second].start_ns
                                            : tl.messages[grads.front()].send_ns;
    p.end_ns = *tl.messages[*last].recv_ns;
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(),
            [](const ProcessPath& a, const ProcessPath& b) { return a.start_ns < b.start_ns; });
  return out;
}

std::vector<StreamStats> stream_stats(const Timeline& tl, std::int64_t span_ns) {
  std::vector<StreamStats> out(tl.streams.size());
  for (std::size_t i = 0; i < tl.streams.size(); ++i)
    out[i].stream = tl.streams[i];
  for (const DeviceSpan& d : tl.device_spans) {
    StreamStats& st = out[d.stream];
    if (d.kind == DeviceWork::wait) {
      ++st.waits;
      st.wait_ns += d.duration_ns();
    } else if (d.kind != DeviceWork::record) {
      ++st.kernels; // a stream runs one item at a time: the spans do not overlap
      st.busy_ns += d.duration_ns();
    }
  }
  for (StreamStats& st : out)
    st.busy_percent = span_ns > 0 ? 100.0 * double(st.busy_ns) / double(span_ns) : 0;
  return out;
}

} // namespace

Summary summarize(const Timeline& tl) {
  Summary s;
  s.span_ns = tl.end_ns - tl.begin_ns;
  std::vector<std::vector<const Slice*>> per_actor(tl.actors.size());
  std::vector<std::vector<std::int64_t>> waits(tl.actors.size());
  std::vector<std::int64_t> all_waits;
  using TaskKey = std::pair<std::size_t, std::uint64_t>; // process, graph task
  std::map<TaskKey, std::vector<std::size_t>> task_slices;
  for (std::size_t i = 0; i < tl.slices.size(); ++i) {
    const Slice& sl = tl.slices[i];
    per_actor[sl.actor].push_back(&sl);
    if (auto w = sl.queue_wait_ns()) {
      waits[sl.actor].push_back(*w);
      all_waits.push_back(*w);
    }
    task_slices[{tl.process_of_actor(sl.actor), sl.graph_task}].push_back(i);
  }
  for (std::size_t a = 0; a < tl.actors.size(); ++a) {
    ActorStats st;
    st.actor = tl.actor_label(a);
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
    s.edges.push_back(
      {from, to, kind, value.first, value.second / static_cast<std::int64_t>(value.first)});
  }

  std::map<TaskKey, std::vector<std::size_t>> task_spans;
  for (std::size_t j = 0; j < tl.device_spans.size(); ++j)
    if (const DeviceSpan& d = tl.device_spans[j];
        d.kind != DeviceWork::record) // an instant: gates nothing
      task_spans[{tl.process_of_actor(d.launcher), d.graph_task}].push_back(j);
  for (auto& [key, idx] : task_slices) {
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      return tl.slices[a].start_ns < tl.slices[b].start_ns;
    });
    s.critical_paths.push_back(critical_path(tl, key.first, key.second, idx, task_spans[key]));
  }
  s.streams = stream_stats(tl, s.span_ns);
  s.ops = op_table(tl);
  s.queues = queue_depths(tl);
  std::sort(s.critical_paths.begin(), s.critical_paths.end(),
            [&](const CriticalPath& a, const CriticalPath& b) { return a.start_ns < b.start_ns; });
  for (const CriticalPath& p : s.critical_paths)
    s.parallelism.push_back(
      pass_parallelism(tl, p.process, p.graph_task, task_slices[{p.process, p.graph_task}]));
  s.process_paths = process_paths(tl, s.critical_paths);
  return s;
}

std::string describe_step(const Timeline& tl, const Summary& s, const ProcessStep& step) {
  if (step.message) {
    const Message& m = tl.messages[step.index];
    return std::string(message_name(m.kind)) + " " +
           tl.process_name(tl.process_of_actor(m.from_actor)) + " -> " +
           tl.process_name(tl.process_of_actor(*m.to_actor)) + ": " +
           format_duration(m.latency_ns()) + " in flight";
  }
  const CriticalPath& p = s.critical_paths[step.index];
  return "pass " + task_name(tl, p) + ": " + format_duration(p.wall_ns) + ", its critical path " +
         std::to_string(p.steps.size()) + " nodes";
}

std::string describe_parallelism(const Timeline& tl, const CriticalPath& p,
                                 const PassParallelism& par) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line,
                "parallelism of %s: %.2fx (node time %s in %s wall); longest chain of dependent "
                "nodes %s over %zu nodes: at most %.2fx with any number of workers\n",
                task_name(tl, p).c_str(), par.parallelism, format_duration(par.node_ns).c_str(),
                format_duration(par.wall_ns).c_str(), format_duration(par.critical_ns).c_str(),
                par.critical_chain.size(), par.max_parallelism);
  out << line;
  for (const PassTrack& t : par.tracks) {
    std::snprintf(line, sizeof line, "  %-26s busy %5.1f%% %11s %7zu nodes\n",
                  tl.actor_label(t.actor).c_str(), t.busy_percent,
                  format_duration(t.busy_ns).c_str(), t.nodes);
    out << line;
  }
  return out.str();
}

std::string task_name(const Timeline& tl, const CriticalPath& p) {
  std::string name = "GraphTask " + std::to_string(p.graph_task);
  if (tl.processes.size() > 1)
    name += " on " + tl.process_name(p.process);
  return name;
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

  if (!s.streams.empty()) {
    out << "\nstreams (device work of the recorded nodes)\n";
    std::snprintf(line, sizeof line, "%-26s %7s %11s %8s %7s %11s\n", "stream", "busy %", "busy",
                  "kernels", "waits", "waiting");
    out << line;
    for (const StreamStats& st : s.streams) {
      std::snprintf(line, sizeof line, "%-26s %6.1f%% %11s %8zu %7zu %11s\n", st.stream.c_str(),
                    st.busy_percent, format_duration(st.busy_ns).c_str(), st.kernels, st.waits,
                    format_duration(st.wait_ns).c_str());
      out << line;
    }
  }

  if (!tl.actors.empty()) {
    out << "\nqueues (engine messages in the mailbox, ready nodes in the heap)\n";
    std::snprintf(line, sizeof line, "%-26s %8s %8s %11s %11s %8s %8s\n", "actor", "mbox max",
                  "mbox avg", "wait mean", "wait max", "heap max", "heap avg");
    out << line;
    for (const QueueDepth& q : s.queues) {
      std::snprintf(line, sizeof line, "%-26s %8lld %8.2f %11s %11s %8lld %8.2f\n",
                    tl.actor_label(q.actor).c_str(), static_cast<long long>(q.max_mailbox),
                    q.mean_mailbox, format_duration(q.mean_mailbox_wait_ns()).c_str(),
                    format_duration(q.max_mailbox_wait_ns).c_str(),
                    static_cast<long long>(q.max_ready), q.mean_ready);
      out << line;
    }
  }

  if (!s.ops.empty()) {
    out << "\noperations (by total time)\n";
    std::snprintf(line, sizeof line, "  %-32s %7s %11s %11s %11s %11s %11s %7s %11s\n", "name",
                  "calls", "total", "self", "mean", "min", "max", "self %", "device");
    out << line;
    for (std::size_t i = 0; i < rows_shown(s.ops.size(), top); ++i) {
      const OpStats& op = s.ops[i];
      std::snprintf(line, sizeof line, "  %-32s %7zu %11s %11s %11s %11s %11s %6.1f%% %11s\n",
                    op.name.c_str(), op.calls, format_duration(op.total_ns).c_str(),
                    format_duration(op.self_ns).c_str(), format_duration(op.mean_ns()).c_str(),
                    format_duration(op.min_ns).c_str(), format_duration(op.max_ns).c_str(),
                    op.share_percent, format_duration(op.device_ns).c_str());
      out << line;
    }
    note_rows_left_out(out, s.ops.size(), top, "operations");
  }

  if (!s.edges.empty()) {
    out << "\nmessages (from -> to: kind, count, mean latency)\n";
    for (std::size_t i = 0; i < rows_shown(s.edges.size(), top); ++i) {
      const EdgeStats& e = s.edges[i];
      std::snprintf(line, sizeof line, "  %s -> %s: %s x%zu, %s\n",
                    tl.actor_label(e.from_actor).c_str(), tl.actor_label(e.to_actor).c_str(),
                    message_name(e.kind), e.count, format_duration(e.mean_latency_ns).c_str());
      out << line;
    }
    note_rows_left_out(out, s.edges.size(), top, "message edges");
  }

  for (const ProcessPath& p : s.process_paths) {
    out << "\ncross-process critical path: " << format_duration(p.end_ns - p.start_ns)
        << " from the caller's pass to the last reply, " << p.steps.size() << " steps\n";
    for (const ProcessStep& step : p.steps)
      out << "  " << describe_step(tl, s, step) << "\n";
  }

  for (std::size_t k = 0; k < s.critical_paths.size(); ++k) {
    const CriticalPath& p = s.critical_paths[k];
    out << "\n" << describe_parallelism(tl, p, s.parallelism[k]);
    out << "critical path of " << task_name(tl, p) << ": " << p.steps.size() << " steps, "
        << format_duration(p.length_ns) << " from its first start to its end ("
        << format_duration(p.wall_ns) << " wall)\n";
    for (std::size_t i = 0; i < rows_shown(p.steps.size(), top); ++i) {
      const PathStep& step = p.steps[i];
      if (step.via_message)
        out << "    | message " << format_duration(step.latency_ns) << "\n";
      if (step.on_device) {
        const DeviceSpan& d = tl.device_spans[step.slice];
        std::snprintf(line, sizeof line, "  %-24s %-6s of seq %-8llu %-15s %11s\n", d.op.c_str(),
                      device_work_name(d.kind), static_cast<unsigned long long>(d.sequence_nr),
                      tl.streams[d.stream].c_str(), format_duration(d.duration_ns()).c_str());
      } else {
        const Slice& sl = tl.slices[step.slice];
        std::snprintf(line, sizeof line, "  %-24s seq %-8llu %-22s %11s\n", sl.node.c_str(),
                      static_cast<unsigned long long>(sl.sequence_nr),
                      tl.actor_label(sl.actor).c_str(), format_duration(sl.duration_ns()).c_str());
      }
      out << line;
    }
    note_rows_left_out(out, p.steps.size(), top, "steps of this path");
  }
  return out.str();
}

} // namespace actorgrad::trace::detail
