#pragma once
/// @file protocol_version.h
/// The version of the messages processes exchange, which both ends of a
/// connection must share.

#include <cstdint>

namespace actorgrad::remote {

/// The version of the messages of detail/protocol.h (Note [Protocol
/// version]): a process refuses a peer of another version, and `actorgrad
/// worker` logs it when it starts.
inline constexpr std::uint32_t kProtocolVersion = 2;

} // namespace actorgrad::remote
