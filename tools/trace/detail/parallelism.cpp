#include "actorgrad/tools/trace/detail/parallelism.h"

#include <algorithm>
#include <map>

#include "actorgrad/tools/trace/detail/slice_inputs.h"

namespace actorgrad::trace::detail {

// Note [Parallelism of a pass]
// A pass's wall time runs from its first node's start to its last node's
// end. Each actor (the caller, a CPU worker, a device worker) that ran its
// nodes is a track: its busy % is the time inside the pass's node slices
// on that track over the wall time, and the parallelism achieved is the
// node time of all tracks over the wall time (1.0: one track busy all
// along; 2.0: two tracks busy all along).
//
// What more workers could give is bounded by the longest chain of
// dependent nodes: no node starts before its producers ended, so with any
// number of workers and free messages the pass takes at least the summed
// durations of the nodes along its heaviest chain, and its parallelism is
// at most node time / that sum. The chain is found over the dependencies
// the recording holds (slice_inputs.h): a gradient passed on the same
// actor (node_fed) and a Grad message whose producer is known, weighted by
// the nodes' durations only (a message's latency is the scheduler's cost,
// not work). A producer always starts before its consumer, so the slices
// in start order are a topological order; an input from a slice that has
// not started before its consumer (a recording cut mid-run) is ignored.

std::int64_t busy_time(const std::vector<const Slice*>& slices) {
  std::int64_t busy = 0;
  std::int64_t covered_until = 0;
  bool any = false;
  for (const Slice* s : slices) {
    if (any && s->end_ns <= covered_until)
      continue; // nested in a slice already counted
    const std::int64_t from = any ? std::max(s->start_ns, covered_until) : s->start_ns;
    busy += s->end_ns - from;
    covered_until = s->end_ns;
    any = true;
  }
  return busy;
}

namespace {

/// The heaviest chain of dependent slices of `task_slices` (sorted by start).
std::vector<std::size_t> heaviest_chain(const Timeline& tl,
                                        const std::vector<std::size_t>& task_slices,
                                        const std::map<std::size_t, std::vector<SliceInput>>& in) {
  std::map<std::size_t, std::int64_t> weight; // heaviest chain ending at a slice
  std::map<std::size_t, std::size_t> before;  // its previous slice on that chain
  std::size_t last = task_slices.front();
  for (std::size_t i : task_slices) {
    std::int64_t best = 0;
    if (auto it = in.find(i); it != in.end())
      for (const SliceInput& e : it->second)
        if (auto w = weight.find(e.from); w != weight.end() && w->second > best) {
          best = w->second;
          before[i] = e.from;
        }
    weight[i] = best + tl.slices[i].duration_ns();
    if (weight[i] > weight[last])
      last = i;
  }
  std::vector<std::size_t> chain{last};
  for (auto it = before.find(last); it != before.end(); it = before.find(it->second))
    chain.push_back(it->second);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

} // namespace

PassParallelism pass_parallelism(const Timeline& tl, std::size_t process, std::uint64_t task,
                                 const std::vector<std::size_t>& task_slices) {
  PassParallelism p;
  p.graph_task = task;
  p.process = process;
  if (task_slices.empty())
    return p;
  std::map<std::size_t, std::vector<const Slice*>> per_actor;
  std::int64_t first_start = tl.slices[task_slices.front()].start_ns, last_end = first_start;
  for (std::size_t i : task_slices) {
    const Slice& s = tl.slices[i];
    per_actor[s.actor].push_back(&s);
    first_start = std::min(first_start, s.start_ns);
    last_end = std::max(last_end, s.end_ns);
  }
  p.wall_ns = last_end - first_start;
  auto share = [&](std::int64_t ns) {
    return p.wall_ns > 0 ? double(ns) / double(p.wall_ns) : 0.0;
  };
  for (auto& [actor, slices] : per_actor) {
    std::sort(slices.begin(), slices.end(),
              [](const Slice* a, const Slice* b) { return a->start_ns < b->start_ns; });
    PassTrack t{actor, busy_time(slices), 0, slices.size()};
    t.busy_percent = 100.0 * share(t.busy_ns);
    p.node_ns += t.busy_ns;
    p.tracks.push_back(t);
  }
  p.parallelism = share(p.node_ns);
  p.critical_chain = heaviest_chain(tl, task_slices, slice_inputs(tl, process, task, task_slices));
  for (std::size_t i : p.critical_chain)
    p.critical_ns += tl.slices[i].duration_ns();
  p.max_parallelism = p.critical_ns > 0 ? double(p.node_ns) / double(p.critical_ns) : 0.0;
  return p;
}

} // namespace actorgrad::trace::detail
