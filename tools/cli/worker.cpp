/// @file worker.cpp
/// `actorgrad worker`: a process that serves distributed autograd
/// (actors/remote/): it publishes its agent on host:port and runs the
/// forward ops and backward parts that callers send it, until SIGINT or
/// SIGTERM.

#include <csignal>
#include <cstdio>
#include <pthread.h>
#include <stdexcept>
#include <string>

#include "actors/remote/runtime.h"
#include "tools/cli/commands.h"

namespace actorgrad::cli {
namespace {

constexpr const char* kUsage = R"(usage: actorgrad worker --port P [flags]

Serves distributed autograd: publishes this process's agent with CAF's
network layer and runs the forward ops (remote::remote_call) and the backward
parts (remote::dist_backward) of the callers that connect to it. Prints
`listening on HOST:PORT` once it accepts connections; runs until SIGINT or
SIGTERM.

flags:
  --port P            port to listen on; 0 picks a free one (printed)
  --host H            address to listen on (default 127.0.0.1)
  --timeout-ms T      how long a request this worker sends may wait for its
                      reply (default 10000)
  --enable-test-ops   serve the test ops test.slow_backward, test.nan_backward
  -h, --help          this text

Exit status: 0 after a signal, 1 on failure, 2 on a bad command line.
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

long number(const std::string& flag, const std::string& v, long lo, long hi) {
  std::size_t used = 0;
  long n = 0;
  try {
    n = std::stol(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || n < lo || n > hi)
    throw UsageError(flag + " expects an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], not '" + v + "'");
  return n;
}

} // namespace

int run_worker(int argc, char** argv) {
  long port = -1;
  std::string host = "127.0.0.1";
  remote::RuntimeConfig config;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc)
          throw UsageError(arg + " needs a value");
        return argv[++i];
      };
      if (arg == "-h" || arg == "--help") {
        std::fputs(kUsage, stdout);
        return 0;
      } else if (arg == "--port") {
        port = number(arg, value(), 0, 65535);
      } else if (arg == "--host") {
        host = value();
      } else if (arg == "--timeout-ms") {
        config.timeout = std::chrono::milliseconds(number(arg, value(), 1, 3600 * 1000));
      } else if (arg == "--enable-test-ops") {
        config.test_ops = true;
      } else {
        throw UsageError("unknown flag '" + arg + "'");
      }
    }
    if (port < 0)
      throw UsageError("--port is required (0 picks a free port)");
  } catch (const UsageError& e) {
    std::fprintf(stderr, "actorgrad worker: %s\n\n%s", e.what(), kUsage);
    return kUsageError;
  }

  // Every thread the runtime starts inherits this mask, so SIGINT/SIGTERM
  // reach only the sigwait below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  remote::Runtime runtime(config);
  auto actual = runtime.publish(static_cast<std::uint16_t>(port), host);
  std::printf("listening on %s:%u\n", host.c_str(), static_cast<unsigned>(actual));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  std::fprintf(stderr, "actorgrad worker %s:%u: stopping (signal %d)\n", host.c_str(),
               static_cast<unsigned>(actual), sig);
  return 0;
}

} // namespace actorgrad::cli
