#include "tests/support/child_process.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace actorgrad::testing {

namespace {

using Clock = std::chrono::steady_clock;

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

} // namespace

std::string actorgrad_binary() {
  const char* bin = std::getenv("ACTORGRAD_BIN");
  if (!bin || !*bin)
    throw std::runtime_error("ACTORGRAD_BIN is not set (run through ctest)");
  return bin;
}

ChildProcess::ChildProcess(std::vector<std::string> args, Options options) {
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw sys_error("pipe");
  const std::string in_path = options.stdin_file.empty() ? "/dev/null" : options.stdin_file;
  const int in = ::open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0)
    throw sys_error("open " + in_path);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0)
    throw sys_error("fork");
  if (pid_ == 0) {
    // Child: async-signal-safe calls only, then exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(127);
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0)
      ::_exit(127);
    ::dup2(in, STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(in);
  ::close(out[1]);
  ::close(err[1]);
  reader_ = std::thread([this, o = out[0], e = err[0]] { read_pipes(o, e); });
}

ChildProcess::~ChildProcess() {
  kill();
  // The pipes close with the child (the binary starts no processes of its own).
  if (reader_.joinable())
    reader_.join();
}

void ChildProcess::read_pipes(int out_fd, int err_fd) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&out_, &err_};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (::poll(fds, 2, -1) < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      char buf[4096];
      const auto n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1; // poll ignores negative descriptors
        continue;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      sinks[i]->append(buf, static_cast<std::size_t>(n));
      changed_.notify_all();
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  changed_.notify_all();
}

void ChildProcess::wait_closed(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, wait, [&] { return closed_; });
}

std::size_t ChildProcess::wait_for_output(const std::string& text, std::chrono::milliseconds wait,
                                          std::size_t from) {
  std::unique_lock<std::mutex> lock(mutex_);
  std::size_t pos = std::string::npos;
  changed_.wait_for(lock, wait, [&] {
    pos = out_.find(text, from);
    return pos != std::string::npos || closed_;
  });
  return pos;
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds wait) {
  const auto deadline = Clock::now() + wait;
  while (pid_ > 0) {
    const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      break;
    }
    if (Clock::now() >= deadline)
      return std::nullopt;
    ::usleep(200); // the exit is seen within a fraction of a millisecond
  }
  wait_closed(std::chrono::seconds(1));
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
}

std::string ChildProcess::out() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return out_;
}

std::string ChildProcess::err() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return err_;
}

void ChildProcess::signal(int sig) {
  if (pid_ > 0)
    ::kill(pid_, sig);
}

void ChildProcess::kill() {
  if (pid_ <= 0)
    return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

RunResult run(std::vector<std::string> argv, std::chrono::milliseconds limit,
              ChildProcess::Options options) {
  const auto start = Clock::now();
  ChildProcess child(std::move(argv), std::move(options));
  RunResult r;
  if (auto status = child.wait(limit))
    r.status = *status;
  else
    child.kill();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.out = child.out();
  r.err = child.err();
  return r;
}

} // namespace actorgrad::testing
