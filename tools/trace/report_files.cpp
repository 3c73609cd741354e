#include "actorgrad/tools/trace/report_files.h"

#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "actorgrad/tools/trace/detail/chrome_json.h"
#include "actorgrad/tools/trace/detail/html_report.h"
#include "actorgrad/tools/trace/detail/summary.h"
#include "actorgrad/tools/trace/detail/trace_diff.h"

namespace actorgrad::trace {

namespace {

void write_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path.empty())
    return;
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    return;
  }
  std::ofstream out(path);
  if (out)
    write(out);
  out.close();
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

} // namespace

void write_reports(const Timeline& tl, const ReportPaths& paths, const Timeline* before) {
  const detail::Summary s = detail::summarize(tl);
  std::optional<detail::TraceDiff> diff;
  if (before)
    diff = detail::diff_summaries(detail::summarize(*before), s);
  write_file(paths.json, [&](std::ostream& out) { detail::write_chrome_json(tl, out); });
  write_file(paths.html, [&](std::ostream& out) {
    detail::write_html_report(tl, s, out, diff ? &*diff : nullptr);
  });
  write_file(paths.summary, [&](std::ostream& out) {
    out << (diff ? detail::format_diff(*diff, paths.summary_top)
                 : detail::format_summary(tl, s, paths.summary_top));
  });
  write_file(paths.ops_csv, [&](std::ostream& out) { out << detail::op_table_csv(s.ops); });
}

} // namespace actorgrad::trace
