/// @file main.cpp
/// `actorgrad <command> [flags]`: dispatches to one subcommand per file.

#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "tools/cli/commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* summary;
};

// Add new subcommands here (declared in commands.h, one .cpp each).
constexpr Command kCommands[] = {
    {"train", actorgrad::cli::run_train,
     "train a small MLP on two spirals with the actor engine"},
    {"trace", actorgrad::cli::run_trace,
     "record one backward pass: Chrome trace, HTML report, summary"},
    {"worker", actorgrad::cli::run_worker,
     "serve distributed autograd on a port (remote forward ops and backward)"},
};

void print_usage(std::FILE* out) {
  std::fprintf(out, "usage: actorgrad <command> [flags]\n\ncommands:\n");
  for (const auto& c : kCommands)
    std::fprintf(out, "  %-8s %s\n", c.name, c.summary);
  std::fprintf(out, "\n`actorgrad <command> --help` shows the flags of a command.\n");
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return actorgrad::cli::kUsageError;
  }
  std::string_view cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    print_usage(stdout);
    return 0;
  }
  for (const auto& c : kCommands) {
    if (cmd == c.name) {
      try {
        return c.run(argc - 1, argv + 1);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "actorgrad %s: error: %s\n", c.name, e.what());
        return 1;
      }
    }
  }
  std::fprintf(stderr, "actorgrad: unknown command '%s'\n\n", argv[1]);
  print_usage(stderr);
  return actorgrad::cli::kUsageError;
}
