#include "actorgrad/actors/remote/detail/errors.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/error.hpp>
#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>

namespace actorgrad::remote::detail {

namespace {

/// A socket closed on scope exit.
struct Socket {
  int fd;
  ~Socket() {
    if (fd >= 0)
      ::close(fd);
  }
};

using AddrList = std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)>;

/// Resolves `host:port`; on failure sets `error` and returns null.
AddrList resolve(const std::string& host, std::uint16_t port, int flags, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags;
  addrinfo* list = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
  if (rc != 0)
    error = "cannot resolve host '" + host + "': " + ::gai_strerror(rc);
  return AddrList(rc == 0 ? list : nullptr, &::freeaddrinfo);
}

} // namespace

std::string describe(const caf::error& e, std::chrono::milliseconds timeout) {
  using caf::sec;
  static const std::pair<sec, const char*> words[] = {
    {sec::request_receiver_down, "the process is gone (connection lost)"},
    {sec::malformed_basp_message,
     "the peer does not speak CAF's network protocol (not an actorgrad worker)"},
    {sec::incompatible_application_ids, "the peer is a CAF program but not actorgrad"},
    {sec::incompatible_versions, "the peer speaks another version of CAF's network protocol"},
    {sec::disconnect_during_handshake,
     "the peer closed the connection during the handshake (not an actorgrad worker?)"},
    {sec::cannot_connect_to_node, "cannot open a TCP connection"},
    {sec::no_actor_published_at_port, "nothing is published on that port"},
    {sec::unexpected_message, "the peer does not understand the request (not an actorgrad agent)"},
    {sec::no_route_to_receiving_node, "no route to the peer (connection lost)"},
    {sec::remote_linking_failed, "no route to the peer (connection lost)"},
  };
  if (!e)
    return "no error";
  // exit_reason::normal makes an empty error: take the category of another.
  if (e.category() == caf::make_error(caf::exit_reason::user_shutdown).category())
    return describe_exit(e);
  if (e == sec::request_timeout)
    return "no reply within " + std::to_string(timeout.count()) + " ms";
  for (const auto& [code, text] : words)
    if (e == code)
      return text;
  return caf::to_string(e);
}

std::string describe_exit(const caf::error& reason) {
  using caf::exit_reason;
  static const std::pair<exit_reason, const char*> words[] = {
    {exit_reason::normal, "it stopped"},
    {exit_reason::user_shutdown, "it shut down"},
    {exit_reason::kill, "it was killed"},
    {exit_reason::remote_link_unreachable,
     "its connection dropped (the process exited or the network failed)"},
    {exit_reason::unhandled_exception, "it failed with an unhandled exception"},
  };
  if (!reason)
    return "it stopped";
  for (const auto& [code, text] : words)
    if (reason == code)
      return text;
  return caf::to_string(reason);
}

std::string listen_problem(const std::string& host, std::uint16_t port) {
  std::string error;
  AddrList list = resolve(host, port, AI_PASSIVE, error);
  if (!list)
    return error;
  for (addrinfo* a = list.get(); a; a = a->ai_next) {
    Socket s{::socket(a->ai_family, a->ai_socktype, a->ai_protocol)};
    if (s.fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    // As CAF's publish does (reuse = true).
    int one = 1;
    ::setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(s.fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(s.fd, 1) != 0) {
      error = std::strerror(errno);
      if (errno == EADDRINUSE)
        error += " (another process listens there)";
      continue;
    }
    return {};
  }
  return error;
}

std::string connect_problem(const std::string& host, std::uint16_t port,
                            std::chrono::milliseconds wait) {
  std::string error;
  AddrList list = resolve(host, port, 0, error);
  if (!list)
    return error;
  for (addrinfo* a = list.get(); a; a = a->ai_next) {
    Socket s{::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK, a->ai_protocol)};
    if (s.fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    int rc = ::connect(s.fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{s.fd, POLLOUT, 0};
      rc = ::poll(&p, 1, static_cast<int>(wait.count()));
      if (rc == 0) {
        error = "no answer within " + std::to_string(wait.count()) + " ms";
        continue;
      }
      int so_error = 0;
      socklen_t len = sizeof so_error;
      ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      errno = so_error;
      rc = so_error == 0 ? 0 : -1;
    }
    if (rc == 0)
      return {};
    error = std::strerror(errno);
  }
  return error;
}

} // namespace actorgrad::remote::detail
