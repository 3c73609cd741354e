#include "actorgrad/actors/detail/handoff.h"

#include <vector>

#include <caf/system_messages.hpp>

#include "actorgrad/actors/detail/message_type.h"
#include "actorgrad/actors/detail/post.h"

namespace actorgrad::detail {

void hand_off(Runner& r, const std::shared_ptr<GraphTaskBase>& task, ReadyTask&& first) {
  caf::blocking_actor& self = r.mailbox();
  EngineCore& core = r.core();
  core.handoffs.fetch_add(1, std::memory_order_relaxed);
  if (auto observer = core.observer.load(std::memory_order_acquire)) [[unlikely]]
    observer->handoff(r.actor(), *task);
  post(core.pool, msg::Handoff{task, std::move(first), r.take_queue(),
                               caf::actor_cast<caf::actor>(&self)});
  caf::actor server;
  std::vector<caf::mailbox_element_ptr> early; // arrived before Serving
  for (;;) {
    auto element = self.dequeue();
    auto& content = element->content();
    const MessageType type(content);
    if (type.is<msg::HandBack>()) {
      r.adopt_queue(std::move(content.get_mutable_as<msg::HandBack>(0).queue));
      return;
    }
    if (type.is<msg::Serving>()) {
      server = content.get_as<msg::Serving>(0).worker;
      for (auto& e : early)
        server->enqueue(std::move(e), nullptr);
      early.clear();
    } else if (type.is<caf::down_msg>() || type.is<caf::exit_msg>()) {
      r.handle(*element);
    } else if (server) {
      server->enqueue(std::move(element), nullptr);
    } else {
      early.push_back(std::move(element));
    }
  }
}

void serve_handoff(Runner& r, msg::Handoff&& h) {
  ReadyQueue own = r.take_queue();
  r.adopt_queue(std::move(h.queue));
  post(h.requester, msg::Serving{caf::actor_cast<caf::actor>(&r.mailbox())});
  // The handed-off call is a reentrant frame on this thread too, so no
  // thread ever holds more than max_recursion_depth of them.
  r.reentrant_frames() = 1;
  r.core().note_reentrant_frames(1);
  try {
    r.coordinate_here(h.task, std::move(h.first));
  } catch (...) { // e.g. a device the engine does not serve: the requester rethrows it
    h.task->set_error(std::current_exception());
  }
  r.reentrant_frames() = 0;
  r.drain_mailbox(); // what the requester forwarded so far belongs in its queue
  post(h.requester, msg::HandBack{r.take_queue()});
  r.adopt_queue(std::move(own));
}

} // namespace actorgrad::detail
