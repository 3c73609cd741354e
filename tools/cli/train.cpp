/// @file train.cpp
/// `actorgrad train` (train.h).

#include "tools/cli/train.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/engine/reference_executor.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/tools/trace/report_files.h"
#include "tools/cli/engine_flags.h"
#include "tools/cli/flags.h"
#include "tools/cli/format.h"
#include "tools/cli/mlp.h"
#include "tools/cli/progress.h"
#include "tools/cli/spirals.h"

namespace actorgrad::cli {
namespace {

constexpr const char* kAbout = R"(
Trains an MLP (2 -> hidden -> hidden -> 2) on a generated two-spirals data set
(2 x --points points, deterministic for a seed) with Adam or SGD with momentum.
On a terminal a status line shows the step, the loss, steps/s and the time
left; every --log-every steps a line gives the loss and accuracy on the whole
data set and the mean wall time of one backward pass; the last line gives the
final accuracy and where the trace was written.

With --trace FILE the backward pass of one step (--trace-step, default the
last) is recorded and written as a Chrome trace (`actorgrad trace --in FILE`
summarizes it again). A FILE of - is standard output; the log then goes to
standard error. Output paths are checked before training starts.

Exit status: 0 when the loss dropped, 1 when it did not or training failed,
2 on a bad command line.
)";

/// The executor that runs every backward() of this run, passed explicitly
/// to actorgrad::backward. The actor engine gets one DeviceWorker per
/// device of --devices. It is not installed as the process default
/// executor: installed executors live until exit, and the Engine (with its
/// actor system) must be destroyed before main returns.
std::unique_ptr<Executor> make_executor(const TrainOptions& o) {
  if (o.executor == "reference")
    return std::make_unique<ReferenceExecutor>();
  return std::make_unique<Engine>(engine_config(o.devices, o.cpu_workers));
}

/// Mini-batches: a walk over a permutation reshuffled every epoch.
class Batches {
public:
  Batches(std::int64_t n, std::int64_t batch, std::uint64_t seed)
    : order_(static_cast<std::size_t>(n)), batch_(static_cast<std::size_t>(batch)),
      rng_(seed + 0x5eed), cursor_(order_.size()) {
    std::iota(order_.begin(), order_.end(), std::int64_t{0});
  }
  /// Sets `xb`, `yb` to the next batch of `x`, `y` (left alone for a full batch).
  void next(const Tensor& x, const std::vector<std::int64_t>& y, Tensor& xb,
            std::vector<std::int64_t>& yb) {
    if (batch_ >= order_.size())
      return;
    if (cursor_ + batch_ > order_.size()) {
      std::shuffle(order_.begin(), order_.end(), rng_);
      cursor_ = 0;
    }
    const auto first = order_.begin() + static_cast<std::ptrdiff_t>(cursor_);
    std::vector<std::int64_t> idx(first, first + static_cast<std::ptrdiff_t>(batch_));
    cursor_ += batch_;
    xb = index_select(x, 0, idx);
    yb.clear();
    for (auto i : idx)
      yb.push_back(y[static_cast<std::size_t>(i)]);
  }

private:
  std::vector<std::int64_t> order_;
  std::size_t batch_;
  std::mt19937_64 rng_;
  std::size_t cursor_;
};

/// Where the trace went, for the final line.
std::string where_traced(const TrainOptions& o, std::int64_t step) {
  if (o.trace.empty())
    return "no trace (--trace FILE records one)";
  auto name = [](const std::string& p) { return p == "-" ? std::string("standard output") : p; };
  return "trace of step " + std::to_string(step) + " written to " + name(o.trace) +
         (o.html.empty() ? "" : " and " + name(o.html));
}

/// A loss as printed: -0.0, which nll_loss gives (as PyTorch's does) when
/// every target's log-probability is exactly 0, reads 0.
double shown(double loss) {
  return loss + 0.0; // -0.0 + 0.0 is +0.0; any other value is unchanged
}

struct Eval {
  double loss;
  double accuracy;
};

/// Loss and accuracy of `model` on the whole data set, without a graph.
Eval evaluate(const Mlp& model, const Tensor& x, const std::vector<std::int64_t>& y) {
  NoGradGuard no_grad;
  const Tensor logits = model.forward(x);
  const double loss = shown(cross_entropy(logits, y).item());
  const std::vector<double> v = logits.to_vector();
  const std::int64_t classes = logits.size(1);
  std::int64_t correct = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto row = v.begin() + static_cast<std::ptrdiff_t>(i * classes);
    const auto best = std::max_element(row, row + classes) - row;
    correct += best == y[i];
  }
  return {loss, double(correct) / double(y.size())};
}

} // namespace

CLI::App* add_train(CLI::App& app, TrainOptions& o) {
  CLI::App* cmd =
    app.add_subcommand("train", "train a small MLP on two spirals with the actor engine");
  cmd->footer(kAbout);
  cmd->add_option("--steps", o.steps, "optimizer steps")->check(integer_in(1));
  cmd->add_option("--lr", o.lr, "learning rate")
    ->check(number_where("> 0", [](double v) { return v > 0; }))
    ->default_str("0.01 for adam, 0.1 for sgd");
  cmd->add_option("--hidden", o.hidden, "width of both hidden layers")->check(integer_in(1));
  cmd->add_option("--seed", o.seed, "seed of the data and the initial weights")
    ->check(integer_in(0));
  cmd->add_option("--log-every", o.log_every, "log every K steps")->check(integer_in(1));
  cmd->add_option("--executor", o.executor, "which executor runs backward")
    ->check(one_of({"actor", "reference"}));
  cmd
    ->add_option("--devices", o.devices,
                 "with sim:N or cuda:N, layer i lives on sim:(i mod N) or cuda:(i mod N), "
                 "so the backward crosses device workers")
    ->check(device_set());
  add_cpu_workers(*cmd, o.cpu_workers);
  cmd->add_option("--optimizer", o.optimizer, "adam, or sgd with momentum")
    ->check(one_of({"adam", "sgd"}));
  cmd->add_option("--momentum", o.momentum, "momentum of sgd")
    ->check(number_where("in [0, 1)", [](double v) { return v >= 0 && v < 1; }));
  cmd->add_option("--activation", o.activation, "hidden activation")
    ->check(one_of({"tanh", "relu"}));
  cmd->add_option("--dtype", o.dtype, "element type")->check(one_of({"float32", "float64"}));
  cmd->add_option("--points", o.points, "points per spiral")->check(integer_in(2));
  cmd->add_option("--batch", o.batch, "mini-batch size; 0 for the full batch")
    ->check(integer_in(0));
  CLI::Option* trace = cmd
                         ->add_option("--trace", o.trace,
                                      "record the backward pass of one step (actor executor) "
                                      "and write it as a Chrome trace")
                         ->check(output_file());
  cmd->add_option("--trace-step", o.trace_step, "the step --trace records; 0 for the last")
    ->check(integer_in(0))
    ->needs(trace);
  cmd->add_option("--html", o.html, "also write the HTML report of that step")
    ->check(output_file())
    ->needs(trace);
  cmd->final_callback([&o] {
    if (!o.trace.empty() && o.executor != "actor")
      throw CLI::ValidationError("--trace", "records the actor engine: it needs --executor actor");
    if (o.cpu_workers != 1 && o.executor != "actor")
      throw CLI::ValidationError("--cpu-workers",
                                 "sets the actor engine's CPU workers: it needs --executor actor");
    if (o.trace_step > o.steps)
      throw CLI::ValidationError("--trace-step", std::to_string(o.trace_step) +
                                                   " is past --steps " + std::to_string(o.steps));
    at_most_one_stdout({{"--trace", o.trace}, {"--html", o.html}});
  });
  return cmd;
}

int run_train(const TrainOptions& o) {
  // With --trace - (or --html -) standard output carries the trace.
  std::FILE* log = o.trace == "-" || o.html == "-" ? stderr : stdout;
  const double lr = o.lr > 0 ? o.lr : o.optimizer == "adam" ? 0.01 : 0.1;
  const std::int64_t trace_step = o.trace.empty() ? 0 : o.trace_step ? o.trace_step : o.steps;
  const Activation activation = parse_activation(o.activation);
  const DType dtype = o.dtype == "float64" ? DType::f64 : DType::f32;
  const std::unique_ptr<Executor> executor = make_executor(o);

  const SpiralData data = make_spirals(o.points, 0.02, o.seed);
  const std::int64_t n = data.size();
  const Tensor x_all = Tensor::from_vector(data.x, {n, 2}, dtype);
  std::vector<Device> devices = device_list(o.devices);
  if (devices.empty())
    devices.push_back(Device::cpu());

  Mlp model({2, o.hidden, o.hidden, 2}, activation, dtype, devices, o.seed);
  std::unique_ptr<Optimizer> opt;
  if (o.optimizer == "adam")
    opt = std::make_unique<Adam>(model.parameters(), lr);
  else
    opt = std::make_unique<SgdMomentum>(model.parameters(), lr, o.momentum);

  const std::int64_t batch = (o.batch == 0 || o.batch >= n) ? n : o.batch;
  std::fprintf(log,
               "actorgrad train: MLP 2-%lld-%lld-2 (%s, %s, %lld parameters) on %lld spiral "
               "points, batch %lld; %s lr %g; executor %s; devices %s\n",
               (long long)o.hidden, (long long)o.hidden, o.activation.c_str(),
               dtype_name(dtype).c_str(), (long long)model.parameter_count(), (long long)n,
               (long long)batch, o.optimizer.c_str(), lr, o.executor.c_str(), o.devices.c_str());

  const Eval initial = evaluate(model, x_all, data.y);
  std::fprintf(log, "step %6d  loss %.4f  accuracy %5.1f%%\n", 0, initial.loss,
               100.0 * initial.accuracy);
  std::fflush(log);

  Batches batches(n, batch, o.seed);
  Progress progress(log, o.steps);
  double window_backward_ms = 0;
  std::int64_t window_steps = 0;
  Eval last = initial;
  for (std::int64_t step = 1; step <= o.steps; ++step) {
    Tensor xb = x_all;
    std::vector<std::int64_t> yb = data.y;
    batches.next(x_all, data.y, xb, yb);

    opt->zero_grad();
    const Tensor loss = cross_entropy(model.forward(xb), yb);
    auto* recording = step == trace_step ? dynamic_cast<Engine*>(executor.get()) : nullptr;
    if (recording)
      recording->start_recording();
    const auto t0 = std::chrono::steady_clock::now();
    backward({loss}, {}, *executor);
    const auto t1 = std::chrono::steady_clock::now();
    if (recording) {
      trace::ReportPaths paths;
      paths.json = o.trace;
      paths.html = o.html;
      trace::write_reports(trace::build_timeline(recording->stop_recording()), paths);
    }
    opt->step();

    window_backward_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    ++window_steps;
    progress.step_done(step, [&] { return shown(loss.item()); });
    if (step % o.log_every == 0 || step == o.steps) {
      last = evaluate(model, x_all, data.y);
      progress.print(format("step %6lld/%lld  loss %.4f  accuracy %5.1f%%  backward %.3f ms  "
                            "%.1f steps/s  ETA %s",
                            (long long)step, (long long)o.steps, last.loss, 100.0 * last.accuracy,
                            window_backward_ms / double(window_steps), progress.rate(),
                            progress.eta().c_str()));
      window_backward_ms = 0;
      window_steps = 0;
    }
  }
  progress.finish();

  std::fprintf(log,
               "final accuracy %.1f%% (loss %.4f, from %.4f at step 0) after %lld steps in "
               "%.1f s; %s\n",
               100.0 * last.accuracy, last.loss, initial.loss, (long long)o.steps,
               progress.elapsed_s(), where_traced(o, trace_step).c_str());
  if (!(last.loss < initial.loss)) {
    std::fprintf(stderr, "actorgrad train: the loss did not drop\n");
    return 1;
  }
  return 0;
}

} // namespace actorgrad::cli
