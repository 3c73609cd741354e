#include "actorgrad/actors/trace/event.h"

namespace actorgrad::trace {

const char* message_name(MessageKind k) {
  switch (k) {
  case MessageKind::grad: return "Grad";
  case MessageKind::task: return "Task";
  case MessageKind::wake_up: return "WakeUp";
  case MessageKind::remote_grad: return "RemoteGrad";
  case MessageKind::remote_ack: return "RemoteAck";
  case MessageKind::none: break;
  }
  return "none";
}

MessageKind parse_message_name(const std::string& name) {
  for (MessageKind k : {MessageKind::grad, MessageKind::task, MessageKind::wake_up,
                        MessageKind::remote_grad, MessageKind::remote_ack})
    if (name == message_name(k))
      return k;
  return MessageKind::none;
}

} // namespace actorgrad::trace
