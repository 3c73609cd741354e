#pragma once
/// @file hand_made_trace.h
/// For the trace tools' unit tests on hand-made timelines: a node slice,
/// and the row of a table by name. Header-only; include it from a
/// Boost.Test binary (after boost/test/unit_test.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::testing {

/// `node` run on `actor` over [start, end) ns, with sequence number `seq`.
inline trace::Slice slice(std::size_t actor, const std::string& node, std::int64_t start,
                          std::int64_t end, std::uint64_t seq = 0) {
  trace::Slice s;
  s.actor = actor;
  s.graph_task = 1;
  s.node = node;
  s.sequence_nr = seq;
  s.start_ns = start;
  s.end_ns = end;
  return s;
}

/// The row named `name` of `rows` (op_table.h's OpStats, trace_diff.h's
/// DiffRow); fails the test when there is none.
template <class Row>
const Row& row_named(const std::vector<Row>& rows, const std::string& name) {
  for (const Row& r : rows)
    if (r.name == name)
      return r;
  BOOST_FAIL("no row " << name);
  return rows.front();
}

} // namespace actorgrad::testing
