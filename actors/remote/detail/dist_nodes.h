#pragma once
/// @file dist_nodes.h
/// The two nodes a remote call records (PyTorch's SendRpcBackward and
/// RecvRpcBackward).
/// Internal (actors/remote/detail/, not installed).

#include <cstdint>
#include <memory>
#include <string>

#include <caf/actor.hpp>

#include "actorgrad/libengine/autograd/node.h"

namespace actorgrad::remote::detail {

/// Recorded on the process that *sends* a tensor requiring grad: its next
/// edge is the tensor's gradient edge, and it is the root of the local
/// backward that runs when the receiver sends the tensor's gradient back.
/// It passes the gradient through.
class SendBackward final : public Node {
public:
  /// Records a send of `tensor` under `send_id` in context `context_id`.
  SendBackward(std::uint64_t context_id, std::uint64_t send_id, const Tensor& tensor);
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return "DistSendBackward"; }
  /// The context this send belongs to.
  std::uint64_t context_id() const { return context_id_; }
  /// Its id within the context (what the receiver's RecvBackward names).
  std::uint64_t send_id() const { return send_id_; }

private:
  std::uint64_t context_id_;
  std::uint64_t send_id_;
};

/// The grad_fn of a tensor *received* from another process: the gradient
/// that reaches it belongs to send node `peer_send_id` on `peer`.
///
/// The distributed backward never runs it: each local pass captures the
/// gradient at its input (as grad() captures an input's gradient) and the
/// Agent sends it on (Note [Distributed backward] in agent.cpp). A plain
/// local backward that reaches it fails with an error saying so.
class RecvBackward final : public Node {
public:
  /// `peer` is the agent of the process that sent the tensor, `peer_name`
  /// its name in errors.
  RecvBackward(std::uint64_t context_id, caf::actor peer, std::string peer_name,
               std::uint64_t peer_send_id);
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return "DistRecvBackward"; }
  /// The context this receive belongs to.
  std::uint64_t context_id() const { return context_id_; }
  /// The agent owning the matching send node.
  const caf::actor& peer() const { return peer_; }
  /// `host:port` of a worker, or the caller's name.
  const std::string& peer_name() const { return peer_name_; }
  /// Id of the matching send node on the peer.
  std::uint64_t peer_send_id() const { return peer_send_id_; }

private:
  std::uint64_t context_id_;
  caf::actor peer_;
  std::string peer_name_;
  std::uint64_t peer_send_id_;
};

} // namespace actorgrad::remote::detail
