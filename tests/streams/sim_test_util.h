#pragma once
/// @file sim_test_util.h
/// Settings of the sim backend for stream tests.

#include <boost/test/unit_test.hpp>

#include "actorgrad/device/sim/race_detector.h"
#include "actorgrad/device/sim/sim_config.h"

namespace actorgrad::testing {

/// Sets the sim backend for a scope (asynchronous, the detector on, delays
/// drawn from `seed`), with no earlier race report; restores the default
/// settings after.
struct SimSettings {
  explicit SimSettings(std::uint64_t seed = 1, std::uint32_t max_delay_us = 200) {
    sim::configure(
      {.async = true, .max_delay_us = max_delay_us, .seed = seed, .detect_races = true});
    sim::clear_race_reports();
  }
  ~SimSettings() {
    sim::configure({});
    sim::clear_race_reports();
  }
  SimSettings(const SimSettings&) = delete;
  SimSettings& operator=(const SimSettings&) = delete;
};

/// All race reports so far, one per line (for failure messages).
inline std::string joined_reports() {
  std::string all;
  for (const auto& r : sim::race_reports())
    all += r + "\n";
  return all;
}

} // namespace actorgrad::testing
