#pragma once
/// @file node_id.h
/// The handle of a node in a define-once Graph.

#include <compare>
#include <cstdint>
#include <limits>

namespace actorgrad::define_once {

/// Index of a node in its Graph (nodes are never removed, so ids stay valid).
struct NodeId {
  std::uint32_t index = std::numeric_limits<std::uint32_t>::max();

  friend constexpr auto operator<=>(NodeId, NodeId) = default;
};

} // namespace actorgrad::define_once
