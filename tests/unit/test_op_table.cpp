/// @file test_op_table.cpp
/// The per-operation table of a timeline (tools/trace/detail/op_table.h) and the
/// summary's cut lists, on a hand-made timeline whose numbers are known.
#define BOOST_TEST_MODULE op_table
#include <boost/test/unit_test.hpp>

#include <string>

#include "actorgrad/tools/trace/detail/op_table.h"
#include "actorgrad/tools/trace/detail/summary.h"
#include "tests/support/hand_made_trace.h"

using namespace actorgrad::trace;
using namespace actorgrad::trace::detail;
using actorgrad::testing::row_named;
using actorgrad::testing::slice;

namespace {

/// Actor 0: Outer [0, 100) with a nested (reentrant) Inner [10, 40) and
/// Inner [50, 60); then Mul [100, 110). Actor 1: Mul [0, 30), Mul [40, 45).
Timeline known() {
  Timeline tl;
  tl.actors = {"caller", "sim:0 worker"};
  tl.slices = {slice(0, "Outer", 0, 100, 9), slice(0, "Inner", 10, 40, 8),
               slice(0, "Inner", 50, 60, 7), slice(0, "Mul", 100, 110, 6),
               slice(1, "Mul", 0, 30, 5),    slice(1, "Mul", 40, 45, 4)};
  tl.normalize();
  return tl;
}

} // namespace

BOOST_AUTO_TEST_CASE(calls_times_self_time_and_shares) {
  const auto ops = op_table(known());
  BOOST_TEST_REQUIRE(ops.size() == 3u);
  BOOST_TEST(ops[0].name == "Outer"); // by total time: 100, then Mul 45, Inner 40
  BOOST_TEST(ops[1].name == "Mul");
  BOOST_TEST(ops[2].name == "Inner");
  const OpStats& outer = row_named(ops, "Outer");
  BOOST_TEST(outer.calls == 1u);
  BOOST_TEST(outer.total_ns == 100);
  BOOST_TEST(outer.self_ns == 60); // the nested 30 + 10 are Inner's
  const OpStats& mul = row_named(ops, "Mul");
  BOOST_TEST(mul.calls == 3u);
  BOOST_TEST(mul.total_ns == 45);
  BOOST_TEST(mul.self_ns == 45);
  BOOST_TEST(mul.min_ns == 5);
  BOOST_TEST(mul.max_ns == 30);
  BOOST_TEST(mul.mean_ns() == 15);
  const OpStats& inner = row_named(ops, "Inner");
  BOOST_TEST(inner.total_ns == 40);
  BOOST_TEST(inner.self_ns == 40);
  // Self times add up to the recorded node time with nesting counted once:
  // 100 on the caller plus 10, and 35 on the worker.
  double shares = 0;
  std::int64_t self = 0;
  for (const auto& op : ops) {
    shares += op.share_percent;
    self += op.self_ns;
  }
  BOOST_TEST(self == 145);
  BOOST_TEST(shares == 100.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(outer.share_percent == 100.0 * 60 / 145, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(csv_has_a_header_and_a_line_per_op) {
  const std::string csv = op_table_csv(op_table(known()));
  BOOST_TEST(
    csv.rfind("name,calls,total_ns,self_ns,mean_ns,min_ns,max_ns,share_percent,device_ns\n", 0) ==
    0u);
  BOOST_TEST(csv.find("\n\"Mul\",3,45,45,15,5,30,") != std::string::npos, csv);
  std::size_t lines = 0;
  for (char c : csv)
    lines += c == '\n';
  BOOST_TEST(lines == 4u);
  Timeline quoted = known();
  quoted.slices[0].node = "a\"b";
  BOOST_TEST(op_table_csv(op_table(quoted)).find("\"a\"\"b\"") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(summary_lists_are_cut_to_top_rows_and_say_how_many_were_left_out) {
  const Timeline tl = known();
  const Summary s = summarize(tl);
  const std::string cut = format_summary(tl, s, 1);
  BOOST_TEST(cut.find("  Outer ") != std::string::npos);
  BOOST_TEST(cut.find("... 2 more operations not shown") != std::string::npos, cut);
  const std::string all = format_summary(tl, s, 0);
  BOOST_TEST(all.find("more operations not shown") == std::string::npos, all);
  for (const char* name : {"  Outer ", "  Mul ", "  Inner "})
    BOOST_TEST(all.find(name) != std::string::npos, name);
}
