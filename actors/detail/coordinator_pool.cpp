#include "actorgrad/actors/detail/coordinator_pool.h"

#include <vector>

#include "actorgrad/actors/detail/async_call.h"
#include "actorgrad/actors/detail/message_type.h"
#include "actorgrad/actors/detail/post.h"

namespace actorgrad::detail {

CoordinatorPool::CoordinatorPool(caf::actor_config& cfg, std::shared_ptr<EngineCore> core)
  : EngineActor(cfg), core_(std::move(core)) {}

void CoordinatorPool::act() {
  std::vector<caf::actor> all, idle;
  for (;;) {
    auto element = dequeue();
    auto& content = element->content();
    const MessageType type(content);
    if (type.is<msg::AsyncCall>()) {
      if (idle.empty()) {
        all.push_back(spawn<AsyncCoordinator>(core_));
        idle.push_back(all.back());
      }
      caf::actor coordinator = std::move(idle.back());
      idle.pop_back();
      coordinator->enqueue(std::move(element), nullptr);
    } else if (type.is<msg::Idle>()) {
      idle.push_back(content.get_as<msg::Idle>(0).coordinator);
    } else if (type.is<msg::Shutdown>()) {
      for (auto& c : all)
        post<caf::message_priority::high>(c, msg::Shutdown{});
      for (auto& c : all)
        wait_for(c);
      core_->take_coordinator(); // drops the parked one's reference (Note [Idle coordinator slot])
      return;
    }
  }
}

AsyncCoordinator::AsyncCoordinator(caf::actor_config& cfg, std::shared_ptr<EngineCore> core)
  : EngineActor(cfg), core_(std::move(core)) {}

void AsyncCoordinator::hand(msg::AsyncCall&& call) {
  handed_.emplace(std::move(call));
  call_handed_.store(true);
  wake();
}

bool AsyncCoordinator::run_handed_call(Runner& runner, const caf::actor& self) {
  await_mail_or([this] { return call_handed_.load(); });
  if (!call_handed_.load(std::memory_order_acquire))
    return false;
  msg::AsyncCall call = std::move(*handed_);
  handed_.reset();
  call_handed_.store(false, std::memory_order_relaxed); // only hand() sets it, after a take
  run_call(runner, std::move(call), self);
  return true;
}

void AsyncCoordinator::act() {
  Runner runner(*core_, this, ObservedActor::Role::async_coordinator, ReadyQueue{});
  const auto self = caf::actor_cast<caf::actor>(this);
  for (;;) {
    if (!run_handed_call(runner, self)) {
      auto element = dequeue();
      auto& content = element->content();
      const MessageType type(content);
      if (type.is<msg::AsyncCall>())
        run_call(runner, std::move(content.get_mutable_as<msg::AsyncCall>(0)), self);
      else if (type.is<msg::Shutdown>())
        return;
      else
        runner.handle(*element); // a straggler of a call coordinated before
    }
    if (runner.shutdown_pending())
      return; // a Shutdown that arrived during the call (Note [Shutdown during a frame])
  }
}

} // namespace actorgrad::detail
