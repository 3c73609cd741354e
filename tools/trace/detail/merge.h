#pragma once
/// @file merge.h
/// The recordings of several processes as one timeline (`actorgrad trace
/// --merge`).
/// Internal (tools/trace/detail/, not installed).

#include <vector>

#include "actorgrad/tools/trace/timeline.h"

namespace actorgrad::trace::detail {

/// Merges `parts` (the timelines of recordings of different processes, or
/// merges of them) into one: their processes in order, each actor and
/// stream in its process; timestamps on one clock, lined up by each
/// recording's wall-clock start and then corrected by the clock offsets
/// that the messages between the processes show (Note [Clock offsets from
/// message pairs] in clock_offsets.h; Process::shift_ns says what was added
/// to each). The two ends of each message between processes (a RemoteGrad
/// or a RemoteAck, paired by flow id) become one Message from the sender's
/// agent to the receiver's; an end whose other end is in none of the parts
/// stays a RemoteEnd. Message and device-work ids are renumbered so that
/// they are unique in the merge.
Timeline merge_timelines(const std::vector<Timeline>& parts);

} // namespace actorgrad::trace::detail
