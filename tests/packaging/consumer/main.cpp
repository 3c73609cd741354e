/// A program outside actorgrad's tree: trains a small regression for a few
/// steps on the actor engine, records the last backward pass and writes its
/// trace as Chrome JSON and the HTML report. Exits 0 when the loss fell and
/// both files were written. Usage: consumer OUT_PREFIX
#include <cstdio>
#include <fstream>
#include <string>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/tools/trace/report_files.h"
#include "actorgrad/tools/trace/timeline.h"
#include "actorgrad/version.h"

using namespace actorgrad;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer OUT_PREFIX\n");
    return 2;
  }
  const std::string out = argv[1];
  Engine engine;
  Tensor x = Tensor::randn({16, 4}, 1);
  Tensor target = Tensor::randn({16, 1}, 2);
  Tensor w = Tensor::randn({4, 1}, 3);
  w.set_requires_grad();
  double first = 0, last = 0;
  for (int step = 0; step < 5; ++step) {
    if (step == 4)
      engine.start_recording();
    Tensor loss = mean(pow(matmul(x, w) - target, 2.0));
    engine.backward({loss}, {});
    last = loss.item();
    if (step == 0)
      first = last;
    NoGradGuard no_grad;
    w.sub_(w.grad(), 0.1);
    w.grad().mul_(0.0);
  }
  trace::ReportPaths paths;
  paths.json = out + ".json";
  paths.html = out + ".html";
  trace::write_reports(trace::build_timeline(engine.stop_recording()), paths);
  std::printf("actorgrad %s: loss %.6f -> %.6f\n", ACTORGRAD_VERSION, first, last);
  return last < first && std::ifstream(paths.json) && std::ifstream(paths.html) ? 0 : 1;
}
