#include "actorgrad/actors/default_engine.h"

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/engine/reference_executor.h"

namespace actorgrad {

std::vector<Device> parse_devices(const std::string& text) {
  std::vector<Device> devices;
  if (text.find(',') == std::string::npos && text.rfind("sim:", 0) == 0) {
    int n = Device::parse(text).index;
    for (int i = 0; i < n; ++i)
      devices.push_back(Device::sim(i));
    return devices;
  }
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty() && item != "cpu")
      devices.push_back(Device::parse(item));
  return devices;
}

namespace {

/// The whole number from `low` to `high` of environment variable `name`,
/// `unset` when it is unset or empty; throws naming it and `what` it is.
std::size_t count_from_env(const char* name, std::size_t unset, std::size_t low, std::size_t high,
                           const char* what) {
  const char* env = std::getenv(name);
  if (!env || !*env)
    return unset;
  const std::string text = env;
  std::size_t n = 0;
  const bool digits = text.size() <= 3 && text.find_first_not_of("0123456789") == std::string::npos;
  if (digits)
    n = std::stoul(text);
  if (!digits || n < low || n > high)
    throw std::invalid_argument(std::string(name) + " is '" + text + "': expected " + what + ", " +
                                std::to_string(low) + " to " + std::to_string(high));
  return n;
}

} // namespace

std::size_t cpu_workers_from_env(const char* name) {
  return count_from_env(name, 1, 1, 256, "the number of threads that run CPU nodes");
}

EngineConfig cpu_lanes_from_env(EngineConfig config) {
  config.cpu_workers = cpu_workers_from_env();
  config.cpu_spread_branch =
    count_from_env("ACTORGRAD_CPU_SPREAD_BRANCH", config.cpu_spread_branch, 1, 999,
                   "the nodes of its own a branch needs for a call to spread");
  return config;
}

namespace {

// ACTORGRAD_DEVICES (parse_devices). Unset: sim:0..sim:3 (idle workers only
// wait on their mailbox).
std::vector<Device> devices_from_env() {
  const char* env = std::getenv("ACTORGRAD_DEVICES");
  return parse_devices(env ? env : "sim:4");
}

// Installed as the default executor when the program links the actor
// engine; builds the engine on first use, not at static initialization.
class LazyDefaultEngine final : public Executor {
public:
  variable_list execute(const edge_list& roots, variable_list root_grads,
                        const ExecuteOptions& options, const edge_list& outputs) override {
    return default_engine().execute(roots, std::move(root_grads), options, outputs);
  }
};

std::shared_ptr<Executor> lazy_default() {
  static auto lazy = std::make_shared<LazyDefaultEngine>();
  return lazy;
}

} // namespace

// Note [The default engine is never destroyed]
// CAF 0.17.6's actor_system cannot be destroyed during static destruction:
// a program whose only content is a function-local static actor_system
// reads freed memory in ~actor_system at exit (valgrind shows it; without
// valgrind it is heap corruption). So the process-wide engine is created
// on first use and deliberately never destroyed; its idle worker threads
// end with the process. An application that needs an orderly shutdown
// owns an Engine and destroys it before main returns.
Engine& default_engine() {
  static Engine* engine = [] {
    return new Engine(cpu_lanes_from_env(EngineConfig{devices_from_env()}));
  }();
  return *engine;
}

void use_actor_engine() { set_default_executor(lazy_default()); }

void use_reference_executor() { set_default_executor(std::make_shared<ReferenceExecutor>()); }

} // namespace actorgrad

/// Forced into every program that links actorgrad_actors (see
/// actors/CMakeLists.txt), so linking the actor engine makes it the default.
extern "C" const bool actorgrad_actor_engine_registrar = [] {
  actorgrad::use_actor_engine();
  return true;
}();
