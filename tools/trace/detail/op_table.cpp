#include "actorgrad/tools/trace/detail/op_table.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace actorgrad::trace::detail {

std::vector<OpStats> op_table(const Timeline& tl) {
  std::map<std::string, OpStats> by_name;
  // Slices are sorted by actor, then start, outer before nested: a stack of
  // the slices still open on the actor finds each one's parent, whose self
  // time loses the child's duration.
  std::vector<std::size_t> open;
  std::vector<std::int64_t> self(tl.slices.size());
  for (std::size_t i = 0; i < tl.slices.size(); ++i) {
    const Slice& s = tl.slices[i];
    while (!open.empty() &&
           (tl.slices[open.back()].actor != s.actor || tl.slices[open.back()].end_ns <= s.start_ns))
      open.pop_back();
    self[i] = s.duration_ns();
    if (!open.empty())
      self[open.back()] -= s.duration_ns();
    open.push_back(i);
  }
  std::int64_t all_self = 0;
  for (std::size_t i = 0; i < tl.slices.size(); ++i) {
    const Slice& s = tl.slices[i];
    OpStats& op = by_name[s.node];
    if (op.calls == 0) {
      op.name = s.node;
      op.min_ns = op.max_ns = s.duration_ns();
    }
    ++op.calls;
    op.total_ns += s.duration_ns();
    op.self_ns += self[i];
    op.min_ns = std::min(op.min_ns, s.duration_ns());
    op.max_ns = std::max(op.max_ns, s.duration_ns());
    all_self += self[i];
  }
  for (const DeviceSpan& d : tl.device_spans)
    if (d.kind == DeviceWork::kernel || d.kind == DeviceWork::copy)
      if (auto it = by_name.find(d.node); it != by_name.end())
        it->second.device_ns += d.duration_ns();
  std::vector<OpStats> ops;
  for (auto& [name, op] : by_name) {
    op.share_percent = all_self > 0 ? 100.0 * double(op.self_ns) / double(all_self) : 0.0;
    ops.push_back(std::move(op));
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [](const OpStats& a, const OpStats& b) { return a.total_ns > b.total_ns; });
  return ops;
}

std::string op_table_csv(const std::vector<OpStats>& ops) {
  std::ostringstream out;
  out << "name,calls,total_ns,self_ns,mean_ns,min_ns,max_ns,share_percent,device_ns\n";
  for (const OpStats& op : ops) {
    // Node names are identifiers ("AddmmBackward0", "torch::autograd::AccumulateGrad"):
    // quoted all the same, with quotes doubled, as CSV has it.
    std::string name;
    for (char c : op.name)
      name += c == '"' ? std::string("\"\"") : std::string(1, c);
    out << '"' << name << "\"," << op.calls << ',' << op.total_ns << ',' << op.self_ns << ','
        << op.mean_ns() << ',' << op.min_ns << ',' << op.max_ns << ',' << op.share_percent << ','
        << op.device_ns << '\n';
  }
  return out.str();
}

} // namespace actorgrad::trace::detail
