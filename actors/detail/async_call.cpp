#include "actorgrad/actors/detail/async_call.h"

namespace actorgrad::detail {

void run_call(Runner& runner, msg::AsyncCall&& call, const caf::actor& self) {
  std::exception_ptr error;
  variable_list grads;
  try {
    runner.coordinate(call.task, std::move(call.first));
    grads = call.task->finish();
  } catch (...) {
    error = std::current_exception();
  }
  call.task.reset();
  EngineCore& core = runner.core();
  if (!core.park_coordinator(self)) // Note [Idle coordinator slot]
    post(core.pool, msg::Idle{self, true});
  call.done(error, std::move(grads));
}

} // namespace actorgrad::detail
