#include "actorgrad/tools/trace/detail/html_report.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <set>
#include <string>

namespace actorgrad::trace::detail {

namespace {

constexpr double kWidth = 1360;     // of the SVG
constexpr double kLabelWidth = 190; // lane names on the left
constexpr double kRightMargin = 20;
constexpr double kAxisHeight = 34;
constexpr double kLaneHeight = 30;
constexpr double kLaneGap = 8;

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

/// The recording's time axis, shared by the timeline and the queue lanes:
/// the plot area right of the lane names, the recording's span across it.
struct TimeAxis {
  explicit TimeAxis(const Timeline& tl)
    : begin_ns(tl.begin_ns),
      span(std::max<double>(1.0, static_cast<double>(tl.end_ns - tl.begin_ns))) {}
  /// The SVG x of time `ts`.
  double x(std::int64_t ts) const {
    return kLabelWidth + plot * static_cast<double>(ts - begin_ns) / span;
  }
  static constexpr double plot = kWidth - kLabelWidth - kRightMargin;
  std::int64_t begin_ns;
  double span;
};

/// A table cell sorted by `key` (table.sortable), showing `text`.
template <class K>
void sorted_cell(std::ostream& out, const K& key, const std::string& text) {
  out << "<td data-v=\"" << key << "\">" << escape(text) << "</td>";
}

/// A duration cell, sorted by its nanoseconds.
void duration_cell(std::ostream& out, std::int64_t ns) {
  sorted_cell(out, ns, format_duration(ns));
}

/// A fill colour per device, stable across reports.
std::string device_colour(Device d) {
  static constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1",
                                             "#edc948", "#76b7b2", "#ff9da7", "#9c755f"};
  const std::size_t i = d.is_cpu() ? 0 : 1 + static_cast<std::size_t>(d.index) % 7;
  return kPalette[i];
}

const char* kStyle = R"(
body { font-family: sans-serif; margin: 16px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px 0; }
h2 { font-size: 16px; margin: 18px 0 6px 0; }
p.meta { margin: 0 0 10px 0; color: #555; font-size: 13px; }
svg { border: 1px solid #ccc; background: #fafafa; }
.lane-bg { fill: #eef1f5; }
.lane-label { font-size: 12px; fill: #222; }
.axis line { stroke: #bbb; stroke-width: 1; }
.axis text { font-size: 11px; fill: #555; }
.node { stroke: #333; stroke-width: 0.4; }
.node.critical { stroke: #c00; stroke-width: 1.2; }
.msg { stroke: #333; stroke-width: 1; opacity: 0.65; }
.msg-task { stroke: #1f77b4; }
.msg-wakeup { stroke: #2ca02c; stroke-dasharray: 3 2; }
.launch { stroke: #8c564b; stroke-width: 0.8; opacity: 0.5; stroke-dasharray: 2 2; }
rect.device { fill: #9c755f; stroke: #333; stroke-width: 0.3; }
rect.device.copy { fill: #e15759; }
rect.device.wait { fill: #ccc; }
rect.device.record { fill: #333; }
rect.device.critical { stroke: #c00; stroke-width: 1.2; }
table { border-collapse: collapse; font-size: 13px; }
tr.added td { background: #e8f5e9; }
tr.removed td { background: #fdecea; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
table.sortable th { cursor: pointer; }
ol { font-size: 13px; }
polyline { fill: none; stroke-width: 1.2; }
#timeline { cursor: grab; user-select: none; }
#timeline .zoom rect, #timeline .zoom line { vector-effect: non-scaling-stroke; }
#timeline.searching rect.node:not(.match) { opacity: 0.2; }
#timeline rect.node.match { stroke: #000; stroke-width: 2; }
#search { font: inherit; width: 16em; }
polyline.mailbox, span.mailbox { stroke: #444; color: #444; }
polyline.ready, span.ready { stroke: #9ab; color: #79a; }
)";

/// Opens a timeline lane at `top`: its group (with `attributes`), its
/// background and its label; its spans follow, then kCloseLane.
void open_lane(std::ostream& out, double top, const std::string& attributes,
               const std::string& label) {
  out << "<g " << attributes << ">\n<rect class=\"lane-bg\" x=\"" << num(kLabelWidth) << "\" y=\""
      << num(top) << "\" width=\"" << num(TimeAxis::plot) << "\" height=\"" << num(kLaneHeight)
      << "\"/>\n<text class=\"lane-label\" x=\"6\" y=\"" << num(top + kLaneHeight / 2 + 4) << "\">"
      << escape(label) << "</text>\n<g clip-path=\"url(#plot-area)\"><g class=\"zoom\">\n";
}

/// Writes `<rect class="..." x y width height` of a span from `start` to
/// `end` (at least 1 wide), `height` high at `y`; the caller ends the tag.
void span_rect(std::ostream& out, const std::string& cls, const TimeAxis& axis, std::int64_t start,
               std::int64_t end, double y, double height) {
  out << "<rect class=\"" << cls << "\" x=\"" << num(axis.x(start)) << "\" y=\"" << num(y)
      << "\" width=\"" << num(std::max(1.0, axis.x(end) - axis.x(start))) << "\" height=\""
      << num(height) << "\"";
}

/// Closes what open_lane opened.
constexpr const char* kCloseLane = "</g></g>\n</g>\n";

/// A lane per device stream below the actors' (lane `actors + i`), with
/// a span per item of device work (Note [Stream tracks]).
template <class LaneTop>
void write_stream_lanes(const Timeline& tl, const TimeAxis& axis,
                        const std::set<std::pair<std::size_t, bool>>& critical, LaneTop&& lane_top,
                        std::ostream& out) {
  for (std::size_t i = 0; i < tl.streams.size(); ++i) {
    const double top = lane_top(tl.actors.size() + i);
    open_lane(out, top, "class=\"lane stream\" data-stream=\"" + escape(tl.streams[i]) + "\"",
              tl.streams[i]);
    for (std::size_t j = 0; j < tl.device_spans.size(); ++j) {
      const DeviceSpan& d = tl.device_spans[j];
      if (d.stream != i)
        continue;
      span_rect(out,
                std::string("device ") + device_work_name(d.kind) +
                  (critical.count({j, true}) ? " critical" : ""),
                axis, d.start_ns, d.end_ns, top + 5, kLaneHeight - 10);
      out << "><title>" << escape(d.op) << " (" << device_work_name(d.kind) << " " << d.point
          << " of " << escape(tl.streams[i]) << ", launched by " << escape(d.node) << " seq "
          << d.sequence_nr << " on " << escape(tl.actors[d.launcher]) << ", GraphTask "
          << d.graph_task;
      if (d.waits_for)
        out << ", waits for " << escape(tl.streams[*d.waits_for]) << " point " << d.waits_for_point;
      out << "): " << escape(format_duration(d.duration_ns())) << "</title></rect>\n";
    }
    out << kCloseLane;
  }
}

void write_timeline(const Timeline& tl, const Summary& s, std::ostream& out) {
  const TimeAxis axis(tl);
  const double span = axis.span, plot = TimeAxis::plot;
  auto lane_top = [&](std::size_t a) {
    return kAxisHeight + static_cast<double>(a) * (kLaneHeight + kLaneGap);
  };
  const double height = lane_top(tl.actors.size() + tl.streams.size()) + 4;
  std::set<std::pair<std::size_t, bool>> critical; // index, on a device
  for (const CriticalPath& p : s.critical_paths)
    for (const PathStep& step : p.steps)
      critical.insert({step.slice, step.on_device});

  out << "<p class=\"meta\"><input id=\"search\" type=\"search\" placeholder=\"find a node\"> "
         "<span id=\"search-count\"></span> Wheel: zoom, drag: pan, double click: whole "
         "recording.</p>\n"
      << "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(kWidth)
      << "\" height=\"" << num(height) << "\" viewBox=\"0 0 " << num(kWidth) << ' ' << num(height)
      << "\" data-left=\"" << num(kLabelWidth) << "\" data-plot=\"" << num(plot)
      << "\" data-span-ns=\"" << (tl.end_ns - tl.begin_ns) << "\">\n"
      << "<defs><marker id=\"arrow\" viewBox=\"0 0 6 6\" refX=\"6\" refY=\"3\" markerWidth=\"6\" "
         "markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L6,3 L0,6 z\" fill=\"#333\"/>"
         "</marker><clipPath id=\"plot-area\"><rect x=\""
      << num(kLabelWidth) << "\" y=\"0\" width=\"" << num(plot) << "\" height=\"" << num(height)
      << "\"/></clipPath></defs>\n";
  out << "<g class=\"axis\">\n";
  for (int i = 0; i <= 5; ++i) {
    const std::int64_t ts = tl.begin_ns + static_cast<std::int64_t>(span * i / 5);
    out << "<line x1=\"" << num(axis.x(ts)) << "\" y1=\"" << num(kAxisHeight - 8) << "\" x2=\""
        << num(axis.x(ts)) << "\" y2=\"" << num(height) << "\"/><text x=\"" << num(axis.x(ts))
        << "\" y=\"" << num(kAxisHeight - 12) << "\" text-anchor=\""
        << (i == 0   ? "start"
            : i == 5 ? "end"
                     : "middle")
        << "\">" << escape(format_duration(ts - tl.begin_ns)) << "</text>\n";
  }
  out << "</g>\n";

  for (std::size_t a = 0; a < tl.actors.size(); ++a) {
    const double top = lane_top(a);
    open_lane(out, top, "class=\"lane\" data-actor=\"" + escape(tl.actor_label(a)) + "\"",
              tl.actor_label(a));
    for (std::size_t i = 0; i < tl.slices.size(); ++i) {
      const Slice& sl = tl.slices[i];
      if (sl.actor != a)
        continue;
      const double inset = 3.0 * std::min(sl.depth, 3);
      span_rect(out, critical.count({i, false}) ? "node critical" : "node", axis, sl.start_ns,
                sl.end_ns, top + 2 + inset, kLaneHeight - 4 - 2 * inset);
      out << " fill=\"" << device_colour(sl.device) << "\"><title>" << escape(sl.node) << " (seq "
          << sl.sequence_nr << ", GraphTask " << sl.graph_task << ", depth " << sl.depth << ", "
          << escape(sl.device.str())
          << ", stream default): " << escape(format_duration(sl.duration_ns()));
      if (auto w = sl.queue_wait_ns())
        out << ", queue wait " << escape(format_duration(*w));
      out << "</title></rect>\n";
    }
    out << kCloseLane;
  }

  write_stream_lanes(tl, axis, critical, lane_top, out);

  out << "<g clip-path=\"url(#plot-area)\"><g class=\"messages zoom\">\n";
  for (const DeviceSpan& d : tl.device_spans) {
    if (d.kind == DeviceWork::record)
      continue;
    out << "<line class=\"launch\" x1=\"" << num(axis.x(d.launch_ns)) << "\" y1=\""
        << num(lane_top(d.launcher) + kLaneHeight / 2) << "\" x2=\"" << num(axis.x(d.start_ns))
        << "\" y2=\"" << num(lane_top(tl.actors.size() + d.stream) + kLaneHeight / 2)
        << "\" marker-end=\"url(#arrow)\"><title>launch of " << escape(d.op) << " by "
        << escape(d.node) << " (seq " << d.sequence_nr << ")</title></line>\n";
  }
  for (const Message& m : tl.messages) {
    if (!m.received())
      continue;
    std::string kind = message_name(m.kind);
    std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
    out << "<line class=\"msg msg-" << kind << "\" x1=\"" << num(axis.x(m.send_ns)) << "\" y1=\""
        << num(lane_top(m.from_actor) + kLaneHeight / 2) << "\" x2=\"" << num(axis.x(*m.recv_ns))
        << "\" y2=\"" << num(lane_top(*m.to_actor) + kLaneHeight / 2)
        << "\" marker-end=\"url(#arrow)\"><title>" << message_name(m.kind) << ' ' << m.id << ": "
        << escape(tl.actor_label(m.from_actor)) << " -&gt; " << escape(tl.actor_label(*m.to_actor))
        << (m.node.empty() ? "" : ", for " + escape(m.node)) << ", "
        << escape(format_duration(m.latency_ns())) << "</title></line>\n";
  }
  out << "</g></g>\n</svg>\n";
}

/// The report's one script. It sorts a table with class "sortable" by the
/// clicked column (numbers by their data-v, text by its content; a second
/// click reverses). On the timeline, the wheel zooms around the pointer, a
/// drag pans, a double click shows the whole recording, and the axis shows
/// the times in view; the search box outlines the nodes whose details
/// contain its text and dims the rest. A URL fragment opens a view:
/// `#zoom=8&at=0.5&search=Mul` (zoom factor, the fraction of the recording
/// at the centre, the search text).
constexpr const char* kScript = R"(<script>
document.querySelectorAll('table.sortable th').forEach((th, col) => th.addEventListener('click', () => {
  const table = th.closest('table');
  const rows = Array.from(table.querySelectorAll('tr')).slice(1);
  const down = th.dataset.order !== 'down';
  th.dataset.order = down ? 'down' : 'up';
  const key = r => { const c = r.children[col]; return c.dataset.v !== undefined ? Number(c.dataset.v) : c.textContent; };
  rows.sort((a, b) => { const x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * (down ? -1 : 1); });
  rows.forEach(r => table.appendChild(r));
}));
(() => {
  const svg = document.getElementById('timeline');
  if (!svg) return;
  const left = +svg.dataset.left, plot = +svg.dataset.plot, span = +svg.dataset.spanNs;
  const zooms = svg.querySelectorAll('g.zoom'), ticks = svg.querySelectorAll('g.axis text');
  let scale = 1, shift = 0; // a time at plot x is drawn at left + shift + scale * x
  const fmt = ns => ns >= 1e6 ? (ns / 1e6).toFixed(3) + ' ms' : ns >= 1e3 ? (ns / 1e3).toFixed(1) + ' us' : Math.round(ns) + ' ns';
  const userX = e => { const r = svg.getBoundingClientRect(); return (e.clientX - r.left) * svg.viewBox.baseVal.width / r.width; };
  const apply = () => {
    scale = Math.min(1e4, Math.max(1, scale));
    shift = Math.min(0, Math.max(plot - scale * plot, shift));
    const t = 'translate(' + (left + shift) + ' 0) scale(' + scale + ' 1) translate(' + -left + ' 0)';
    zooms.forEach(g => g.setAttribute('transform', t));
    ticks.forEach((el, i) => { el.textContent = fmt((i / 5 * plot - shift) / scale / plot * span); });
    svg.dataset.zoom = scale;
  };
  svg.addEventListener('wheel', e => {
    e.preventDefault();
    const x = userX(e) - left, to = Math.min(1e4, Math.max(1, scale * (e.deltaY < 0 ? 1.25 : 0.8)));
    shift = x - (x - shift) * to / scale;
    scale = to;
    apply();
  }, {passive: false});
  let drag = null;
  svg.addEventListener('mousedown', e => { drag = {x: userX(e), shift: shift}; });
  window.addEventListener('mousemove', e => { if (drag) { shift = drag.shift + userX(e) - drag.x; apply(); } });
  window.addEventListener('mouseup', () => { drag = null; });
  svg.addEventListener('dblclick', () => { scale = 1; shift = 0; apply(); });
  const box = document.getElementById('search'), count = document.getElementById('search-count');
  const search = q => {
    q = q.trim().toLowerCase();
    let n = 0;
    svg.querySelectorAll('rect.node').forEach(r => {
      const hit = q !== '' && r.textContent.toLowerCase().includes(q);
      r.classList.toggle('match', hit);
      n += hit ? 1 : 0;
    });
    svg.classList.toggle('searching', q !== '');
    count.textContent = q === '' ? '' : n + (n === 1 ? ' node' : ' nodes');
  };
  box.addEventListener('input', () => search(box.value));
  const view = new URLSearchParams(location.hash.slice(1));
  if (view.has('zoom')) {
    scale = Math.min(1e4, Math.max(1, +view.get('zoom') || 1));
    shift = plot / 2 - scale * plot * (+view.get('at') || 0);
  }
  if (view.has('search')) { box.value = view.get('search'); search(box.value); }
  apply();
})();
</script>
)";

/// The per-operation table (op_table.h), sortable by any column.
void write_op_table(const Summary& s, std::ostream& out) {
  if (s.ops.empty())
    return;
  out << "<h2>Operations</h2>\n<table id=\"ops\" class=\"sortable\">\n<tr><th>name</th>"
         "<th>calls</th><th>total</th><th>self</th><th>mean</th><th>min</th><th>max</th>"
         "<th>self %</th><th>device</th></tr>\n";
  for (const OpStats& op : s.ops) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.1f", op.share_percent);
    out << "<tr><td>" << escape(op.name) << "</td>";
    sorted_cell(out, op.calls, std::to_string(op.calls));
    for (std::int64_t ns : {op.total_ns, op.self_ns, op.mean_ns(), op.min_ns, op.max_ns})
      duration_cell(out, ns);
    sorted_cell(out, op.share_percent, pct);
    duration_cell(out, op.device_ns);
    out << "</tr>\n";
  }
  out << "</table>\n";
}

void write_tables(const Timeline& tl, const Summary& s, std::ostream& out) {
  out << "<h2>Actors</h2>\n<table id=\"actors\">\n<tr><th>actor</th><th>busy %</th><th>busy</th>"
         "<th>tasks</th><th>messages in</th><th>messages out</th><th>queue wait p50</th>"
         "<th>queue wait p99</th></tr>\n";
  for (const ActorStats& a : s.actors) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.1f", a.busy_percent);
    out << "<tr><td>" << escape(a.actor) << "</td><td>" << pct << "</td><td>"
        << format_duration(a.busy_ns) << "</td><td>" << a.tasks << "</td><td>" << a.messages_in
        << "</td><td>" << a.messages_out << "</td><td>" << format_duration(a.queue_wait.p50_ns)
        << "</td><td>" << format_duration(a.queue_wait.p99_ns) << "</td></tr>\n";
  }
  out << "</table>\n";
  if (!s.streams.empty()) {
    out << "<h2>Streams</h2>\n<table id=\"streams\">\n<tr><th>stream</th><th>busy %</th>"
           "<th>busy</th><th>kernels</th><th>waits</th><th>waiting</th></tr>\n";
    for (const StreamStats& st : s.streams) {
      char pct[16];
      std::snprintf(pct, sizeof pct, "%.1f", st.busy_percent);
      out << "<tr><td>" << escape(st.stream) << "</td><td>" << pct << "</td><td>"
          << format_duration(st.busy_ns) << "</td><td>" << st.kernels << "</td><td>" << st.waits
          << "</td><td>" << format_duration(st.wait_ns) << "</td></tr>\n";
    }
    out << "</table>\n";
  }
  write_op_table(s, out);
  if (!s.edges.empty()) {
    out << "<h2>Messages</h2>\n<table id=\"edges\">\n<tr><th>from</th><th>to</th><th>kind</th>"
           "<th>count</th><th>mean latency</th></tr>\n";
    for (const EdgeStats& e : s.edges)
      out << "<tr><td>" << escape(tl.actor_label(e.from_actor)) << "</td><td>"
          << escape(tl.actor_label(e.to_actor)) << "</td><td>" << message_name(e.kind)
          << "</td><td>" << e.count << "</td><td>" << format_duration(e.mean_latency_ns)
          << "</td></tr>\n";
    out << "</table>\n";
  }
  for (const ProcessPath& p : s.process_paths) {
    out << "<h2>Cross-process critical path</h2>\n<p class=\"meta\">" << p.steps.size()
        << " steps, " << format_duration(p.end_ns - p.start_ns)
        << " from the caller's pass to the last reply; each step is what the next one "
           "waited for last"
           "</p>\n<ol class=\"process-path\">\n";
    for (const ProcessStep& step : p.steps)
      out << "<li>" << escape(describe_step(tl, s, step)) << "</li>\n";
    out << "</ol>\n";
  }
  for (std::size_t k = 0; k < s.critical_paths.size(); ++k) {
    const CriticalPath& p = s.critical_paths[k];
    out << "<h2>Parallelism of " << escape(task_name(tl, p)) << "</h2>\n<pre class=\"parallelism\">"
        << escape(describe_parallelism(tl, p, s.parallelism[k])) << "</pre>\n";
    out << "<h2>Critical path of " << escape(task_name(tl, p)) << "</h2>\n<p class=\"meta\">"
        << p.steps.size() << " steps, " << format_duration(p.length_ns)
        << " from its first start to its end (" << format_duration(p.wall_ns)
        << " wall)</p>\n<ol class=\"critical-path\">\n";
    for (const PathStep& step : p.steps) {
      out << "<li>";
      if (step.via_message)
        out << "(message " << format_duration(step.latency_ns) << ") ";
      if (step.on_device) {
        const DeviceSpan& d = tl.device_spans[step.slice];
        out << escape(d.op) << " (" << device_work_name(d.kind) << " of seq " << d.sequence_nr
            << ") on " << escape(tl.streams[d.stream]) << ": " << format_duration(d.duration_ns())
            << "</li>\n";
        continue;
      }
      const Slice& sl = tl.slices[step.slice];
      out << escape(sl.node) << " seq " << sl.sequence_nr << " on "
          << escape(tl.actor_label(sl.actor)) << ": " << format_duration(sl.duration_ns())
          << "</li>\n";
    }
    out << "</ol>\n";
  }
}

/// Each actor's mailbox and ready-heap lengths over time (queue_depth.h):
/// a lane per actor with two step lines on the timeline's time axis, then
/// their figures as a table.
void write_queues(const Timeline& tl, const Summary& s, std::ostream& out) {
  if (s.queues.empty())
    return;
  const TimeAxis axis(tl);
  const double plot = TimeAxis::plot;
  const double lane = 2 * kLaneHeight;
  out << "<h2>Queues</h2>\n<p class=\"meta\">Engine messages waiting in each actor's mailbox "
         "(<span class=\"mailbox\">dark</span>) and ready nodes in its heap "
         "(<span class=\"ready\">light</span>); each lane scaled to its own maximum.</p>\n"
      << "<svg id=\"queue-counters\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(kWidth)
      << "\" height=\"" << num(lane * double(s.queues.size()) + 4) << "\">\n";
  for (const QueueDepth& q : s.queues) {
    const double top = lane * double(q.actor);
    const double scale = double(std::max<std::int64_t>(1, std::max(q.max_mailbox, q.max_ready)));
    out << "<g class=\"queue-lane\" data-actor=\"" << escape(tl.actor_label(q.actor)) << "\">"
        << "<rect class=\"lane-bg\" x=\"" << num(kLabelWidth) << "\" y=\"" << num(top + 2)
        << "\" width=\"" << num(plot) << "\" height=\"" << num(lane - 4) << "\"/>"
        << "<text class=\"lane-label\" x=\"6\" y=\"" << num(top + lane / 2 + 4) << "\">"
        << escape(tl.actor_label(q.actor)) << " (max " << q.max_mailbox << " / " << q.max_ready
        << ")</text>\n";
    for (const bool mailbox : {true, false}) {
      out << "<polyline class=\"" << (mailbox ? "mailbox" : "ready") << "\" points=\"";
      std::int64_t prev = 0;
      auto y = [&](std::int64_t v) { return top + lane - 3 - (lane - 6) * double(v) / scale; };
      out << num(axis.x(tl.begin_ns)) << ',' << num(y(0));
      for (const DepthSample& d : q.samples) {
        const std::int64_t v = mailbox ? d.mailbox : d.ready;
        const std::string at = num(axis.x(d.t_ns));
        out << ' ' << at << ',' << num(y(prev)) << ' ' << at << ',' << num(y(v));
        prev = v;
      }
      out << ' ' << num(axis.x(tl.end_ns)) << ',' << num(y(prev)) << "\"/>\n";
    }
    out << "</g>\n";
  }
  out << "</svg>\n<table id=\"queues\" class=\"sortable\">\n<tr><th>actor</th>"
         "<th>mailbox max</th><th>mailbox mean</th><th>messages</th><th>mailbox wait mean</th>"
         "<th>mailbox wait max</th><th>heap max</th><th>heap mean</th></tr>\n";
  for (const QueueDepth& q : s.queues) {
    char m[32], r[32];
    std::snprintf(m, sizeof m, "%.2f", q.mean_mailbox);
    std::snprintf(r, sizeof r, "%.2f", q.mean_ready);
    out << "<tr><td>" << escape(tl.actor_label(q.actor)) << "</td>";
    sorted_cell(out, q.max_mailbox, std::to_string(q.max_mailbox));
    sorted_cell(out, m, m);
    sorted_cell(out, q.received, std::to_string(q.received));
    duration_cell(out, q.mean_mailbox_wait_ns());
    duration_cell(out, q.max_mailbox_wait_ns);
    sorted_cell(out, q.max_ready, std::to_string(q.max_ready));
    sorted_cell(out, r, r);
    out << "</tr>\n";
  }
  out << "</table>\n";
}

/// The comparison with an earlier recording (trace_diff.h): two sortable tables.
void write_diff(const TraceDiff& d, std::ostream& out) {
  out << "<h2>Compared with the earlier recording</h2>\n<p class=\"meta\">before "
      << format_duration(d.span_before_ns) << ", " << d.nodes_before << " node executions; after "
      << format_duration(d.span_after_ns) << ", " << d.nodes_after << " node executions ("
      << escape(percent_change(d.span_before_ns, d.span_after_ns)) << ")</p>\n";
  const auto table = [&](const char* id, const char* count, const char* time,
                         const std::vector<DiffRow>& rows) {
    out << "<table id=\"" << id << "\" class=\"sortable\">\n<tr><th>name</th><th>" << count
        << " before</th><th>after</th><th>change</th><th>" << time
        << " before</th><th>after</th><th>change</th></tr>\n";
    for (const DiffRow& r : rows) {
      out << "<tr"
          << (r.added()     ? " class=\"added\""
              : r.removed() ? " class=\"removed\""
                            : "")
          << "><td>" << escape(r.name) << "</td>";
      sorted_cell(out, r.count_before, std::to_string(r.count_before));
      sorted_cell(out, r.count_after, std::to_string(r.count_after));
      sorted_cell(out, r.count_change(), r.count_change_text());
      duration_cell(out, r.time_before_ns);
      duration_cell(out, r.time_after_ns);
      sorted_cell(out, r.time_change_ns(),
                  signed_duration(r.time_change_ns()) + ' ' +
                    percent_change(r.time_before_ns, r.time_after_ns));
      out << "</tr>\n";
    }
    out << "</table>\n";
  };
  table("diff-ops", "calls", "total", d.ops);
  table("diff-actors", "nodes", "busy", d.actors);
}

} // namespace

void write_html_report(const Timeline& tl, const Summary& s, std::ostream& out,
                       const TraceDiff* diff) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<title>actorgrad trace</title>\n<style>"
      << kStyle << "</style>\n</head>\n<body>\n<h1>actorgrad trace</h1>\n<p class=\"meta\">"
      << format_duration(s.span_ns) << ", " << tl.actors.size() << " actors, " << tl.slices.size()
      << " node executions, " << tl.messages.size() << " messages; queue wait p50 "
      << format_duration(s.queue_wait.p50_ns) << ", p99 " << format_duration(s.queue_wait.p99_ns)
      << ". Critical-path nodes are outlined in red; hover for details.</p>\n";
  write_timeline(tl, s, out);
  if (diff)
    write_diff(*diff, out);
  write_queues(tl, s, out);
  write_tables(tl, s, out);
  out << kScript << "</body>\n</html>\n";
}

} // namespace actorgrad::trace::detail
