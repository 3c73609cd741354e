#include "actorgrad/actors/observer.h"

#include <unistd.h>

namespace actorgrad {

const std::string& ObservedActor::name() const {
  if (!name_.empty())
    return name_;
  switch (role) {
  case Role::caller: name_ = "caller " + std::to_string(::gettid()); break;
  case Role::device_worker: name_ = device.str() + " worker"; break;
  case Role::async_coordinator: name_ = "async coordinator " + std::to_string(actor_id); break;
  case Role::agent: name_ = "distributed agent"; break;
  case Role::cpu_worker: name_ = "cpu worker " + std::to_string(actor_id); break;
  }
  return name_;
}

} // namespace actorgrad
