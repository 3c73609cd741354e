#pragma once
/// @file stress_util.h
/// Helpers of the stress tests (tests/stress/*.cpp): the time budget, a
/// failure log that worker threads may write to (Boost.Test assertions are
/// for the main thread only), bounded waits that report a hang instead of
/// blocking, and a gradient comparison.

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad::testing {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

/// How long a time-bounded case runs: ACTORGRAD_STRESS_SECONDS when set
/// (longer soaks), else `ci_default` (the bound that keeps CI short).
inline Seconds budget(double ci_default) {
  const char* env = std::getenv("ACTORGRAD_STRESS_SECONDS");
  return Seconds(env && *env ? std::max(1.0, std::atof(env)) : ci_default);
}

/// The time `s` from now.
inline Clock::time_point after(Seconds s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(s);
}

/// Set when an operation hung and its thread was left behind (detached):
/// the process cannot shut down cleanly then (see ExitAfterHang).
inline std::atomic<bool>& hung() {
  static std::atomic<bool> flag{false}; // written by any failing wait, read at module end
  return flag;
}

/// Global fixture: after a hang, ends the process with status 1 once the
/// cases have run (their failures are already logged), instead of hanging
/// in destructors that wait for the stuck threads.
struct ExitAfterHang {
  ~ExitAfterHang() {
    if (!hung().load())
      return;
    std::fprintf(stderr, "stress: an operation hung (see the errors above); exiting without "
                         "running the destructors that would wait for it\n");
    std::fflush(nullptr);
    std::_Exit(1);
  }
};

/// Ends the process at once with status 1 after saying what hung: for a
/// wait whose stuck operation owns state the test cannot leave behind.
[[noreturn]] inline void exit_on_hang(const std::string& what) {
  std::fprintf(stderr, "stress: HANG: %s; exiting\n", what.c_str());
  std::fflush(nullptr);
  std::_Exit(1);
}

/// Failures seen by any thread; the main thread reports them.
class Failures {
public:
  void add(std::string what) {
    std::lock_guard<std::mutex> lock(m_); // test bookkeeping, not the engine
    ++count_;
    if (first_.size() < 5)
      first_.push_back(std::move(what));
  }
  int count() const {
    std::lock_guard<std::mutex> lock(m_);
    return count_;
  }
  /// The first few, one per line.
  std::string text() const {
    std::lock_guard<std::mutex> lock(m_);
    std::string s;
    for (const auto& f : first_)
      s += f + "\n";
    return s;
  }

private:
  mutable std::mutex m_;
  int count_ = 0;
  std::vector<std::string> first_;
};

/// Waits at most `limit` for `f`; false on timeout.
template <class T>
bool ready_within(std::future<T>& f, Seconds limit) {
  return f.wait_for(limit) == std::future_status::ready;
}

/// Runs `fn` on a new thread and waits at most `limit` for it. Returns the
/// thread's exception (nullptr on success), or nullopt when it did not
/// finish: the thread is then detached and hung() set.
template <class F>
std::optional<std::exception_ptr> run_bounded(F fn, Seconds limit) {
  std::packaged_task<void()> task(std::move(fn));
  auto done = task.get_future();
  std::thread th(std::move(task));
  if (!ready_within(done, limit)) {
    th.detach();
    hung() = true;
    return std::nullopt;
  }
  th.join();
  try {
    done.get();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

/// The message of `e` (or a note that it is not a std::exception).
inline std::string message_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "(not a std::exception)";
  }
}

/// Where `act` differs from `ref` beyond |a - b| <= tol * max(|a|, |b|, 1)
/// (or in count, definedness, shape, device); empty when they agree.
inline std::string difference(const variable_list& ref, const variable_list& act, double tol) {
  std::ostringstream os;
  if (ref.size() != act.size()) {
    os << ref.size() << " results expected, " << act.size() << " returned";
    return os.str();
  }
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (ref[i].defined() != act[i].defined()) {
      os << "result " << i << " is defined only in the "
         << (ref[i].defined() ? "reference" : "engine");
      return os.str();
    }
    if (!ref[i].defined())
      continue;
    if (ref[i].shape() != act[i].shape() || ref[i].device() != act[i].device()) {
      os << "result " << i << " is " << act[i].describe() << ", expected " << ref[i].describe();
      return os.str();
    }
    const auto a = ref[i].to_vector(), b = act[i].to_vector();
    for (std::size_t k = 0; k < a.size(); ++k) {
      const double scale = std::max({std::abs(a[k]), std::abs(b[k]), 1.0});
      if (!(std::abs(a[k] - b[k]) <= tol * scale)) {
        os << "result " << i << "[" << k << "] = " << b[k] << ", expected " << a[k];
        return os.str();
      }
    }
  }
  return {};
}

/// True when `text` contains `part`.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace actorgrad::testing
