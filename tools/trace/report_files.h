#pragma once
/// @file report_files.h
/// Writes the files `actorgrad trace` and `actorgrad train --trace` produce.

#include <cstddef>
#include <string>

#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::trace {

/// Which outputs to write; an empty path is skipped, "-" is stdout.
struct ReportPaths {
  std::string json;    ///< Chrome trace (chrome_json.h)
  std::string html;    ///< single-file report (html_report.h)
  std::string summary; ///< text summary (summary.h)
  std::string ops_csv; ///< the per-op table as CSV (op_table.h)
  /// Rows of each list of the text summary (0: all).
  std::size_t summary_top = 20;
};

/// Writes the outputs of `tl` named in `paths`. With `before`, the summary
/// is the comparison of `before` with `tl` (trace_diff.h) and the HTML
/// report gains it as a section. Throws std::runtime_error naming a file
/// that cannot be written.
void write_reports(const Timeline& tl, const ReportPaths& paths, const Timeline* before = nullptr);

} // namespace actorgrad::trace
