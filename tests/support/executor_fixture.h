#pragma once
/// @file executor_fixture.h
/// Runs a test binary against the executor named by ACTORGRAD_EXECUTOR
/// (`reference` or `actor`, the default), so one suite checks both engines.
///
/// Use once per test file: `BOOST_TEST_GLOBAL_FIXTURE(ExecutorFromEnv);`

#include <string>

namespace actorgrad::testing {

/// Installs the executor named by ACTORGRAD_EXECUTOR as the default.
struct ExecutorFromEnv {
  ExecutorFromEnv();
  /// `reference` or `actor`.
  static std::string name();
};

} // namespace actorgrad::testing
