#pragma once
/// @file train.h
/// `actorgrad train`: trains a small MLP classifier on two spirals, timing
/// every backward pass, on the actor engine (or the reference executor).

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace actorgrad::cli {

/// The flags of `actorgrad train`, as parsed.
struct TrainOptions {
  std::int64_t steps = 1000;
  /// 0: the optimizer's default (0.01 for adam, 0.1 for sgd).
  double lr = 0;
  std::int64_t hidden = 64;
  std::uint64_t seed = 1;
  std::int64_t log_every = 100;
  std::string executor = "actor";
  /// `cpu` or `sim:N` (flags.h device_set).
  std::string devices = "cpu";
  /// EngineConfig::cpu_workers (engine_flags.h).
  std::int64_t cpu_workers = 1;
  std::string optimizer = "adam";
  double momentum = 0.9;
  std::string activation = "tanh";
  std::string dtype = "float32";
  std::int64_t points = 500;
  std::int64_t batch = 0;
  /// Chrome trace of one step's backward ("" for none, "-" for stdout).
  std::string trace;
  /// The step --trace records; 0 for the last.
  std::int64_t trace_step = 0;
  /// HTML report of that step ("" for none).
  std::string html;
  bool operator==(const TrainOptions&) const = default;
};

/// Adds the `train` subcommand to `app`, parsing into `o`; returns it.
CLI::App* add_train(CLI::App& app, TrainOptions& o);

/// Runs `actorgrad train`; returns the exit status.
int run_train(const TrainOptions& o);

} // namespace actorgrad::cli
