#include "actorgrad/actors/detail/engine_actor.h"

namespace actorgrad::detail {

void EngineActor::enqueue(caf::mailbox_element_ptr ptr, caf::execution_unit* host) {
  caf::blocking_actor::enqueue(std::move(ptr), host);
  doorbell_.ring();
}

} // namespace actorgrad::detail
