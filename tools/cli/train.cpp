/// @file train.cpp
/// `actorgrad train`: trains a small MLP classifier on two spirals, timing
/// every backward pass, on the actor engine (or the reference executor).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "actors/engine.h"
#include "libengine/autograd.h"
#include "libengine/engine/reference_executor.h"
#include "libengine/autograd/grad_mode.h"
#include "libengine/ops.h"
#include "tools/cli/commands.h"
#include "tools/cli/mlp.h"
#include "tools/cli/spirals.h"
#include "tools/trace/report_files.h"

namespace actorgrad::cli {
namespace {

constexpr const char* kUsage = R"(usage: actorgrad train [flags]

Trains an MLP (2 -> hidden -> hidden -> 2) on a generated two-spirals data set
and prints, every --log-every steps: step, loss and accuracy on the whole data
set, and the mean wall time of one backward pass.

flags:
  --steps N              optimizer steps (default 1000)
  --lr X                 learning rate (default 0.01 for adam, 0.1 for sgd)
  --hidden H             width of both hidden layers (default 64)
  --seed S               seed of the data and the initial weights (default 1)
  --log-every K          log every K steps (default 100)
  --executor E           actor | reference (default actor)
  --devices D            cpu | sim:N: with sim:N the layers are placed
                         round-robin on sim:0..sim:N-1 (default cpu)
  --optimizer O          adam | sgd (SGD with momentum) (default adam)
  --momentum M           momentum of sgd (default 0.9)
  --activation A         tanh | relu (default tanh)
  --dtype T              float32 | float64 (default float32)
  --points N             points per spiral (default 500)
  --batch B              mini-batch size; 0 = full batch (default 0)
  --trace FILE           record the backward pass of one step (actor executor)
                         and write it as a Chrome trace (`actorgrad trace --in
                         FILE` summarizes it again)
  --trace-step N         the step --trace records (default the last)
  --html FILE            with --trace: also write the HTML report
  -h, --help             this text

Exit status: 0 when the loss dropped, 1 when it did not or training failed,
2 on a bad command line.
)";

/// A command-line mistake: reported with the usage text, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TrainOptions {
  std::int64_t steps = 1000;
  double lr = -1;  // < 0: the optimizer's default
  std::int64_t hidden = 64;
  std::uint64_t seed = 1;
  std::int64_t log_every = 100;
  std::string executor = "actor";
  std::string devices = "cpu";
  int sim_devices = 0;  // N of sim:N, 0 for cpu
  std::string optimizer = "adam";
  double momentum = 0.9;
  Activation activation = Activation::tanh;
  DType dtype = DType::f32;
  std::int64_t points = 500;
  std::int64_t batch = 0;
  std::string trace;            // --trace: Chrome trace of one step's backward
  std::int64_t trace_step = 0;  // 0: the last step
  std::string trace_html;
};

std::int64_t parse_int(std::string_view flag, const std::string& text, std::int64_t min) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw UsageError(std::string(flag) + " expects an integer, not '" + text + "'");
  if (v < min)
    throw UsageError(std::string(flag) + " must be at least " + std::to_string(min) + ", not " +
                     text);
  return v;
}

double parse_double(std::string_view flag, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v))
    throw UsageError(std::string(flag) + " expects a number, not '" + text + "'");
  return v;
}

/// Parses the flags after "train"; returns false when --help was asked for.
bool parse_flags(int argc, char** argv, TrainOptions& o) {
  std::map<std::string, std::function<void(const std::string&)>> flags{
      {"--steps", [&](const std::string& v) { o.steps = parse_int("--steps", v, 1); }},
      {"--lr",
       [&](const std::string& v) {
         o.lr = parse_double("--lr", v);
         if (o.lr <= 0)
           throw UsageError("--lr must be positive, not " + v);
       }},
      {"--hidden", [&](const std::string& v) { o.hidden = parse_int("--hidden", v, 1); }},
      {"--seed",
       [&](const std::string& v) { o.seed = static_cast<std::uint64_t>(parse_int("--seed", v, 0)); }},
      {"--log-every", [&](const std::string& v) { o.log_every = parse_int("--log-every", v, 1); }},
      {"--executor",
       [&](const std::string& v) {
         if (v != "actor" && v != "reference")
           throw UsageError("--executor must be actor or reference, not '" + v + "'");
         o.executor = v;
       }},
      {"--devices",
       [&](const std::string& v) {
         if (v == "cpu") {
           o.sim_devices = 0;
         } else if (v.rfind("sim:", 0) == 0) {
           try {
             o.sim_devices = static_cast<int>(parse_int("--devices", v.substr(4), 1));
           } catch (const UsageError&) {
             throw UsageError("--devices must be cpu or sim:N with N >= 1, not '" + v + "'");
           }
         } else {
           throw UsageError("--devices must be cpu or sim:N with N >= 1, not '" + v + "'");
         }
         o.devices = v;
       }},
      {"--optimizer",
       [&](const std::string& v) {
         if (v != "adam" && v != "sgd")
           throw UsageError("--optimizer must be adam or sgd, not '" + v + "'");
         o.optimizer = v;
       }},
      {"--momentum",
       [&](const std::string& v) {
         o.momentum = parse_double("--momentum", v);
         if (o.momentum < 0 || o.momentum >= 1)
           throw UsageError("--momentum must be in [0, 1), not " + v);
       }},
      {"--activation",
       [&](const std::string& v) {
         try {
           o.activation = parse_activation(v);
         } catch (const std::invalid_argument& e) {
           throw UsageError(e.what());
         }
       }},
      {"--dtype",
       [&](const std::string& v) {
         if (v == "float32" || v == "f32")
           o.dtype = DType::f32;
         else if (v == "float64" || v == "f64")
           o.dtype = DType::f64;
         else
           throw UsageError("--dtype must be float32 or float64, not '" + v + "'");
       }},
      {"--points", [&](const std::string& v) { o.points = parse_int("--points", v, 2); }},
      {"--batch", [&](const std::string& v) { o.batch = parse_int("--batch", v, 0); }},
      {"--trace", [&](const std::string& v) { o.trace = v; }},
      {"--trace-step",
       [&](const std::string& v) { o.trace_step = parse_int("--trace-step", v, 1); }},
      {"--html", [&](const std::string& v) { o.trace_html = v; }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help")
      return false;
    std::string value;
    bool has_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto it = flags.find(arg);
    if (it == flags.end())
      throw UsageError("unknown flag '" + arg + "'");
    if (!has_value) {
      if (i + 1 >= argc)
        throw UsageError(arg + " needs a value");
      value = argv[++i];
    }
    it->second(value);
  }
  if (o.lr < 0)
    o.lr = o.optimizer == "adam" ? 0.01 : 0.1;
  if (o.trace.empty() && (o.trace_step != 0 || !o.trace_html.empty()))
    throw UsageError("--trace-step and --html need --trace");
  if (!o.trace.empty() && o.executor != "actor")
    throw UsageError("--trace records the actor engine: it needs --executor actor");
  if (o.trace_step > o.steps)
    throw UsageError("--trace-step " + std::to_string(o.trace_step) + " is past --steps " +
                     std::to_string(o.steps));
  if (!o.trace.empty() && o.trace_step == 0)
    o.trace_step = o.steps;
  return true;
}

/// The executor that runs every backward() of this run, passed explicitly
/// to actorgrad::backward. The actor engine gets one DeviceWorker per
/// simulated device of --devices. It is not installed as the process default
/// executor: installed executors live until exit, and the Engine (with its
/// actor system) must be destroyed before main returns.
std::unique_ptr<Executor> make_executor(const TrainOptions& o) {
  if (o.executor == "reference")
    return std::make_unique<ReferenceExecutor>();
  EngineConfig config;
  for (int i = 0; i < o.sim_devices; ++i)
    config.devices.push_back(Device::sim(i));
  return std::make_unique<Engine>(std::move(config));
}

struct Eval {
  double loss;
  double accuracy;
};

/// Loss and accuracy of `model` on the whole data set, without a graph.
Eval evaluate(const Mlp& model, const Tensor& x, const std::vector<std::int64_t>& y) {
  NoGradGuard no_grad;
  const Tensor logits = model.forward(x);
  const double loss = cross_entropy(logits, y).item();
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

int run_train(int argc, char** argv) {
  TrainOptions o;
  try {
    if (!parse_flags(argc, argv, o)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "actorgrad train: %s\n\n%s", e.what(), kUsage);
    return kUsageError;
  }

  const std::unique_ptr<Executor> executor = make_executor(o);

  const SpiralData data = make_spirals(o.points, 0.02, o.seed);
  const std::int64_t n = data.size();
  const Tensor x_all = Tensor::from_vector(data.x, {n, 2}, o.dtype);

  std::vector<Device> devices;
  for (int i = 0; i < o.sim_devices; ++i)
    devices.push_back(Device::sim(i));
  if (devices.empty())
    devices.push_back(Device::cpu());

  Mlp model({2, o.hidden, o.hidden, 2}, o.activation, o.dtype, devices, o.seed);
  std::unique_ptr<Optimizer> opt;
  if (o.optimizer == "adam")
    opt = std::make_unique<Adam>(model.parameters(), o.lr);
  else
    opt = std::make_unique<SgdMomentum>(model.parameters(), o.lr, o.momentum);

  const std::int64_t batch = (o.batch == 0 || o.batch >= n) ? n : o.batch;
  std::printf("actorgrad train: MLP 2-%lld-%lld-2 (%s, %s, %lld parameters) on %lld spiral "
              "points, batch %lld; %s lr %g; executor %s; devices %s\n",
              (long long)o.hidden, (long long)o.hidden,
              o.activation == Activation::tanh ? "tanh" : "relu", dtype_name(o.dtype).c_str(),
              (long long)model.parameter_count(), (long long)n, (long long)batch,
              o.optimizer.c_str(), o.lr, o.executor.c_str(), o.devices.c_str());

  const Eval initial = evaluate(model, x_all, data.y);
  std::printf("step %6d  loss %.4f  accuracy %5.1f%%\n", 0, initial.loss,
              100.0 * initial.accuracy);

  // Mini-batches walk a permutation that is reshuffled every epoch.
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::mt19937_64 shuffle_rng(o.seed + 0x5eed);
  std::size_t cursor = order.size();

  double window_backward_ms = 0;
  std::int64_t window_steps = 0;
  Eval last = initial;
  for (std::int64_t step = 1; step <= o.steps; ++step) {
    Tensor xb = x_all;
    std::vector<std::int64_t> yb = data.y;
    if (batch < n) {
      if (cursor + static_cast<std::size_t>(batch) > order.size()) {
        std::shuffle(order.begin(), order.end(), shuffle_rng);
        cursor = 0;
      }
      std::vector<std::int64_t> idx(order.begin() + static_cast<std::ptrdiff_t>(cursor),
                                    order.begin() + static_cast<std::ptrdiff_t>(cursor + batch));
      cursor += static_cast<std::size_t>(batch);
      xb = index_select(x_all, 0, idx);
      yb.clear();
      for (auto i : idx)
        yb.push_back(data.y[static_cast<std::size_t>(i)]);
    }

    opt->zero_grad();
    const Tensor loss = cross_entropy(model.forward(xb), yb);
    auto* recording = step == o.trace_step ? dynamic_cast<Engine*>(executor.get()) : nullptr;
    if (recording)
      recording->start_recording();
    const auto t0 = std::chrono::steady_clock::now();
    backward({loss}, {}, *executor);
    const auto t1 = std::chrono::steady_clock::now();
    if (recording) {
      trace::write_reports(trace::build_timeline(recording->stop_recording()),
                           {o.trace, o.trace_html, ""});
      std::printf("step %6lld  message-flow trace of this backward written to %s%s%s\n",
                  (long long)step, o.trace.c_str(), o.trace_html.empty() ? "" : " and ",
                  o.trace_html.c_str());
    }
    opt->step();

    window_backward_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    ++window_steps;
    if (step % o.log_every == 0 || step == o.steps) {
      last = evaluate(model, x_all, data.y);
      std::printf("step %6lld  loss %.4f  accuracy %5.1f%%  backward %.3f ms/step\n",
                  (long long)step, last.loss, 100.0 * last.accuracy,
                  window_backward_ms / double(window_steps));
      std::fflush(stdout);
      window_backward_ms = 0;
      window_steps = 0;
    }
  }

  std::printf("final accuracy %.1f%% (loss %.4f, from %.4f at step 0)\n", 100.0 * last.accuracy,
              last.loss, initial.loss);
  if (!(last.loss < initial.loss)) {
    std::fprintf(stderr, "actorgrad train: the loss did not drop\n");
    return 1;
  }
  return 0;
}

} // namespace actorgrad::cli
