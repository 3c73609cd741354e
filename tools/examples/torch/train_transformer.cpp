/// @file train_transformer.cpp
/// An ordinary libtorch training program whose backward passes run on
/// actorgrad's actor engine: the actorgrad lines are the install scope and
/// the recording of one step's trace (the ACTORGRAD lines below). A
/// TransformerEncoderLayer and a linear head learn to tell whether a
/// sequence's first feature sums above zero, with cross-entropy and Adam.
///
///   example_torch_train_transformer [--steps N] [--trace PATH.json|PATH.html]
///
/// Prints the loss of every step; records the last step's backward and
/// writes it as a Chrome trace (.json, for Perfetto / `actorgrad trace`) or
/// an HTML report (.html); default train_transformer_trace.json. Exits 0
/// only if the loss decreased.
///
/// Built a second time with ACTORGRAD_EXAMPLE_PLAIN (no actorgrad at all):
/// example_torch_train_transformer_plain, a plain libtorch program that runs
/// on actorgrad only under LD_PRELOAD=libactorgrad_torch_preload.so.

#include <cstdio>
#include <cstdlib>
#include <string>

#include <torch/torch.h>

#ifndef ACTORGRAD_EXAMPLE_PLAIN
#include "actorgrad/actors/torch/install.h"
#include "actorgrad/tools/trace/report_files.h"
#endif

namespace {

/// The model: encoder layer, mean over the sequence, linear head to 2 classes.
struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl()
    : encoder(register_module(
        "encoder",
        torch::nn::TransformerEncoderLayer(
          torch::nn::TransformerEncoderLayerOptions(32, 4).dim_feedforward(64).dropout(0.1)))),
      head(register_module("head", torch::nn::Linear(32, 2))) {}
  /// src: (sequence, batch, 32) -> logits (batch, 2).
  torch::Tensor forward(const torch::Tensor& src) { return head(encoder(src).mean(0)); }
  torch::nn::TransformerEncoderLayer encoder;
  torch::nn::Linear head;
};
TORCH_MODULE(Classifier);

} // namespace

int main(int argc, char** argv) {
  int steps = 40;
  std::string trace_path = "train_transformer_trace.json";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--steps" && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (arg == "--trace" && i + 1 < argc) {
      trace_path = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--steps N] [--trace PATH.json|PATH.html] (unknown argument '%s')\n",
                   argv[0], arg.c_str());
      return 2;
    }
  }
  if (steps < 2) {
    std::fprintf(stderr, "--steps %d: at least 2 steps, to see the loss decrease\n", steps);
    return 2;
  }
#ifndef ACTORGRAD_EXAMPLE_PLAIN
  actorgrad::torch::Scope actorgrad_engine; // ACTORGRAD: backward passes run on the actor engine
#endif

  torch::manual_seed(0);
  Classifier model;
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(3e-3));
  const torch::Tensor x = torch::randn({8, 64, 32});                    // 64 sequences of 8 tokens
  const torch::Tensor y = (x.select(2, 0).sum(0) > 0).to(torch::kLong); // (64,)

  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model(x), y);
#ifndef ACTORGRAD_EXAMPLE_PLAIN
    if (step == steps - 1)
      actorgrad::torch::engine().start_recording(); // ACTORGRAD: trace the last backward
#endif
    loss.backward();
#ifndef ACTORGRAD_EXAMPLE_PLAIN
    if (step == steps - 1) { // ACTORGRAD: write the trace
      actorgrad::trace::ReportPaths paths;
      (trace_path.size() > 5 && trace_path.substr(trace_path.size() - 5) == ".html" ? paths.html
                                                                                    : paths.json) =
        trace_path;
      actorgrad::trace::write_reports(
        actorgrad::trace::build_timeline(actorgrad::torch::engine().stop_recording()), paths);
      std::printf("trace of the last backward: %s\n", trace_path.c_str());
    }
#endif
    opt.step();
    last = loss.item<double>();
    if (step == 0)
      first = last;
    std::printf("step %d loss %.6f\n", step, last);
  }
  return last < first ? 0 : 1;
}
