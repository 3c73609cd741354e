#include "actorgrad/tools/trace/detail/chrome_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <ostream>
#include <stdexcept>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include "actorgrad/tools/trace/detail/queue_depth.h"

namespace actorgrad::trace::detail {

namespace {

constexpr std::int64_t kMarkerNs = 1000;

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

/// Microseconds with three decimals (exact nanoseconds).
std::string micros(std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%lld.%03lld", ns < 0 ? "-" : "",
                static_cast<long long>(std::llabs(ns) / 1000),
                static_cast<long long>(std::llabs(ns) % 1000));
  return buf;
}

std::int64_t to_ns(double micros) { return std::llround(micros * 1000.0); }

/// The Chrome pid of track `track` (an actor's, or after them a stream's):
/// its process's index + 1.
std::size_t pid_of(const Timeline& tl, std::size_t track) {
  return 1 + (track < tl.actors.size() ? tl.process_of_actor(track)
                                       : tl.process_of_stream(track - tl.actors.size()));
}

/// `"pid":P,"tid":T` of track `track` (tid: the track's index + 1, unique
/// in the file).
std::string at(const Timeline& tl, std::size_t track) {
  return "\"pid\":" + std::to_string(pid_of(tl, track)) + ",\"tid\":" + std::to_string(track + 1);
}

/// The args describing a message (on its `s` event or unreceived send marker).
std::string message_args(const Timeline& tl, const Message& m) {
  std::string a =
    "\"graph_task\":" + std::to_string(m.graph_task) + ",\"node\":" + quoted(m.node) +
    ",\"sequence_nr\":" + std::to_string(m.sequence_nr) +
    ",\"input_nr\":" + std::to_string(m.input_nr) + ",\"depth\":" + std::to_string(m.depth) +
    ",\"device\":" + quoted(m.device.str()) + ",\"actor\":" + quoted(tl.actors[m.from_actor]);
  if (m.producer)
    a += ",\"producer_sequence_nr\":" + std::to_string(*m.producer);
  if (m.flow != 0) // a 64-bit id: a string, which JSON numbers cannot hold exactly
    a += ",\"flow\":\"" + std::to_string(m.flow) +
         "\",\"to_graph_task\":" + std::to_string(m.to_graph_task);
  return a;
}

/// One output line, kept with its track and time so tracks come out sorted.
struct Line {
  std::size_t actor;
  std::int64_t ts;
  int order; ///< slices before the flow ends they enclose
  std::string json;
};

/// Adds marker slices for the message ends of `actor` that no node slice encloses.
void add_markers(const Timeline& tl, std::size_t actor, std::vector<std::int64_t> ends,
                 std::vector<Line>& lines) {
  std::vector<const Slice*> slices;
  std::vector<std::int64_t> boundaries; // where a marker must end at the latest
  for (const Slice& s : tl.slices)
    if (s.actor == actor) {
      slices.push_back(&s);
      boundaries.push_back(s.start_ns);
    }
  auto inside = [&](std::int64_t ts) {
    return std::any_of(slices.begin(), slices.end(),
                       [&](const Slice* s) { return s->start_ns <= ts && ts <= s->end_ns; });
  };
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  ends.erase(std::remove_if(ends.begin(), ends.end(), inside), ends.end());
  boundaries.insert(boundaries.end(), ends.begin(), ends.end());
  std::sort(boundaries.begin(), boundaries.end());
  for (std::int64_t ts : ends) {
    auto next = std::upper_bound(boundaries.begin(), boundaries.end(), ts);
    const std::int64_t dur = next == boundaries.end() ? kMarkerNs : std::min(kMarkerNs, *next - ts);
    lines.push_back({actor, ts, 0,
                     "{\"ph\":\"X\",\"cat\":\"message\",\"name\":\"message\"," + at(tl, actor) +
                       ",\"ts\":" + micros(ts) + ",\"dur\":" + micros(dur) +
                       ",\"args\":{\"actor\":" + quoted(tl.actors[actor]) + "}}"});
  }
}

/// A marker slice per end of a message between processes whose other end
/// is not in this timeline (cat "remote": flow, side, peer, graph_task).
void add_remote_ends(const Timeline& tl, std::vector<Line>& lines) {
  for (const RemoteEnd& r : tl.remote_ends)
    lines.push_back(
      {r.actor, r.ts_ns, 0,
       "{\"ph\":\"X\",\"cat\":\"remote\",\"name\":" + quoted(message_name(r.kind)) + "," +
         at(tl, r.actor) + ",\"ts\":" + micros(r.ts_ns) + ",\"dur\":0.001,\"args\":{\"flow\":\"" +
         std::to_string(r.flow) + "\",\"side\":\"" + (r.sent ? "send" : "receive") +
         "\",\"peer\":" + quoted(r.peer) + ",\"graph_task\":" + std::to_string(r.graph_task) +
         ",\"actor\":" + quoted(tl.actors[r.actor]) + "}}"});
}

/// The track (tid - 1) of stream `i`: after the actors'.
std::size_t stream_track(const Timeline& tl, std::size_t i) { return tl.actors.size() + i; }

/// A slice per device span on its stream's track, and a flow from its
/// launch (inside the launching node's slice) to its start.
void add_device_spans(const Timeline& tl, std::vector<Line>& lines) {
  for (const DeviceSpan& d : tl.device_spans) {
    const std::size_t track = stream_track(tl, d.stream);
    std::string args =
      "\"kind\":" + quoted(device_work_name(d.kind)) + ",\"point\":" + std::to_string(d.point) +
      ",\"launch_us\":" + micros(d.launch_ns) +
      ",\"launched_by\":" + quoted(tl.actors[d.launcher]) +
      ",\"graph_task\":" + std::to_string(d.graph_task) + ",\"node\":" + quoted(d.node) +
      ",\"sequence_nr\":" + std::to_string(d.sequence_nr) + ",\"id\":" + std::to_string(d.id) +
      ",\"stream\":" + quoted(tl.streams[d.stream]);
    if (d.waits_for)
      args += ",\"waits_for\":" + quoted(tl.streams[*d.waits_for]) +
              ",\"waits_for_point\":" + std::to_string(d.waits_for_point);
    lines.push_back({track, d.start_ns, 0,
                     "{\"ph\":\"X\",\"cat\":\"device\",\"name\":" + quoted(d.op) + "," +
                       at(tl, track) + ",\"ts\":" + micros(d.start_ns) +
                       ",\"dur\":" + micros(d.duration_ns()) + ",\"args\":{" + args + "}}"});
    if (d.kind == DeviceWork::record)
      continue; // an instant: nothing for an arrow to bind to
    const std::string common = ",\"cat\":\"launch\",\"name\":" + quoted(d.op) +
                               ",\"id\":" + std::to_string(d.id) + ",\"bp\":\"e\",";
    lines.push_back(
      {d.launcher, d.launch_ns, 1,
       "{\"ph\":\"s\"" + common + at(tl, d.launcher) + ",\"ts\":" + micros(d.launch_ns) + "}"});
    lines.push_back(
      {track, d.start_ns, 1,
       "{\"ph\":\"f\"" + common + at(tl, track) + ",\"ts\":" + micros(d.start_ns) + "}"});
  }
}

/// Tracks by process (Chrome pid) and name: names repeat across processes.
using TrackNames = std::map<std::pair<int, std::string>, std::size_t>;

/// Looks `name` of process `pid` up in `names`, or throws naming what it is.
std::size_t index_of(const TrackNames& names, int pid, const std::string& name, const char* what) {
  auto it = names.find({pid, name});
  if (it == names.end())
    throw std::runtime_error("device span names an unknown " + std::string(what) + " " + name);
  return it->second;
}

/// A device span as add_device_spans wrote it.
DeviceSpan read_device_span(const boost::property_tree::ptree& e,
                            const std::map<int, std::size_t>& stream_of_tid,
                            const TrackNames& actor_named, const TrackNames& stream_named) {
  const int pid = e.get<int>("pid");
  const auto& a = e.get_child("args");
  DeviceSpan d;
  auto stream = stream_of_tid.find(e.get<int>("tid"));
  if (stream == stream_of_tid.end())
    throw std::runtime_error("device span on a track that is not a stream's");
  d.stream = stream->second;
  d.kind = parse_device_work(a.get<std::string>("kind").c_str());
  d.op = e.get<std::string>("name");
  d.point = a.get<std::uint64_t>("point");
  d.start_ns = to_ns(e.get<double>("ts"));
  d.end_ns = d.start_ns + to_ns(e.get<double>("dur"));
  d.launcher = index_of(actor_named, pid, a.get<std::string>("launched_by"), "actor");
  d.launch_ns = to_ns(a.get<double>("launch_us"));
  d.graph_task = a.get<std::uint64_t>("graph_task");
  d.node = a.get<std::string>("node");
  d.sequence_nr = a.get<std::uint64_t>("sequence_nr");
  d.id = a.get<std::uint64_t>("id");
  if (auto w = a.get_optional<std::string>("waits_for")) {
    d.waits_for = index_of(stream_named, pid, *w, "stream");
    d.waits_for_point = a.get<std::uint64_t>("waits_for_point");
  }
  return d;
}

} // namespace

void write_chrome_json(const Timeline& tl, std::ostream& out) {
  std::vector<Line> lines;
  std::vector<std::vector<std::int64_t>> ends(tl.actors.size());
  for (const Slice& s : tl.slices) {
    std::string args =
      "\"graph_task\":" + std::to_string(s.graph_task) +
      ",\"sequence_nr\":" + std::to_string(s.sequence_nr) +
      ",\"depth\":" + std::to_string(s.depth) + ",\"device\":" + quoted(s.device.str()) +
      ",\"stream\":" + quoted(s.stream == 0 ? "default" : "stream " + std::to_string(s.stream)) +
      ",\"stream_id\":" + std::to_string(s.stream) + ",\"actor\":" + quoted(tl.actors[s.actor]);
    if (s.ready_ns)
      args +=
        ",\"ready_us\":" + micros(*s.ready_ns) + ",\"queue_wait_us\":" + micros(*s.queue_wait_ns());
    args += ",\"local_inputs\":[";
    for (std::size_t i = 0; i < s.local_inputs.size(); ++i)
      args += (i ? "," : "") + std::to_string(s.local_inputs[i]);
    args += "]";
    lines.push_back({s.actor, s.start_ns, 0,
                     "{\"ph\":\"X\",\"cat\":\"node\",\"name\":" + quoted(s.node) + "," +
                       at(tl, s.actor) + ",\"ts\":" + micros(s.start_ns) +
                       ",\"dur\":" + micros(s.duration_ns()) + ",\"args\":{" + args + "}}"});
  }
  for (const Message& m : tl.messages) {
    const std::string name = quoted(message_name(m.kind));
    if (!m.received()) {
      lines.push_back({m.from_actor, m.send_ns, 0,
                       "{\"ph\":\"X\",\"cat\":\"message\",\"name\":" + name + "," +
                         at(tl, m.from_actor) + ",\"ts\":" + micros(m.send_ns) +
                         ",\"dur\":0.001,\"args\":{" + message_args(tl, m) +
                         ",\"message_id\":" + std::to_string(m.id) + ",\"unreceived\":true}}"});
      continue;
    }
    const std::string common = ",\"cat\":\"message\",\"name\":" + name +
                               ",\"id\":" + std::to_string(m.id) + ",\"bp\":\"e\",";
    lines.push_back({m.from_actor, m.send_ns, 1,
                     "{\"ph\":\"s\"" + common + at(tl, m.from_actor) + ",\"ts\":" +
                       micros(m.send_ns) + ",\"args\":{" + message_args(tl, m) + "}}"});
    lines.push_back({*m.to_actor, *m.recv_ns, 1,
                     "{\"ph\":\"f\"" + common + at(tl, *m.to_actor) +
                       ",\"ts\":" + micros(*m.recv_ns) +
                       ",\"args\":{\"actor\":" + quoted(tl.actors[*m.to_actor]) + "}}"});
    ends[m.from_actor].push_back(m.send_ns);
    ends[*m.to_actor].push_back(*m.recv_ns);
  }
  for (std::size_t a = 0; a < tl.actors.size(); ++a)
    add_markers(tl, a, std::move(ends[a]), lines);
  add_remote_ends(tl, lines);
  add_device_spans(tl, lines);
  // A counter track per actor with its mailbox and ready-heap lengths (see
  // Note [Queue depth from the trace]); derived, so not read back.
  for (const QueueDepth& q : queue_depths(tl))
    for (const DepthSample& d : q.samples)
      lines.push_back({q.actor, d.t_ns, 2,
                       "{\"ph\":\"C\",\"name\":" + quoted(tl.actors[q.actor] + " queues") + "," +
                         at(tl, q.actor) + ",\"ts\":" + micros(d.t_ns) +
                         ",\"args\":{\"mailbox\":" + std::to_string(d.mailbox) +
                         ",\"ready\":" + std::to_string(d.ready) + "}}"});
  std::stable_sort(lines.begin(), lines.end(), [](const Line& x, const Line& y) {
    if (x.actor != y.actor)
      return x.actor < y.actor;
    return x.ts != y.ts ? x.ts < y.ts : x.order < y.order;
  });

  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"actorgrad\"},"
         "\"traceEvents\":[\n";
  std::vector<Process> processes = tl.processes;
  if (processes.empty())
    processes.push_back({"actorgrad", 0, 0, 0});
  for (std::size_t p = 0; p < processes.size(); ++p) {
    const Process& pr = processes[p];
    out << (p ? ",\n" : "") << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << p + 1
        << ",\"tid\":0,\"args\":{\"name\":" << quoted(pr.name) << ",\"os_pid\":" << pr.pid
        << ",\"epoch_unix_ns\":" << pr.epoch_unix_ns << ",\"shift_ns\":" << pr.shift_ns << "}}";
    out << ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << p + 1
        << ",\"tid\":0,\"args\":{\"sort_index\":" << p + 1 << "}}";
  }
  for (std::size_t a = 0; a < tl.actors.size(); ++a) {
    out << ",\n{\"ph\":\"M\",\"name\":\"thread_name\"," << at(tl, a)
        << ",\"args\":{\"name\":" << quoted(tl.actors[a]) << "}}";
    out << ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\"," << at(tl, a)
        << ",\"args\":{\"sort_index\":" << a + 1 << "}}";
  }
  for (std::size_t i = 0; i < tl.streams.size(); ++i) {
    const std::size_t track = stream_track(tl, i);
    out << ",\n{\"ph\":\"M\",\"name\":\"thread_name\"," << at(tl, track)
        << ",\"args\":{\"name\":" << quoted(tl.streams[i]) << ",\"stream\":true}}";
    out << ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\"," << at(tl, track)
        << ",\"args\":{\"sort_index\":" << track + 1 << "}}";
  }
  for (const Line& l : lines)
    out << ",\n" << l.json;
  out << "\n]}\n";
}

Timeline read_chrome_json(const std::string& path) {
  namespace pt = boost::property_tree;
  pt::ptree root;
  try {
    if (path == "-")
      pt::read_json(std::cin, root);
    else
      pt::read_json(path, root);
  } catch (const pt::json_parser_error& e) {
    throw std::runtime_error("cannot read trace " + path + ": " + e.what());
  }
  auto events = root.get_child_optional("traceEvents");
  if (!events)
    throw std::runtime_error(path + " is not a Chrome trace (no traceEvents)");

  Timeline tl;
  std::map<int, std::size_t> actor_of_tid;
  std::map<int, std::size_t> stream_of_tid;
  TrackNames actor_named, stream_named;
  std::map<std::uint64_t, Message> messages;
  auto actor = [&](const pt::ptree& e) {
    const int tid = e.get<int>("tid");
    auto it = actor_of_tid.find(tid);
    if (it == actor_of_tid.end())
      throw std::runtime_error(path + ": event on tid " + std::to_string(tid) +
                               " before its thread_name");
    return it->second;
  };
  auto read_message = [&](const pt::ptree& e, Message& m) {
    const pt::ptree& a = e.get_child("args");
    m.kind = parse_message_name(e.get<std::string>("name"));
    m.graph_task = a.get<std::uint64_t>("graph_task");
    m.node = a.get<std::string>("node");
    m.sequence_nr = a.get<std::uint64_t>("sequence_nr");
    m.input_nr = a.get<std::uint32_t>("input_nr");
    m.depth = a.get<int>("depth");
    m.device = Device::parse(a.get<std::string>("device"));
    m.from_actor = actor(e);
    m.send_ns = to_ns(e.get<double>("ts"));
    if (auto p = a.get_optional<std::uint64_t>("producer_sequence_nr"))
      m.producer = *p;
    if (auto f = a.get_optional<std::uint64_t>("flow")) {
      m.flow = *f;
      m.to_graph_task = a.get<std::uint64_t>("to_graph_task");
    }
  };
  std::map<int, std::size_t> process_of_pid;
  auto process = [&](const pt::ptree& e) {
    const int pid = e.get<int>("pid");
    auto [it, added] = process_of_pid.emplace(pid, tl.processes.size());
    if (added)
      tl.processes.push_back({"pid " + std::to_string(pid), 0, 0, 0});
    return it->second;
  };
  try {
    for (const auto& [key, e] : *events) {
      const std::string ph = e.get<std::string>("ph");
      const std::string cat = e.get<std::string>("cat", "");
      if (ph == "M" && e.get<std::string>("name") == "process_name") {
        Process& p = tl.processes[process(e)];
        p.name = e.get<std::string>("args.name");
        p.pid = e.get<std::int64_t>("args.os_pid", 0);
        p.epoch_unix_ns = e.get<std::int64_t>("args.epoch_unix_ns", 0);
        p.shift_ns = e.get<std::int64_t>("args.shift_ns", 0);
      } else if (ph == "M" && e.get<std::string>("name") == "thread_name") {
        const std::string name = e.get<std::string>("args.name");
        if (e.get<bool>("args.stream", false)) {
          stream_of_tid[e.get<int>("tid")] = stream_named[{e.get<int>("pid"), name}] =
            tl.streams.size();
          tl.streams.push_back(name);
          tl.stream_process.push_back(process(e));
        } else {
          actor_of_tid[e.get<int>("tid")] = actor_named[{e.get<int>("pid"), name}] =
            tl.actors.size();
          tl.actors.push_back(name);
          tl.actor_process.push_back(process(e));
        }
      } else if (ph == "X" && cat == "device") {
        tl.device_spans.push_back(read_device_span(e, stream_of_tid, actor_named, stream_named));
      } else if (ph == "X" && cat == "node") {
        const pt::ptree& a = e.get_child("args");
        Slice s;
        s.actor = actor(e);
        s.graph_task = a.get<std::uint64_t>("graph_task");
        s.node = e.get<std::string>("name");
        s.sequence_nr = a.get<std::uint64_t>("sequence_nr");
        s.depth = a.get<int>("depth");
        s.device = Device::parse(a.get<std::string>("device"));
        s.stream = a.get<int>("stream_id");
        s.start_ns = to_ns(e.get<double>("ts"));
        s.end_ns = s.start_ns + to_ns(e.get<double>("dur"));
        if (auto r = a.get_optional<double>("ready_us"))
          s.ready_ns = to_ns(*r);
        for (const auto& [k, v] : a.get_child("local_inputs"))
          s.local_inputs.push_back(v.get_value<std::uint64_t>());
        tl.slices.push_back(std::move(s));
      } else if (ph == "X" && cat == "remote") {
        const pt::ptree& a = e.get_child("args");
        tl.remote_ends.push_back(
          {parse_message_name(e.get<std::string>("name")), a.get<std::string>("side") == "send",
           a.get<std::uint64_t>("flow"), a.get<std::uint64_t>("graph_task"),
           a.get<std::string>("peer"), actor(e), to_ns(e.get<double>("ts"))});
      } else if (ph == "X" && cat == "message" && e.get<bool>("args.unreceived", false)) {
        Message& m = messages[e.get<std::uint64_t>("args.message_id")];
        m.id = e.get<std::uint64_t>("args.message_id");
        read_message(e, m);
      } else if (ph == "s" && cat == "message") {
        Message& m = messages[e.get<std::uint64_t>("id")];
        m.id = e.get<std::uint64_t>("id");
        read_message(e, m);
      } else if (ph == "f" && cat == "message") {
        Message& m = messages[e.get<std::uint64_t>("id")];
        m.to_actor = actor(e);
        m.recv_ns = to_ns(e.get<double>("ts"));
      }
    }
  } catch (const pt::ptree_error& e) {
    throw std::runtime_error(path + " is not an actorgrad trace: " + e.what());
  }
  for (auto& [id, m] : messages)
    tl.messages.push_back(std::move(m));
  tl.normalize();
  return tl;
}

} // namespace actorgrad::trace::detail
