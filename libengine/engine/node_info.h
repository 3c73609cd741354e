#pragma once
/// @file node_info.h
/// A node as observers and error messages see it, whatever its graph type.

#include <cstdint>
#include <string>

#include "actorgrad/device/device.h"

namespace actorgrad {

/// What observers and errors need to know of a node, whatever its type.
struct NodeInfo {
  /// The node's identity (its address; null: no node).
  const void* id = nullptr;
  std::string name;
  std::uint64_t sequence_nr = 0;
  Device device;
  /// The device stream it runs on (0: default or none).
  int stream = 0;
};

} // namespace actorgrad
