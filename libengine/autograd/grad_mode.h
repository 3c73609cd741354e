#pragma once
/// @file grad_mode.h
/// Thread-local switches: grad mode (no_grad) and anomaly detection.

namespace actorgrad {

namespace detail {
/// The switches' state, per thread; inline, so that reading them (several
/// times per node in the engine) is a load, not a call.
inline thread_local bool grad_enabled = true;
inline thread_local bool anomaly_enabled = false;
} // namespace detail

/// Whether ops record backward graphs on this thread (default on).
struct GradMode {
  static bool is_enabled() { return detail::grad_enabled; }
  static void set_enabled(bool enabled) { detail::grad_enabled = enabled; }
};

/// Sets grad mode for a scope and restores it after.
class AutoGradMode {
public:
  explicit AutoGradMode(bool enabled) : mode_(&detail::grad_enabled), prev_(*mode_) {
    *mode_ = enabled;
  }
  ~AutoGradMode() { *mode_ = prev_; }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

private:
  /// This thread's flag, looked up once (a guard lives on one thread's
  /// stack; each lookup is a few instructions, Note [Thread-locals in
  /// shared objects] in CMakeLists.txt).
  bool* mode_;
  bool prev_;
};

/// `torch.no_grad()`: ops in scope record no graph.
class NoGradGuard : public AutoGradMode {
public:
  NoGradGuard() : AutoGradMode(false) {}
};

/// Anomaly detection: when on for the thread that starts a backward, every
/// node's outputs are checked for NaN and the error names the node.
struct AnomalyMode {
  static bool is_enabled() { return detail::anomaly_enabled; }
  static void set_enabled(bool enabled) { detail::anomaly_enabled = enabled; }
};

/// Turns anomaly detection on for a scope (`torch.autograd.detect_anomaly`).
class DetectAnomalyGuard {
public:
  DetectAnomalyGuard() : prev_(AnomalyMode::is_enabled()) { AnomalyMode::set_enabled(true); }
  ~DetectAnomalyGuard() { AnomalyMode::set_enabled(prev_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

private:
  bool prev_;
};

} // namespace actorgrad
