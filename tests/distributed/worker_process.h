#pragma once
/// @file worker_process.h
/// Starts `actorgrad worker --port 0` processes for the distributed tests
/// (tests/support/child_process.h: output captured, always reaped).

#include <chrono>
#include <csignal>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/child_process.h"

namespace actorgrad::testing {

/// One `actorgrad worker` child process.
class WorkerProcess {
public:
  /// Starts the worker with `extra` flags and waits (at most `wait`) for the
  /// log line that ends `listening on HOST:PORT`.
  explicit WorkerProcess(std::vector<std::string> extra = {"--enable-test-ops"},
                         std::chrono::milliseconds wait = std::chrono::seconds(20)) {
    std::vector<std::string> args = {actorgrad_binary(), "worker", "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    child_ = std::make_unique<testing::ChildProcess>(std::move(args));
    const std::string key = "listening on ";
    const auto pos = child_->wait_for_output(key, wait);
    const auto eol = pos == std::string::npos ? pos : child_->wait_for_output("\n", wait, pos);
    if (eol == std::string::npos) {
      child_->kill();
      throw std::runtime_error("actorgrad worker did not report its port; output: '" +
                               child_->out() + "' '" + child_->err() + "'");
    }
    const std::string& out = child_->out();
    const auto colon = out.rfind(':', eol);
    port_ = static_cast<std::uint16_t>(std::stoi(out.substr(colon + 1, eol - colon - 1)));
  }

  std::uint16_t port() const { return port_; }
  /// `127.0.0.1:PORT`, as the worker names itself.
  std::string name() const { return "127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return child_->pid(); }
  /// The process, for its output and exit.
  testing::ChildProcess& process() { return *child_; }
  /// SIGKILL and reap (idempotent).
  void kill() { child_->kill(); }
  /// Freezes the worker (SIGSTOP) and returns once the kernel reports it
  /// stopped, so no request sent afterwards can still be served.
  void stop() {
    child_->signal(SIGSTOP);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (state() != 'T' && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  /// Thaws a stopped worker (SIGCONT).
  void resume() { child_->signal(SIGCONT); }

private:
  /// The process state letter from /proc/PID/stat ('T' when stopped).
  char state() const {
    std::ifstream stat("/proc/" + std::to_string(child_->pid()) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    return close == std::string::npos || close + 2 >= text.size() ? '?' : text[close + 2];
  }

  std::unique_ptr<testing::ChildProcess> child_;
  std::uint16_t port_ = 0;
};

} // namespace actorgrad::testing
