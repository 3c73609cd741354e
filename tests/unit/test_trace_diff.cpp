/// @file test_trace_diff.cpp
/// Two recordings compared (tools/trace/detail/trace_diff.h), on hand-made
/// timelines whose numbers are known.
#define BOOST_TEST_MODULE trace_diff
#include <boost/test/unit_test.hpp>

#include <string>

#include "actorgrad/tools/trace/detail/trace_diff.h"
#include "tests/support/hand_made_trace.h"

using namespace actorgrad::trace;
using namespace actorgrad::trace::detail;
using actorgrad::testing::row_named;
using actorgrad::testing::slice;

namespace {

/// A caller (named with its actor id) runs Mul [0, 10) and Mul [10, 30);
/// sim:0's worker runs Sum [0, 5), then `extra` [5, 105) when given.
Timeline recording(const std::string& caller, const std::string& extra = {}) {
  Timeline tl;
  tl.actors = {caller, "sim:0 worker"};
  tl.slices = {slice(0, "Mul", 0, 10), slice(0, "Mul", 10, 30), slice(1, "Sum", 0, 5)};
  if (!extra.empty())
    tl.slices.push_back(slice(1, extra, 5, 105));
  tl.normalize();
  return tl;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_recording_against_itself_changes_nothing) {
  const Timeline tl = recording("caller 7", "Extra");
  const TraceDiff d = diff_summaries(summarize(tl), summarize(tl));
  BOOST_TEST(d.span_before_ns == d.span_after_ns);
  BOOST_TEST(d.ops.size() == 3u);
  for (const auto& r : d.ops) {
    BOOST_TEST_CONTEXT(r.name) {
      BOOST_TEST(r.count_change() == 0);
      BOOST_TEST(r.time_change_ns() == 0);
      BOOST_TEST(r.count_change_text() == "0");
      BOOST_TEST(!r.added());
      BOOST_TEST(!r.removed());
    }
  }
  BOOST_TEST(row_named(d.ops, "Mul").count_before == 2u);
  BOOST_TEST(row_named(d.ops, "Mul").time_before_ns == 30);
  const std::string text = format_diff(d);
  BOOST_TEST(text.find("change: 0 ns (0.0%)") != std::string::npos, text);
  BOOST_TEST(text.find("added") == std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(an_added_and_a_removed_node_are_named) {
  // Another run: its caller has another id; Extra is gone, Late is new.
  const TraceDiff d = diff_summaries(summarize(recording("caller 7", "Extra")),
                                     summarize(recording("caller 9", "Late")));
  const DiffRow& extra = row_named(d.ops, "Extra");
  BOOST_TEST(extra.removed());
  BOOST_TEST(extra.count_before == 1u);
  BOOST_TEST(extra.time_change_ns() == -100);
  BOOST_TEST(extra.count_change_text() == "removed");
  const DiffRow& late = row_named(d.ops, "Late");
  BOOST_TEST(late.added());
  BOOST_TEST(late.count_after == 1u);
  BOOST_TEST(late.count_change_text() == "added");
  BOOST_TEST(row_named(d.ops, "Mul").time_change_ns() == 0);
  // The callers match by role, not by id.
  BOOST_TEST(d.actors.size() == 2u);
  BOOST_TEST(row_named(d.actors, "caller").count_before == 2u);
  BOOST_TEST(row_named(d.actors, "caller").count_after == 2u);
  BOOST_TEST(row_named(d.actors, "sim:0 worker").time_after_ns == 105);
  // The largest change first.
  BOOST_TEST(std::llabs(d.ops.front().time_change_ns()) == 100);
  const std::string text = format_diff(d);
  BOOST_TEST(text.find("removed") != std::string::npos, text);
  BOOST_TEST(text.find("added") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(changes_are_signed_and_in_percent) {
  BOOST_TEST(percent_change(200, 250) == "+25.0%");
  BOOST_TEST(percent_change(200, 100) == "-50.0%");
  BOOST_TEST(percent_change(0, 5).empty());
  BOOST_TEST(signed_duration(1500) == "+1.5 us");
  BOOST_TEST(signed_duration(-1500) == "-1.5 us");
  BOOST_TEST(signed_duration(0) == "0 ns");
}
