/// Distributed autograd over CAF's network layer (actors/remote/) between
/// two processes on loopback: this process (the caller) and a worker it
/// forks before any thread exists (the same Runtime as `actorgrad worker`).
///
/// - BM_remote_stats_round_trip: the smallest request/reply (StatsRequest ->
///   StatsReply): per-message round-trip latency, including the scoped actor
///   each blocking call from a non-actor thread creates.
/// - BM_remote_call_small: remote_call "identity" on a 1-element float64
///   tensor without grad (ForwardRequest -> ForwardReply).
/// - BM_remote_call_4MiB: the same with a 4 MiB tensor (512 Ki float64): 4 MiB
///   each way, bytes_per_second counts both.
/// - BM_dist_backward_4MiB: one dist_backward whose 4 MiB gradient goes to
///   the worker (RemoteGrad) and comes back to the caller's leaf (a second
///   RemoteGrad), with the Acks and the leaf's accumulation into the
///   context: bytes_per_second counts the 8 MiB of gradient moved.
///
/// Wall time (UseRealTime): the work is in other threads and the other
/// process. Run: build/bench/bench_remote --benchmark_repetitions=3

#include <benchmark/benchmark.h>

#include <csignal>
#include <cstdio>
#include <string>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actorgrad/actors/remote/dist_context.h"
#include "actorgrad/libengine/ops.h"

using namespace actorgrad;

namespace {

constexpr std::int64_t kBigElems = 4 * 1024 * 1024 / 8; // 4 MiB of float64

std::uint16_t g_port = 0;
remote::Runtime* g_runtime = nullptr;
remote::RemoteWorker g_worker;

void BM_remote_stats_round_trip(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(g_worker.stats());
}

void BM_remote_call_small(benchmark::State& state) {
  remote::DistContext ctx(*g_runtime);
  Tensor x = Tensor::scalar(1.0);
  for (auto _ : state)
    benchmark::DoNotOptimize(remote::remote_call(ctx, g_worker, "identity", {x}));
}

void BM_remote_call_4MiB(benchmark::State& state) {
  remote::DistContext ctx(*g_runtime);
  Tensor x = Tensor::randn({kBigElems}, 1);
  for (auto _ : state)
    benchmark::DoNotOptimize(remote::remote_call(ctx, g_worker, "identity", {x}));
  state.SetBytesProcessed(state.iterations() * 2 * kBigElems * 8);
}

void BM_dist_backward_4MiB(benchmark::State& state) {
  remote::DistContext ctx(*g_runtime);
  Tensor x = Tensor::randn({kBigElems}, 2).set_requires_grad();
  Tensor y = remote::remote_call(ctx, g_worker, "identity", {x})[0];
  Tensor g = Tensor::ones({kBigElems});
  for (auto _ : state)
    remote::dist_backward(ctx, {y}, {g});
  state.SetBytesProcessed(state.iterations() * 2 * kBigElems * 8);
  // The gradient really arrived: one per iteration (plus the warm-up).
  auto grads = remote::get_gradients(ctx);
  if (grads.local_grad(x).to_vector()[0] != static_cast<double>(state.iterations()))
    state.SkipWithError("wrong accumulated gradient");
}

BENCHMARK(BM_remote_stats_round_trip)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_remote_call_small)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_remote_call_4MiB)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_dist_backward_4MiB)->UseRealTime()->Unit(benchmark::kMillisecond);

/// The worker process: publishes a Runtime, reports its port, serves until killed.
[[noreturn]] void run_worker(int port_fd) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  {
    remote::Runtime rt;
    std::uint16_t port = rt.publish(0, "127.0.0.1");
    if (::write(port_fd, &port, sizeof port) != sizeof port)
      ::_exit(1);
    ::close(port_fd);
    int sig = 0;
    sigwait(&stop, &sig);
  }
  ::_exit(0);
}

} // namespace

int main(int argc, char** argv) {
  int fds[2];
  if (::pipe(fds) != 0)
    return 1;
  // Fork first, while this process has one thread.
  pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    run_worker(fds[1]);
  }
  ::close(fds[1]);
  if (::read(fds[0], &g_port, sizeof g_port) != sizeof g_port) {
    std::fprintf(stderr, "bench_remote: the worker did not start\n");
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    return 1;
  }
  int rc = 0;
  {
    remote::Runtime rt;
    g_runtime = &rt;
    g_worker = rt.connect("127.0.0.1", g_port);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
      rc = 1;
    else
      benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    g_worker = {};
  }
  ::kill(child, SIGTERM);
  ::waitpid(child, nullptr, 0);
  return rc;
}
