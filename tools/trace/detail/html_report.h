#pragma once
/// @file html_report.h
/// A timeline as one self-contained HTML file: an inline SVG timeline and
/// the summary tables. One inline script (it sorts the tables); no fonts or
/// network access.
/// Internal (tools/trace/detail/, not installed).

#include <iosfwd>

#include "actorgrad/tools/trace/detail/summary.h"
#include "actorgrad/tools/trace/detail/trace_diff.h"
#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::trace::detail {

/// Writes the report: one SVG lane (`<g class="lane">`) per actor holding a
/// `<rect class="node">` per node slice (critical-path nodes also have
/// class `critical`), a `<line class="msg">` arrow per received message,
/// a time axis, and tables of actors, message edges and critical paths.
/// Hovering a slice or arrow shows its details (SVG `<title>`). With
/// `diff`, a section compares the recording with an earlier one.
void write_html_report(const Timeline& tl, const Summary& s, std::ostream& out,
                       const TraceDiff* diff = nullptr);

} // namespace actorgrad::trace::detail
