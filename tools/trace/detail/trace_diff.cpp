#include "actorgrad/tools/trace/detail/trace_diff.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "actorgrad/tools/trace/detail/summary.h"

namespace actorgrad::trace::detail {

std::string percent_change(std::int64_t before, std::int64_t after) {
  if (before == 0)
    return after == 0 ? "0.0%" : "";
  if (after == before)
    return "0.0%";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * double(after - before) / double(before));
  return buf;
}

std::string signed_duration(std::int64_t ns) {
  std::string text = ns > 0 ? "+" : ns < 0 ? "-" : "";
  text += format_duration(std::llabs(ns));
  return text;
}

std::string DiffRow::count_change_text() const {
  if (added())
    return "added";
  if (removed())
    return "removed";
  const std::int64_t c = count_change();
  std::string text = c > 0 ? "+" : "";
  text += std::to_string(c);
  return text;
}

namespace {

std::size_t node_executions(const Summary& s) {
  std::size_t n = 0;
  for (const ActorStats& a : s.actors)
    n += a.tasks;
  return n;
}

std::size_t messages(const Summary& s) {
  std::size_t n = 0;
  for (const ActorStats& a : s.actors)
    n += a.messages_out;
  return n;
}

} // namespace

TraceDiff diff_summaries(const Summary& before, const Summary& after) {
  TraceDiff d;
  d.span_before_ns = before.span_ns;
  d.span_after_ns = after.span_ns;
  d.nodes_before = node_executions(before);
  d.nodes_after = node_executions(after);
  d.messages_before = messages(before);
  d.messages_after = messages(after);

  std::map<std::string, DiffRow> ops;
  for (const OpStats& op : before.ops) {
    DiffRow& r = ops[op.name];
    r.name = op.name;
    r.count_before = op.calls;
    r.time_before_ns = op.total_ns;
  }
  for (const OpStats& op : after.ops) {
    DiffRow& r = ops[op.name];
    r.name = op.name;
    r.count_after = op.calls;
    r.time_after_ns = op.total_ns;
  }
  for (auto& [name, row] : ops)
    d.ops.push_back(std::move(row));
  std::stable_sort(d.ops.begin(), d.ops.end(), [](const DiffRow& a, const DiffRow& b) {
    return std::llabs(a.time_change_ns()) > std::llabs(b.time_change_ns());
  });

  // Actors are matched by role: a caller's or pool worker's name ends in
  // its actor id, which differs from run to run.
  auto role = [](std::string name) {
    const auto digits = name.find_last_not_of("0123456789");
    if (digits != std::string::npos && digits + 1 < name.size() && name[digits] == ' ')
      name.erase(digits);
    return name;
  };
  auto row_of = [&d](const std::string& actor) -> DiffRow& {
    for (DiffRow& r : d.actors)
      if (r.name == actor)
        return r;
    return d.actors.emplace_back(DiffRow{actor});
  };
  for (const ActorStats& a : after.actors) {
    DiffRow& r = row_of(role(a.actor));
    r.count_after += a.tasks;
    r.time_after_ns += a.busy_ns;
  }
  for (const ActorStats& a : before.actors) {
    DiffRow& r = row_of(role(a.actor));
    r.count_before += a.tasks;
    r.time_before_ns += a.busy_ns;
  }
  return d;
}

std::string format_diff(const TraceDiff& d, std::size_t top) {
  std::ostringstream out;
  char line[512];
  out << "before: " << format_duration(d.span_before_ns) << ", " << d.nodes_before
      << " node executions, " << d.messages_before << " messages\n"
      << "after:  " << format_duration(d.span_after_ns) << ", " << d.nodes_after
      << " node executions, " << d.messages_after << " messages\n"
      << "change: " << signed_duration(d.span_after_ns - d.span_before_ns) << " ("
      << percent_change(d.span_before_ns, d.span_after_ns) << ")\n";
  const auto table = [&](const char* title, const char* what, const std::vector<DiffRow>& rows,
                         std::size_t limit) {
    out << '\n' << title << '\n';
    std::snprintf(line, sizeof line, "  %-32s %8s %8s %8s %11s %11s %11s %8s\n", "name", "before",
                  "after", "change", "before", "after", "change", "%");
    out << line;
    for (std::size_t i = 0; i < rows_shown(rows.size(), limit); ++i) {
      const DiffRow& r = rows[i];
      std::snprintf(line, sizeof line, "  %-32s %8zu %8zu %8s %11s %11s %11s %8s\n", r.name.c_str(),
                    r.count_before, r.count_after, r.count_change_text().c_str(),
                    format_duration(r.time_before_ns).c_str(),
                    format_duration(r.time_after_ns).c_str(),
                    signed_duration(r.time_change_ns()).c_str(),
                    percent_change(r.time_before_ns, r.time_after_ns).c_str());
      out << line;
    }
    note_rows_left_out(out, rows.size(), limit, what);
  };
  table("operations (calls, then total time; by change in total time)", "operations", d.ops, top);
  table("actors (node executions, then busy time)", "actors", d.actors, 0);
  return out.str();
}

} // namespace actorgrad::trace::detail
