/// @file trace.cpp
/// `actorgrad trace`: records the message flow of one backward pass on the
/// actor engine (or reads a recording) and writes a Chrome trace, an HTML
/// report and a text summary (tools/trace/).

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "actors/engine.h"
#include "libengine/autograd.h"
#include "libengine/ops.h"
#include "tools/cli/commands.h"
#include "tools/cli/mlp.h"
#include "tools/cli/spirals.h"
#include "tools/trace/chrome_json.h"
#include "tools/trace/report_files.h"

namespace actorgrad::cli {
namespace {

constexpr const char* kUsage = R"(usage: actorgrad trace [flags]

Runs one backward pass of a model on the actor engine with recording on (after
one unrecorded warm-up pass), or reads a recording, and writes:
  a Chrome Trace Event JSON file (open it in https://ui.perfetto.dev or
  chrome://tracing): one track per actor, a slice per node, an arrow per message;
  a single-file HTML report (timeline and tables, no network access needed);
  a text summary: per actor busy %, tasks, messages in/out and queue wait
  p50/p99; messages per actor pair; the critical path of each backward call.

flags:
  --model M        mlp | chain (default mlp): the MLP of `actorgrad train`
                   (2 -> hidden -> hidden -> 2 on two spirals), or a chain of
                   --nodes multiplications of a [1] tensor
  --devices D      cpu | sim:N: MLP layers round-robin on sim:0..sim:N-1, chain
                   in N contiguous stages on sim:0..sim:N-1 (default sim:2)
  --hidden H       MLP hidden width (default 64)
  --points N       spiral points per class (default 500)
  --nodes N        chain length (default 1000)
  --seed S         seed of the data and weights (default 1)
  --in FILE        read this trace (written by --out) instead of running
  --out FILE       Chrome trace JSON (default trace.json when not --in)
  --html FILE      HTML report
  --summary FILE   text summary, - for stdout (default -)
  -h, --help       this text

Exit status: 0 on success, 1 on failure, 2 on a bad command line.
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TraceOptions {
  std::string model = "mlp";
  int sim_devices = 2;
  std::int64_t hidden = 64;
  std::int64_t points = 500;
  std::int64_t nodes = 1000;
  std::uint64_t seed = 1;
  std::string in;
  trace::ReportPaths paths{"", "", "-"};
};

std::int64_t positive(const std::string& flag, const std::string& v) {
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || n < 1)
    throw UsageError(flag + " expects a positive integer, not '" + v + "'");
  return n;
}

/// Parses the flags after "trace"; returns false when --help was asked for.
bool parse_flags(int argc, char** argv, TraceOptions& o) {
  std::map<std::string, std::function<void(const std::string&)>> flags{
      {"--model",
       [&](const std::string& v) {
         if (v != "mlp" && v != "chain")
           throw UsageError("--model must be mlp or chain, not '" + v + "'");
         o.model = v;
       }},
      {"--devices",
       [&](const std::string& v) {
         if (v == "cpu")
           o.sim_devices = 0;
         else if (v.rfind("sim:", 0) == 0)
           o.sim_devices = static_cast<int>(positive("--devices sim:N", v.substr(4)));
         else
           throw UsageError("--devices must be cpu or sim:N, not '" + v + "'");
       }},
      {"--hidden", [&](const std::string& v) { o.hidden = positive("--hidden", v); }},
      {"--points", [&](const std::string& v) { o.points = positive("--points", v); }},
      {"--nodes", [&](const std::string& v) { o.nodes = positive("--nodes", v); }},
      {"--seed", [&](const std::string& v) { o.seed = std::uint64_t(positive("--seed", v)); }},
      {"--in", [&](const std::string& v) { o.in = v; }},
      {"--out", [&](const std::string& v) { o.paths.json = v; }},
      {"--html", [&](const std::string& v) { o.paths.html = v; }},
      {"--summary", [&](const std::string& v) { o.paths.summary = v; }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help")
      return false;
    auto it = flags.find(arg);
    if (it == flags.end())
      throw UsageError("unknown flag '" + arg + "'");
    if (i + 1 >= argc)
      throw UsageError(arg + " needs a value");
    it->second(argv[++i]);
  }
  if (o.in.empty() && o.paths.json.empty())
    o.paths.json = "trace.json";
  return true;
}

std::vector<Device> devices_of(const TraceOptions& o) {
  std::vector<Device> devices;
  for (int i = 0; i < o.sim_devices; ++i)
    devices.push_back(Device::sim(i));
  return devices;
}

/// A backward pass to record: builds the model's graph and returns the loss.
std::function<Tensor()> make_model(const TraceOptions& o) {
  std::vector<Device> devices = devices_of(o);
  if (o.model == "chain") {
    Tensor x = Tensor::randn({1}, o.seed);
    x.set_requires_grad(true);
    const std::int64_t n = o.nodes;
    const std::int64_t stages = std::max<std::int64_t>(1, o.sim_devices);
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
  auto model = std::make_shared<Mlp>(std::vector<std::int64_t>{2, o.hidden, o.hidden, 2},
                                     Activation::tanh, DType::f32, devices, o.seed);
  const SpiralData data = make_spirals(o.points, 0.02, o.seed);
  const Tensor x = Tensor::from_vector(data.x, {data.size(), 2}, DType::f32);
  return [model, x, y = data.y] { return cross_entropy(model->forward(x), y); };
}

/// Runs the model's backward once to warm up, then once more while recording.
trace::Timeline record(const TraceOptions& o) {
  EngineConfig config;
  config.devices = devices_of(o);
  Engine engine(std::move(config));
  const auto loss_of = make_model(o);
  backward({loss_of()}, {}, engine);
  const Tensor loss = loss_of();
  engine.start_recording();
  backward({loss}, {}, engine);
  return trace::build_timeline(engine.stop_recording());
}

} // namespace

int run_trace(int argc, char** argv) {
  TraceOptions o;
  try {
    if (!parse_flags(argc, argv, o)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "actorgrad trace: %s\n\n%s", e.what(), kUsage);
    return kUsageError;
  }
  const trace::Timeline tl = o.in.empty() ? record(o) : trace::read_chrome_json(o.in);
  trace::write_reports(tl, o.paths);
  return 0;
}

} // namespace actorgrad::cli
