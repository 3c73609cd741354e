#include "actorgrad/actors/detail/reentrant_pool.h"

#include <vector>

#include "actorgrad/actors/detail/async_call.h"
#include "actorgrad/actors/detail/handoff.h"
#include "actorgrad/actors/detail/message_type.h"
#include "actorgrad/actors/detail/post.h"

namespace actorgrad::detail {

ReentrantPool::ReentrantPool(caf::actor_config& cfg, std::shared_ptr<EngineCore> core)
  : EngineActor(cfg), core_(std::move(core)) {}

void ReentrantPool::act() {
  using Role = ObservedActor::Role;
  std::vector<caf::actor> all;
  std::vector<caf::actor> idle_workers, idle_coordinators;
  // Forwards `element` to an idle actor of `role` from `idle`, or a new one.
  auto forward = [&](caf::mailbox_element_ptr element, Role role, std::vector<caf::actor>& idle) {
    if (idle.empty()) {
      all.push_back(spawn<PoolWorker>(core_, role));
      idle.push_back(all.back());
      if (role == Role::pool_worker)
        core_->pool_workers.fetch_add(1, std::memory_order_relaxed);
    }
    caf::actor actor = std::move(idle.back());
    idle.pop_back();
    actor->enqueue(std::move(element), nullptr);
  };
  for (;;) {
    auto element = dequeue();
    auto& content = element->content();
    const MessageType type(content);
    if (type.is<msg::Handoff>()) {
      forward(std::move(element), Role::pool_worker, idle_workers);
    } else if (type.is<msg::AsyncCall>()) {
      forward(std::move(element), Role::async_coordinator, idle_coordinators);
    } else if (type.is<msg::Idle>()) {
      const auto& m = content.get_as<msg::Idle>(0);
      (m.async_coordinator ? idle_coordinators : idle_workers).push_back(m.worker);
    } else if (type.is<msg::Shutdown>()) {
      for (auto& w : all)
        post<caf::message_priority::high>(w, msg::Shutdown{});
      for (auto& w : all)
        wait_for(w);
      core_->take_coordinator(); // drops the parked one's reference (Note [Idle coordinator slot])
      return;
    }
  }
}

PoolWorker::PoolWorker(caf::actor_config& cfg, std::shared_ptr<EngineCore> core,
                       ObservedActor::Role role)
  : EngineActor(cfg), core_(std::move(core)), role_(role) {}

void PoolWorker::hand(msg::AsyncCall&& call) {
  handed_.emplace(std::move(call));
  call_handed_.store(true);
  wake();
}

bool PoolWorker::run_handed_call(Runner& runner, const caf::actor& self) {
  await_mail_or([this] { return call_handed_.load(); });
  if (!call_handed_.load(std::memory_order_acquire))
    return false;
  msg::AsyncCall call = std::move(*handed_);
  handed_.reset();
  call_handed_.store(false, std::memory_order_relaxed); // only hand() sets it, after a take
  run_call(runner, std::move(call), self);
  return true;
}

void PoolWorker::act() {
  Runner runner(*core_, this, role_, ReadyQueue{});
  const auto self = caf::actor_cast<caf::actor>(this);
  for (;;) {
    if (run_handed_call(runner, self)) {
      if (runner.shutdown_pending())
        return; // a Shutdown that arrived during the call (Note [Shutdown during a frame])
      continue;
    }
    auto element = dequeue();
    auto& content = element->content();
    const MessageType type(content);
    if (type.is<msg::Handoff>()) {
      serve_handoff(runner, std::move(content.get_mutable_as<msg::Handoff>(0)));
      post(core_->pool, msg::Idle{self, false});
    } else if (type.is<msg::AsyncCall>()) {
      run_call(runner, std::move(content.get_mutable_as<msg::AsyncCall>(0)), self);
      if (runner.shutdown_pending())
        return; // a Shutdown that arrived during the call (Note [Shutdown during a frame])
    } else if (type.is<msg::Shutdown>()) {
      return;
    } else {
      runner.handle(*element); // a straggler of a queue served before: routed on
    }
  }
}

} // namespace actorgrad::detail
