#include "actorgrad/actors/detail/reentrant_pool.h"

#include <vector>

#include "actorgrad/actors/detail/handoff.h"
#include "actorgrad/actors/detail/post.h"

namespace actorgrad::detail {

ReentrantPool::ReentrantPool(caf::actor_config& cfg, std::shared_ptr<EngineCore> core)
  : caf::blocking_actor(cfg), core_(std::move(core)) {}

void ReentrantPool::act() {
  std::vector<caf::actor> all;
  std::vector<caf::actor> idle;
  for (;;) {
    auto element = dequeue();
    auto& content = element->content();
    if (content.match_elements<msg::Handoff>()) {
      if (idle.empty()) {
        all.push_back(spawn<PoolWorker>(core_));
        idle.push_back(all.back());
        core_->pool_workers.fetch_add(1, std::memory_order_relaxed);
      }
      caf::actor worker = std::move(idle.back());
      idle.pop_back();
      worker->enqueue(std::move(element), nullptr);
    } else if (content.match_elements<msg::Idle>()) {
      idle.push_back(content.get_as<msg::Idle>(0).worker);
    } else if (content.match_elements<msg::Shutdown>()) {
      for (auto& w : all)
        post<caf::message_priority::high>(w, msg::Shutdown{});
      for (auto& w : all)
        wait_for(w);
      return;
    }
  }
}

PoolWorker::PoolWorker(caf::actor_config& cfg, std::shared_ptr<EngineCore> core)
  : caf::blocking_actor(cfg), core_(std::move(core)) {}

void PoolWorker::act() {
  Runner runner(*core_, this, ObservedActor::Role::pool_worker, ReadyQueue{});
  for (;;) {
    auto element = dequeue();
    auto& content = element->content();
    if (content.match_elements<msg::Handoff>()) {
      serve_handoff(runner, std::move(content.get_mutable_as<msg::Handoff>(0)));
      post(core_->pool, msg::Idle{caf::actor_cast<caf::actor>(this)});
    } else if (content.match_elements<msg::Shutdown>()) {
      return;
    } else {
      runner.handle(*element); // a straggler of a queue served before: routed on
    }
  }
}

} // namespace actorgrad::detail
