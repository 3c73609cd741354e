#pragma once
/// @file errors.h
/// Failures of CAF's network layer in words: what went wrong, with the
/// operating system's own text where CAF keeps only a code
/// (`cannot_open_port`, `cannot_connect_to_node`).
/// Internal (actors/remote/detail/, not installed).

#include <chrono>
#include <cstdint>
#include <string>

namespace caf {
class error;
}

namespace actorgrad::remote::detail {

/// A CAF error of a remote request or connection in words, without CAF's
/// enum names: `no reply within 1500 ms`, `the peer does not speak CAF's
/// network protocol (not an actorgrad worker)`, ... `timeout` is the wait
/// the request had.
std::string describe(const caf::error& e, std::chrono::milliseconds timeout);

/// Why a monitored peer went down (a down message's reason), in words:
/// `its connection dropped (the process exited or the network failed)`.
std::string describe_exit(const caf::error& reason);

/// Why listening on `host:port` fails, asked of the operating system
/// (`Address already in use`, `cannot resolve host 'x': ...`); "" when a
/// listening socket can be opened there now.
std::string listen_problem(const std::string& host, std::uint16_t port);

/// Why a TCP connection to `host:port` fails, asked of the operating
/// system within `wait` (`Connection refused`, `no answer within 200 ms`);
/// "" when it connects.
std::string connect_problem(const std::string& host, std::uint16_t port,
                            std::chrono::milliseconds wait);

} // namespace actorgrad::remote::detail
