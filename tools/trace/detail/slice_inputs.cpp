#include "actorgrad/tools/trace/detail/slice_inputs.h"

namespace actorgrad::trace::detail {

std::map<std::size_t, std::vector<SliceInput>>
slice_inputs(const Timeline& tl, std::size_t process, std::uint64_t task,
             const std::vector<std::size_t>& task_slices) {
  std::map<std::uint64_t, std::size_t> by_seq;
  for (std::size_t i : task_slices)
    by_seq.emplace(tl.slices[i].sequence_nr, i);
  std::map<std::size_t, std::vector<SliceInput>> in;
  for (std::size_t i : task_slices)
    for (std::uint64_t p : tl.slices[i].local_inputs)
      if (auto it = by_seq.find(p); it != by_seq.end())
        in[i].push_back({it->second, tl.slices[it->second].end_ns, 0, false});
  for (const Message& m : tl.messages) {
    if (m.graph_task != task || !m.producer || !m.received() ||
        tl.process_of_actor(m.from_actor) != process)
      continue;
    auto from = by_seq.find(*m.producer);
    auto to = by_seq.find(m.sequence_nr);
    if (from != by_seq.end() && to != by_seq.end())
      in[to->second].push_back({from->second, *m.recv_ns, m.latency_ns(), true});
  }
  return in;
}

} // namespace actorgrad::trace::detail
