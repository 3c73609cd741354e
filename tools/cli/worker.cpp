/// @file worker.cpp
/// `actorgrad worker` (worker.h).

#include "tools/cli/worker.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <pthread.h>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/remote/protocol_version.h"
#include "actorgrad/actors/remote/runtime.h"
#include "actorgrad/tools/trace/trace_request.h"
#include "actorgrad/version.h"
#include "tools/cli/flags.h"
#include "tools/cli/format.h"

namespace actorgrad::cli {
namespace {

constexpr const char* kAbout = R"(
Serves distributed autograd: publishes this process's agent with CAF's network
layer and runs the forward ops (remote::remote_call) and the backward parts
(remote::dist_backward) of the callers that connect to it.

It logs to standard output, one timestamped line each: at start its version,
protocol and the address it listens on (the line ends `listening on
HOST:PORT`); then each caller that connects or disconnects, each refused
handshake (another protocol version) and each peer lost during a backward;
with --verbose each request too; with --quiet only failures. It stops within
a second of SIGINT or SIGTERM: a backward pass still running then is
abandoned, and its caller gets an error naming this worker.

With --trace FILE it records the backward parts it runs and the gradients it
sends and receives, and writes them when it stops: FILE.json (Chrome trace) or
FILE.html (report), FILE.json:N for the last N passes only; %p in FILE is the
process id, %r its rank (RANK when set, else the worker's host-port), %% a %.
A worker that ran no backward pass writes nothing. `actorgrad trace --merge`
joins the traces of the caller and its workers into one.

Exit status: 0 after a signal, 1 when it cannot listen (the reason is
printed), 2 on a bad command line.
)";

/// How long a stopping worker lets a running local pass finish.
constexpr std::chrono::milliseconds kGrace{300};

/// Prints `text` to stdout after a local timestamp (2025-01-31T12:00:00.123).
void log_line(const std::string& text) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  tm local{};
  ::localtime_r(&now.tv_sec, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &local);
  std::printf("%s.%03ld %s\n", stamp, now.tv_nsec / 1000000, text.c_str());
  std::fflush(stdout);
}

/// Writes what the worker recorded (nothing when it ran no backward pass).
void write_trace(remote::Runtime& runtime, const trace::TraceRequest& request) {
  try {
    const std::string path = trace::write_recording(runtime.engine().stop_recording(), request,
                                                    trace::TraceProcess::current(runtime.name()));
    log_line(path.empty() ? "no backward pass ran here: no trace written" : "wrote trace " + path);
  } catch (const std::exception& e) {
    log_line(std::string("writing the trace failed: ") + e.what());
  }
}

} // namespace

CLI::App* add_worker(CLI::App& app, WorkerOptions& o) {
  CLI::App* cmd = app.add_subcommand(
    "worker", "serve distributed autograd on a port (remote forward ops and backward)");
  cmd->footer(kAbout);
  cmd->add_option("--port", o.port, "port to listen on; 0 picks a free one (logged)")
    ->check(integer_in(0, 65535))
    ->required();
  cmd->add_option("--host", o.host, "address to listen on");
  cmd
    ->add_option("--timeout-ms", o.timeout_ms,
                 "how long a request this worker sends may wait for its reply")
    ->check(integer_in(1, 3600 * 1000));
  cmd->add_flag("--enable-test-ops", o.test_ops,
                "serve the test ops test.slow_backward, test.nan_backward");
  CLI::Option* quiet = cmd->add_flag("--quiet", o.quiet, "log only failures");
  cmd->add_flag("--verbose", o.verbose, "also log each request")->excludes(quiet);
  cmd
    ->add_option("--trace", o.trace,
                 "record the backward parts run here; write FILE.json or FILE.html[:N] "
                 "(%p pid, %r rank) when stopping")
    ->check(CLI::Validator(
      [](std::string& s) {
        try {
          trace::parse_trace_request(s, "--trace");
          return std::string();
        } catch (const std::invalid_argument& e) {
          return std::string(e.what());
        }
      },
      "FILE"));
  return cmd;
}

int run_worker(const WorkerOptions& o) {
  // Every thread the runtime starts inherits this mask, so SIGINT/SIGTERM
  // reach only the sigwait below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  const remote::LogLevel most = o.quiet     ? remote::LogLevel::warning
                                : o.verbose ? remote::LogLevel::debug
                                            : remote::LogLevel::info;
  remote::RuntimeConfig config;
  config.timeout = std::chrono::milliseconds(o.timeout_ms);
  config.test_ops = o.test_ops;
  config.log = [most](remote::LogLevel level, const std::string& text) {
    if (level <= most)
      log_line(text);
  };
  remote::Runtime runtime(config);
  std::optional<trace::TraceRequest> trace_request;
  if (!o.trace.empty()) {
    trace_request = trace::parse_trace_request(o.trace, "--trace");
    runtime.engine().start_recording(trace::RecordingOptions::last(trace_request->keep_passes));
  }
  const std::uint16_t port = runtime.publish(static_cast<std::uint16_t>(o.port), o.host);
  log_line(format("actorgrad worker %s (protocol %u, pid %d) listening on %s:%u", ACTORGRAD_VERSION,
                  static_cast<unsigned>(remote::kProtocolVersion), static_cast<int>(::getpid()),
                  o.host.c_str(), static_cast<unsigned>(port)));
  int sig = 0;
  sigwait(&stop, &sig);
  log_line(std::string("stopping on ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT"));
  if (trace_request)
    write_trace(runtime, *trace_request);
  if (!runtime.shutdown(kGrace)) {
    log_line(format("a backward pass was still running after %lld ms: exiting without it",
                    static_cast<long long>(kGrace.count())));
    std::_Exit(0);
  }
  log_line("stopped");
  return 0;
}

} // namespace actorgrad::cli
