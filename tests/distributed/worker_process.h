#pragma once
/// @file worker_process.h
/// Starts `actorgrad worker --port 0` processes for the distributed tests
/// and always stops them: SIGKILL + waitpid in the destructor, and
/// PR_SET_PDEATHSIG so a crashed test leaves no orphan.

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace actorgrad::dist_test {

/// The actorgrad binary: $ACTORGRAD_BIN (set by ctest to $<TARGET_FILE:actorgrad>).
inline std::string actorgrad_binary() {
  const char* bin = std::getenv("ACTORGRAD_BIN");
  if (!bin || !*bin)
    throw std::runtime_error("ACTORGRAD_BIN is not set (run through ctest)");
  return bin;
}

/// One `actorgrad worker` child process.
class WorkerProcess {
public:
  /// Starts the worker with `extra` flags and waits (at most `wait`) for its
  /// `listening on HOST:PORT` line.
  explicit WorkerProcess(std::vector<std::string> extra = {"--enable-test-ops"},
                         std::chrono::milliseconds wait = std::chrono::seconds(20)) {
    std::vector<std::string> args = {actorgrad_binary(), "worker", "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0)
      throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid_ == 0) {
      // Child: async-signal-safe calls only, then exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent)
        ::_exit(127);
      ::dup2(fds[1], STDOUT_FILENO);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = fds[0];
    read_port(wait);
  }
  ~WorkerProcess() {
    kill();
    if (out_ >= 0)
      ::close(out_);
  }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  std::uint16_t port() const { return port_; }
  /// `127.0.0.1:PORT`, as the worker names itself.
  std::string name() const { return "127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }
  /// SIGKILL and reap (idempotent).
  void kill() {
    if (pid_ <= 0)
      return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  /// Freezes (SIGSTOP) or thaws (SIGCONT) the worker: a hung peer.
  /// Freezes the worker (SIGSTOP) and returns once the kernel reports it
  /// stopped, so no request sent afterwards can still be served.
  void stop() {
    ::kill(pid_, SIGSTOP);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (state() != 'T' && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void resume() { ::kill(pid_, SIGCONT); }

private:
  /// The process state letter from /proc/PID/stat ('T' when stopped).
  char state() const {
    std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    return close == std::string::npos || close + 2 >= text.size() ? '?' : text[close + 2];
  }

  void read_port(std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    std::string text;
    const std::string key = "listening on ";
    while (true) {
      auto pos = text.find(key);
      auto eol = pos == std::string::npos ? std::string::npos : text.find('\n', pos);
      if (eol != std::string::npos) {
        auto colon = text.rfind(':', eol);
        port_ = static_cast<std::uint16_t>(std::stoi(text.substr(colon + 1, eol - colon - 1)));
        return;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        break;
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
        break;
      char buf[256];
      auto n = ::read(out_, buf, sizeof buf);
      if (n <= 0)
        break;
      text.append(buf, static_cast<std::size_t>(n));
    }
    kill();
    throw std::runtime_error("actorgrad worker did not report its port; output: '" + text + "'");
  }

  pid_t pid_ = -1;
  int out_ = -1;
  std::uint16_t port_ = 0;
};

} // namespace actorgrad::dist_test
