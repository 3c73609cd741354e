#include "actorgrad/actors/remote/detail/dist_nodes.h"

#include <utility>

#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/engine/errors.h"

namespace actorgrad::remote::detail {

SendBackward::SendBackward(std::uint64_t context_id, std::uint64_t send_id, const Tensor& tensor)
  : Node({gradient_edge(tensor)}), context_id_(context_id), send_id_(send_id) {
  add_input_metadata(tensor);
}

variable_list SendBackward::apply(variable_list&& grads) { return std::move(grads); }

RecvBackward::RecvBackward(std::uint64_t context_id, caf::actor peer, std::string peer_name,
                           std::uint64_t peer_send_id)
  : context_id_(context_id), peer_(std::move(peer)), peer_name_(std::move(peer_name)),
    peer_send_id_(peer_send_id) {}

variable_list RecvBackward::apply(variable_list&&) {
  throw EngineError("DistRecvBackward: this tensor was received from " + peer_name_ +
                    " in distributed context " + std::to_string(context_id_) +
                    "; its gradient must be computed with remote::dist_backward, not a local "
                    "backward");
}

} // namespace actorgrad::remote::detail
