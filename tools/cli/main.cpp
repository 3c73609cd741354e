/// @file main.cpp
/// `actorgrad <command> [flags]`: one subcommand per file (train.h,
/// trace.h, worker.h), all parsed by one CLI11 app (flags.h).

#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "actorgrad/version.h"
#include "tools/cli/flags.h"
#include "tools/cli/trace.h"
#include "tools/cli/train.h"
#include "tools/cli/worker.h"

using namespace actorgrad::cli;

int main(int argc, char** argv) {
  CLI::App app{"actorgrad: a reverse-mode autograd engine whose scheduler is an actor system",
               "actorgrad"};
  use_help_format(app);
  app.set_version_flag("--version", "actorgrad " ACTORGRAD_VERSION);
  app.footer("`actorgrad COMMAND --help` shows the flags of a command.");
  app.allow_extras();
  app.option_defaults()->always_capture_default()->multi_option_policy(
    CLI::MultiOptionPolicy::TakeLast);

  TrainOptions train;
  TraceOptions trace;
  WorkerOptions worker;
  const std::vector<std::pair<CLI::App*, std::function<int()>>> commands = {
    {add_train(app, train), [&] { return run_train(train); }},
    {add_trace(app, trace), [&] { return run_trace(trace); }},
    {add_worker(app, worker), [&] { return run_worker(worker); }},
  };
  for (const auto& [cmd, run] : commands)
    cmd->allow_extras(); // left-over arguments are reported by parse()

  if (auto status = parse(app, argc, argv))
    return *status;
  for (const auto& [cmd, run] : commands) {
    if (!cmd->parsed())
      continue;
    try {
      return run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "actorgrad %s: error: %s\n", cmd->get_name().c_str(), e.what());
      return 1;
    }
  }
  return kUsageError; // parse() returns a status when no command was given
}
