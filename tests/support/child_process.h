#pragma once
/// @file child_process.h
/// A child process for tests that run the `actorgrad` binary: its standard
/// output and error captured by a reader thread (so a chatty child never
/// blocks on a full pipe), every wait bounded, and always reaped (SIGKILL in
/// the destructor; PR_SET_PDEATHSIG so a crashed test leaves no orphan).

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

namespace actorgrad::testing {

/// The actorgrad binary: $ACTORGRAD_BIN (set by ctest to $<TARGET_FILE:actorgrad>).
std::string actorgrad_binary();

/// One child process.
class ChildProcess {
public:
  /// How to start it.
  struct Options {
    /// Working directory; empty: the test's.
    std::string cwd;
    /// File for its standard input; empty: /dev/null.
    std::string stdin_file;
  };

  /// Starts `argv` (argv[0] is the program's path).
  explicit ChildProcess(std::vector<std::string> argv, Options options);
  explicit ChildProcess(std::vector<std::string> argv) : ChildProcess(std::move(argv), Options{}) {}
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  /// Waits until standard output holds `text` after `from` (an offset into
  /// out()), or `wait` passed, or it closed its output. Returns the offset
  /// of `text`, or npos.
  std::size_t wait_for_output(const std::string& text, std::chrono::milliseconds wait,
                              std::size_t from = 0);
  /// Waits at most `wait` for it to exit. Returns the exit code (128 + N
  /// when killed by signal N), or nullopt on timeout; once it returned a
  /// code, out() and err() hold all the output.
  std::optional<int> wait(std::chrono::milliseconds wait);
  /// Sends `sig`.
  void signal(int sig);
  /// SIGKILL and reap (idempotent).
  void kill();
  /// Whether it has exited and was reaped.
  bool exited() const { return pid_ <= 0; }
  /// Standard output and error read so far.
  std::string out() const;
  std::string err() const;

private:
  /// The reader thread: appends both pipes to out_ and err_ until both close.
  void read_pipes(int out_fd, int err_fd);
  /// Waits (at most `wait`) until the reader saw both pipes close.
  void wait_closed(std::chrono::milliseconds wait);

  pid_t pid_ = -1;
  int status_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  /// Guarded by mutex_.
  std::string out_;
  std::string err_;
  bool closed_ = false;
  std::thread reader_;
};

/// The result of run().
struct RunResult {
  /// Exit code, 128 + signal, or -1 when it ran past the limit (then killed).
  int status = -1;
  std::string out;
  std::string err;
  /// Wall time it ran.
  double seconds = 0;
};

/// Runs `argv` to completion, at most `limit`.
RunResult run(std::vector<std::string> argv, std::chrono::milliseconds limit,
              ChildProcess::Options options = {});

} // namespace actorgrad::testing
