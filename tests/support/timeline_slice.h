#pragma once
/// @file timeline_slice.h
/// A node slice of graph task 1 for hand-made timelines (the trace tools'
/// unit tests). Header-only.

#include <cstdint>
#include <string>

#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::test {

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

} // namespace actorgrad::test
