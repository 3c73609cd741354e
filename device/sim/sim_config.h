#pragma once
/// @file sim_config.h
/// How simulated devices behave: synchronous, or asynchronous with delays and a race detector.

#include <cstdint>

namespace actorgrad::sim {

/// Settings of the sim backend (process-wide).
struct SimConfig {
  /// Kernels run later, on one executor thread per stream, in enqueue order
  /// (false: they run at once on the calling thread, and streams and events
  /// do nothing).
  bool async = true;
  /// Each kernel waits a random delay in [0, max_delay_us] before it runs,
  /// drawn per stream from a generator seeded by `seed` and the stream.
  std::uint32_t max_delay_us = 0;
  std::uint64_t seed = 0;
  /// Check every access to sim memory against the last write and report
  /// the unordered ones (see race_detector.h). Needs `async`.
  bool detect_races = false;
};

/// Replaces the settings. Waits for all enqueued work first, reseeds every
/// stream's delay generator, and keeps earlier race reports.
void configure(const SimConfig& config);

/// The current settings. Until configure() is called: asynchronous without
/// delay, detector off; `ACTORGRAD_SIM_ASYNC=0` in the environment makes
/// the default synchronous.
SimConfig config();

} // namespace actorgrad::sim
