#pragma once
/// @file log.h
/// How a process taking part in distributed autograd reports its events.

#include <functional>
#include <string>

namespace actorgrad::remote {

/// How much an event of a Runtime matters to its operator (RuntimeConfig::log).
enum class LogLevel {
  /// Something failed: a refused handshake, a peer lost during a backward.
  warning,
  /// A peer connected or disconnected.
  info,
  /// Each request served (forward op, backward part, release).
  debug,
};

/// Receives a Runtime's events, one line of text each, from its agent's
/// thread (`actorgrad worker` prints them with a timestamp).
using LogFunction = std::function<void(LogLevel, const std::string&)>;

} // namespace actorgrad::remote
