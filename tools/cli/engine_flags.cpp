#include "tools/cli/engine_flags.h"

#include "tools/cli/flags.h"

namespace actorgrad::cli {

CLI::Option* add_cpu_workers(CLI::App& cmd, std::int64_t& n) {
  return cmd
    .add_option("--cpu-workers", n,
                "threads that run the CPU nodes of a backward, the caller included; with more "
                "than 1 the ready nodes of a CPU-only backward (--devices cpu) spread over them")
    ->check(integer_in(1, 256));
}

EngineConfig engine_config(const std::string& devices, std::int64_t cpu_workers) {
  EngineConfig config;
  config.devices = device_list(devices);
  config.cpu_workers = static_cast<std::size_t>(cpu_workers);
  return config;
}

} // namespace actorgrad::cli
