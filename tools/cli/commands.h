#pragma once
/// @file commands.h
/// Subcommands of the `actorgrad` command line. Each lives in its own file
/// (train.cpp, ...) and is registered in the table in main.cpp.

namespace actorgrad::cli {

/// `actorgrad train`: trains a small MLP on two spirals (train.cpp).
/// `argv[0]` is "train"; returns the process exit code.
int run_train(int argc, char** argv);

/// `actorgrad trace`: records one backward pass (or reads a recording) and
/// writes a Chrome trace, an HTML report and a text summary (trace.cpp).
int run_trace(int argc, char** argv);

/// `actorgrad worker`: serves distributed autograd on a port until SIGINT or
/// SIGTERM (worker.cpp, actors/remote/).
int run_worker(int argc, char** argv);

/// Exit code for a bad command line (unknown flag, bad value).
inline constexpr int kUsageError = 2;

} // namespace actorgrad::cli
