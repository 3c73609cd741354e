/// @file many_passes_program.cpp
/// A libtorch program with no actorgrad in it that runs many short backward
/// passes, for the preload test of bounded recording (test_preload.cpp,
/// ACTORGRAD_TRACE=PATH:N). Argument: the number of passes. Prints its
/// resident set after a tenth of them and at the end (`rss_kb PASSES KB`),
/// then, as its last line before returning from main, `end_ns T` with
/// CLOCK_MONOTONIC (shared by every process of the machine), so that the
/// test can tell how long the exit took (the preload library writes its
/// trace at exit).

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>

#include <torch/torch.h>

namespace {

long rss_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6));
  return -1;
}

} // namespace

int main(int argc, char** argv) {
  const long passes = argc > 1 ? std::atol(argv[1]) : 1000;
  torch::manual_seed(1);
  torch::Tensor w = torch::randn({8}, torch::requires_grad());
  const torch::Tensor x = torch::randn({8});
  for (long i = 1; i <= passes; ++i) {
    ((w * x).tanh() * x).sum().backward();
    if (i == passes / 10 || i == passes)
      std::printf("rss_kb %ld %ld\n", i, rss_kb());
  }
  std::printf("grad %a\n", w.grad().sum().item<double>());
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  std::printf("end_ns %lld\n", static_cast<long long>(now.tv_sec) * 1'000'000'000LL + now.tv_nsec);
  std::fflush(stdout);
  return 0;
}
