#include "actorgrad/actors/remote/detail/protocol.h"

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>

namespace actorgrad::remote::detail {

void register_remote_types(caf::actor_system_config& cfg) {
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.app-identifiers", std::vector<std::string>{"actorgrad"});
  cfg.add_message_type<Hello>("actorgrad.hello");
  cfg.add_message_type<HelloReply>("actorgrad.hello_reply");
  cfg.add_message_type<WireTensor>("actorgrad.tensor");
  cfg.add_message_type<std::vector<WireTensor>>("actorgrad.tensor_list");
  cfg.add_message_type<ForwardRequest>("actorgrad.forward_request");
  cfg.add_message_type<ForwardReply>("actorgrad.forward_reply");
  cfg.add_message_type<RemoteGrad>("actorgrad.grad_request"); // named GradRequest before
  cfg.add_message_type<Ack>("actorgrad.ack");
  cfg.add_message_type<CreateParam>("actorgrad.create_param");
  cfg.add_message_type<FetchParam>("actorgrad.fetch_param");
  cfg.add_message_type<ParamReply>("actorgrad.param_reply");
  cfg.add_message_type<GradientsRequest>("actorgrad.gradients_request");
  cfg.add_message_type<GradientsReply>("actorgrad.gradients_reply");
  cfg.add_message_type<ReleaseContext>("actorgrad.release_context");
  cfg.add_message_type<StatsRequest>("actorgrad.stats_request");
  cfg.add_message_type<StatsReply>("actorgrad.stats_reply");
}

} // namespace actorgrad::remote::detail
