#include "actorgrad/tools/trace/trace_request.h"

#include <cctype>
#include <cstdlib>
#include <stdexcept>

#include <unistd.h>

#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::trace {

namespace {

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() > end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

/// `text` with characters a file name should not hold replaced by `-`.
std::string safe_for_file_name(std::string text) {
  for (char& c : text)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      c = '-';
  return text;
}

} // namespace

TraceRequest parse_trace_request(const std::string& spec, const std::string& what) {
  TraceRequest r;
  std::string path = spec;
  const std::string quoted = what + "='" + spec + "'";
  if (auto colon = path.rfind(':'); colon != std::string::npos) {
    const std::string n = path.substr(colon + 1);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || n.size() > 9 ||
        std::stoul(n) == 0)
      throw std::invalid_argument(quoted +
                                  ": the number after ':' must be a positive count of passes");
    r.keep_passes = std::stoul(n);
    path.resize(colon);
  }
  if (!ends_with(path, ".json") && !ends_with(path, ".html"))
    throw std::invalid_argument(quoted + ": name a .json (Chrome trace) or .html (report) file");
  for (std::size_t i = 0; i < path.size(); ++i) // a '%' is never last: the path ends .json or .html
    if (path[i] == '%') {
      const char next = path[++i];
      if (next != 'p' && next != 'r' && next != '%')
        throw std::invalid_argument(quoted + ": '%" + next +
                                    "' is not one of %p (process id), %r (rank), %% (a '%')");
    }
  r.path = std::move(path);
  return r;
}

TraceProcess TraceProcess::current(std::string worker) {
  TraceProcess p;
  p.pid = ::getpid();
  if (const char* rank = std::getenv("RANK"); rank && *rank)
    p.rank = rank;
  p.worker = std::move(worker);
  return p;
}

std::string TraceProcess::label() const {
  if (!rank.empty())
    return "rank " + rank;
  if (!worker.empty())
    return worker;
  return "pid " + std::to_string(pid);
}

std::string TraceProcess::rank_in_path() const {
  return safe_for_file_name(!rank.empty()     ? rank
                            : !worker.empty() ? worker
                                              : "pid" + std::to_string(pid));
}

std::string expand_trace_path(const std::string& path, const TraceProcess& who) {
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '%' || i + 1 == path.size()) {
      out += path[i];
      continue;
    }
    const char c = path[++i];
    out += c == 'p'   ? std::to_string(who.pid)
           : c == 'r' ? who.rank_in_path()
           : c == '%' ? std::string("%")
                      : std::string{'%', c}; // refused by parse_trace_request: kept as it is
  }
  return out;
}

std::string write_recording(const Trace& t, const TraceRequest& request, const TraceProcess& who) {
  bool any = false;
  for (const Track& track : t.tracks)
    any = any || !track.events.empty();
  if (!any)
    return {};
  Timeline tl = build_timeline(t);
  tl.processes.front().name = who.label();
  const std::string path = expand_trace_path(request.path, who);
  ReportPaths paths;
  (ends_with(path, ".html") ? paths.html : paths.json) = path;
  write_reports(tl, paths);
  return path;
}

} // namespace actorgrad::trace
