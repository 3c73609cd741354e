#include "tests/support/executor_fixture.h"

#include <cstdlib>
#include <stdexcept>

#include "actorgrad/actors/default_engine.h"

namespace actorgrad::testing {

std::string ExecutorFromEnv::name() {
  const char* env = std::getenv("ACTORGRAD_EXECUTOR");
  return env ? std::string(env) : std::string("actor");
}

ExecutorFromEnv::ExecutorFromEnv() {
  auto n = name();
  if (n == "reference")
    use_reference_executor();
  else if (n == "actor")
    use_actor_engine();
  else
    throw std::invalid_argument("ACTORGRAD_EXECUTOR must be 'reference' or 'actor', not '" + n +
                                "'");
}

} // namespace actorgrad::testing
