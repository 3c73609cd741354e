/// @file trace.cpp
/// `actorgrad trace` (trace.h).

#include "tools/cli/trace.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/tools/trace/detail/chrome_json.h"
#include "actorgrad/tools/trace/detail/merge.h"
#include "actorgrad/tools/trace/report_files.h"
#include "tools/cli/engine_flags.h"
#include "tools/cli/flags.h"
#include "tools/cli/mlp.h"
#include "tools/cli/spirals.h"

namespace actorgrad::cli {
namespace {

constexpr const char* kAbout = R"(
Runs one backward pass of a model on the actor engine with recording on (after
one unrecorded warm-up pass), or reads a recording (--in); with --cpu-workers N
the engine runs a CPU-only backward's nodes (--devices cpu) on N threads, each
a track of its own. It writes:
  --out      a Chrome Trace Event JSON file (open it in https://ui.perfetto.dev
             or chrome://tracing): one track per actor, a slice per node, an
             arrow per message, a counter of each actor's queue lengths;
  --html     a single-file HTML report (timeline and tables, no network needed);
  --summary  a text summary: per actor busy %, tasks, messages in/out and queue
             wait p50/p99; per actor the mailbox and ready-heap lengths (max,
             mean) and mailbox wait; the operations (per node name: calls, total, self,
             mean, min, max, share of the node time); messages per actor pair;
             per backward call its parallelism (node time / wall time, each
             track's busy % of the call, the longest chain of dependent nodes
             and the most parallelism it allows) and its critical path. Each
             list shows its first --top rows (default 20), or all of them
             with --all;
  --ops-csv  the operations table as CSV (times in ns).
With --diff BEFORE AFTER, two recordings are compared instead: the summary
lists per operation and per actor the counts and times before and after and
the change; --html writes AFTER's report with the comparison in it.
With --merge A.json B.json ..., the recordings of several processes (each
written with ACTORGRAD_TRACE=t%r.json, `actorgrad worker --trace`, or a
program's own recording) become one: one process per recording in Perfetto,
named by its rank (or worker name, or pid), each gradient sent between
processes by actorgrad's distributed autograd an arrow from the sender to
the receiver (RemoteGrad; its reply RemoteAck), and in the summary and the
report the cross-process critical path of each distributed backward: from
the caller's pass, through each gradient sent and the pass it started on
another process, to the reply that came back last. Clocks: each recording's
timestamps are first lined up by the wall clock at which it started, then
corrected by each process's clock offset, estimated from the messages as
NTP does: for each gradient and its reply, ((r1 - s1) - (r2 - s2)) / 2
(s: sent, r: received, each on its own process's clock), the median over
them; and bounded by causality (nothing is received before it was sent),
which is all that messages going one way only give. The offset applied to
each process is in its process_name args (shift_ns) in the merged file.
Only the outputs named are written; with none named, --out trace.json and
--summary - (with --in, --diff or --merge, only the summary). A FILE of - is standard output
(for one output at most), and --in - reads standard input. Output paths are
checked before anything runs.

Exit status: 0 on success, 1 on failure, 2 on a bad command line.
)";

/// Independent MLPs of `--model ensemble`.
constexpr std::int64_t kEnsemble = 16;

/// `--model wide`: branches, matrix products per branch and the matrices' side
/// (bench_cpu_workers' wide_dag/64x20: one product's backward takes about 5 us).
constexpr std::int64_t kWideBranches = 64;
constexpr std::int64_t kWideDepth = 20;
constexpr std::int64_t kWideSide = 28;

/// `--model wide`: kWideBranches chains of kWideDepth products by matrices
/// near the identity, all from one leaf, their sums added.
std::function<Tensor()> wide_model(std::uint64_t seed) {
  Tensor x = Tensor::randn({kWideSide, kWideSide}, seed);
  x.set_requires_grad(true);
  const Tensor eye = Tensor::eye(kWideSide);
  std::vector<Tensor> weights;
  const double spread = 0.1 / kWideSide;
  for (std::int64_t b = 0; b < kWideBranches; ++b)
    weights.push_back(add(eye, Tensor::uniform({kWideSide, kWideSide}, -spread, spread,
                                               seed + 1000 + static_cast<std::uint64_t>(b))));
  return [x, weights] {
    Tensor total;
    for (const Tensor& w : weights) {
      Tensor y = x;
      for (std::int64_t d = 0; d < kWideDepth; ++d)
        y = matmul(y, w);
      total = total.defined() ? add(total, sum(y)) : sum(y);
    }
    return total;
  };
}

/// A backward pass to record: builds the model's graph and returns the loss.
std::function<Tensor()> make_model(const TraceOptions& o) {
  if (o.model == "wide")
    return wide_model(o.seed);
  std::vector<Device> devices = device_list(o.devices);
  if (o.model == "chain") {
    Tensor x = Tensor::randn({1}, o.seed);
    x.set_requires_grad(true);
    const std::int64_t n = o.nodes;
    const std::int64_t stages = std::max<std::int64_t>(1, std::int64_t(devices.size()));
    const std::int64_t stage_len = (n + stages - 1) / stages;
    return [x, n, stage_len, devices] {
      Tensor y = x;
      for (std::int64_t i = 0; i < n; ++i) {
        if (!devices.empty() && i % stage_len == 0)
          y = to_device(y, devices[static_cast<std::size_t>(i / stage_len)]);
        y = y * 1.0001;
      }
      return sum(to_device(y, Device::cpu()));
    };
  }
  if (devices.empty())
    devices.push_back(Device::cpu());
  // The MLP, or kEnsemble of them (seeds seed, seed + 1, ...), their losses summed.
  const std::int64_t count = o.model == "ensemble" ? kEnsemble : 1;
  std::vector<std::shared_ptr<Mlp>> models;
  for (std::int64_t m = 0; m < count; ++m)
    models.push_back(std::make_shared<Mlp>(std::vector<std::int64_t>{2, o.hidden, o.hidden, 2},
                                           Activation::tanh, DType::f32, devices,
                                           o.seed + static_cast<std::uint64_t>(m)));
  const SpiralData data = make_spirals(o.points, 0.02, o.seed);
  const Tensor x = Tensor::from_vector(data.x, {data.size(), 2}, DType::f32);
  return [models, x, y = data.y] {
    Tensor loss = cross_entropy(models.front()->forward(x), y);
    for (std::size_t m = 1; m < models.size(); ++m)
      loss = loss + cross_entropy(models[m]->forward(x), y);
    return loss;
  };
}

/// Runs the model's backward once to warm up, then once more while recording.
trace::Timeline record(const TraceOptions& o) {
  Engine engine(engine_config(o.devices, o.cpu_workers));
  const auto loss_of = make_model(o);
  backward({loss_of()}, {}, engine);
  const Tensor loss = loss_of();
  engine.start_recording();
  backward({loss}, {}, engine);
  return trace::build_timeline(engine.stop_recording());
}

} // namespace

CLI::App* add_trace(CLI::App& app, TraceOptions& o) {
  CLI::App* cmd =
    app.add_subcommand("trace", "record one backward pass: Chrome trace, HTML report, summary");
  cmd->footer(kAbout);
  cmd
    ->add_option("--model", o.model,
                 "the MLP of `actorgrad train` (2 -> hidden -> hidden -> 2 on two spirals), "
                 "16 such MLPs with their losses summed (ensemble: independent branches "
                 "that CPU workers can run at once), a chain of --nodes multiplications "
                 "of a [1] tensor, or 64 chains of 20 [28, 28] matrix products from one "
                 "leaf, their sums added (wide: on the CPU, bench_cpu_workers' wide_dag)")
    ->check(one_of({"mlp", "ensemble", "chain", "wide"}));
  cmd
    ->add_option("--devices", o.devices,
                 "MLP layers round-robin on sim:0..sim:N-1 (or cuda:0..cuda:N-1), chain in N "
                 "contiguous stages")
    ->check(device_set());
  add_cpu_workers(*cmd, o.cpu_workers);
  cmd->add_option("--hidden", o.hidden, "MLP hidden width")->check(integer_in(1));
  cmd->add_option("--points", o.points, "spiral points per class")->check(integer_in(2));
  cmd->add_option("--nodes", o.nodes, "chain length")->check(integer_in(1));
  cmd->add_option("--seed", o.seed, "seed of the data and weights")->check(integer_in(0));
  cmd->add_option("--in", o.in, "read this trace (written by --out) instead of running")
    ->check(input_file());
  cmd
    ->add_option(
      "--diff", o.diff,
      "compare two recordings: per operation and per actor, counts and times "
      "before and after (the summary is the comparison; --html adds it to AFTER's report)")
    ->expected(2)
    ->check(input_file())
    ->excludes("--in");
  cmd
    ->add_option("--merge", o.merge,
                 "join the recordings of several processes into one (a process per file; "
                 "clocks lined up and corrected from the messages between them)")
    ->expected(1, -1)
    ->check(input_file())
    ->excludes("--in")
    ->excludes("--diff");
  cmd->add_option("--out", o.out, "Chrome trace JSON")->check(output_file());
  cmd->add_option("--html", o.html, "HTML report")->check(output_file());
  cmd->add_option("--summary", o.summary, "text summary")->check(output_file());
  cmd->add_option("--ops-csv", o.ops_csv, "per-operation table as CSV")->check(output_file());
  cmd->add_option("--top", o.top, "rows of each list of the summary")->check(integer_in(1));
  cmd->add_flag("--all", o.all, "every row of each list of the summary");
  cmd->final_callback([&o] {
    if (!o.diff.empty() && o.diff.size() != 2)
      throw CLI::ValidationError("--diff", "takes two recordings, BEFORE and AFTER");
    if (o.out.empty() && o.html.empty() && o.summary.empty() && o.ops_csv.empty()) {
      if (o.in.empty() && o.diff.empty() && o.merge.empty())
        o.out = "trace.json";
      o.summary = "-";
    }
    if (auto problem = output_problem(o.out); !o.out.empty() && !problem.empty())
      throw CLI::ValidationError("--out", problem);
    at_most_one_stdout(
      {{"--out", o.out}, {"--html", o.html}, {"--summary", o.summary}, {"--ops-csv", o.ops_csv}});
  });
  return cmd;
}

/// The recordings named by --merge as one timeline.
trace::Timeline merged(const std::vector<std::string>& paths) {
  std::vector<trace::Timeline> parts;
  for (const std::string& path : paths)
    parts.push_back(trace::detail::read_chrome_json(path));
  return trace::detail::merge_timelines(parts);
}

int run_trace(const TraceOptions& o) {
  std::optional<trace::Timeline> before;
  if (!o.diff.empty())
    before = trace::detail::read_chrome_json(o.diff[0]);
  const trace::Timeline tl = !o.diff.empty()    ? trace::detail::read_chrome_json(o.diff[1])
                             : !o.merge.empty() ? merged(o.merge)
                             : o.in.empty()     ? record(o)
                                                : trace::detail::read_chrome_json(o.in);
  trace::ReportPaths paths;
  paths.json = o.out;
  paths.html = o.html;
  paths.summary = o.summary;
  paths.ops_csv = o.ops_csv;
  paths.summary_top = o.all ? 0 : static_cast<std::size_t>(o.top);
  trace::write_reports(tl, paths, before ? &*before : nullptr);
  for (const std::string* path : {&o.out, &o.html, &o.summary, &o.ops_csv})
    if (!path->empty() && *path != "-")
      std::fprintf(stderr, "actorgrad trace: wrote %s\n", path->c_str());
  return 0;
}

} // namespace actorgrad::cli
