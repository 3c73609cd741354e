#define BOOST_TEST_MODULE distributed_errors
#include <boost/test/unit_test.hpp>

// Each distributed error produced on purpose, and its message checked: a
// port already taken (port and the system's text, from the binary and from
// Runtime::publish), nothing listening (connection refused, how long it
// waited), a plain TCP server that sends garbage, one that accepts and
// stays silent (how long it waited), a CAF program that is not actorgrad,
// and a worker of another protocol version (simulated here).

#include <atomic>
#include <chrono>
#include <cstring>
#include <regex>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/send.hpp>

#include "actorgrad/actors/remote/detail/protocol.h"
#include "actorgrad/actors/remote/runtime.h"
#include "actorgrad/version.h"
#include "tests/distributed/dist_test_util.h"
#include "tests/support/child_process.h"

using namespace actorgrad;
using Clock = std::chrono::steady_clock;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A TCP socket listening on 127.0.0.1 (a free port), closed at scope exit.
class Listener {
public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_TEST_REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    BOOST_TEST_REQUIRE(::listen(fd_, 8) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~Listener() { close(); }
  void close() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }
  int fd() const { return fd_; }
  std::uint16_t port() const { return port_; }

private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

/// A plain TCP server: answers every connection with an HTTP error page.
class GarbageServer {
public:
  GarbageServer() {
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{listener_.fd(), POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0)
          continue;
        const int c = ::accept(listener_.fd(), nullptr, nullptr);
        const char* page = "HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n\r\nBad Request"
                           "...........................................................";
        (void)!::write(c, page, std::strlen(page));
        ::usleep(200000);
        ::close(c);
      }
    });
  }
  ~GarbageServer() {
    stop_ = true;
    thread_.join();
  }
  std::uint16_t port() const { return listener_.port(); }

private:
  Listener listener_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// The DistError message of `fn`, and how long it took.
template <class F>
std::pair<std::string, double> timed_error_of(F&& fn) {
  const auto start = Clock::now();
  std::string message = testing::error_of(fn);
  return {message, std::chrono::duration<double>(Clock::now() - start).count()};
}

/// An actor system publishing one actor on a free 127.0.0.1 port: a fake
/// peer. `actorgrad_types`: registered as an actorgrad process does.
class FakePeer {
public:
  FakePeer(bool actorgrad_types, caf::behavior (*fun)(caf::event_based_actor*)) {
    if (actorgrad_types)
      remote::detail::register_remote_types(cfg_);
    else
      cfg_.load<caf::io::middleman>();
    system_ = std::make_unique<caf::actor_system>(cfg_);
    actor_ = system_->spawn(fun);
    auto port = system_->middleman().publish(actor_, 0, "127.0.0.1", true);
    BOOST_TEST_REQUIRE(static_cast<bool>(port));
    port_ = *port;
  }
  ~FakePeer() {
    (void)system_->middleman().unpublish(actor_, port_);
    caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
    actor_ = nullptr;
  }
  std::uint16_t port() const { return port_; }

private:
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
  caf::actor actor_;
  std::uint16_t port_ = 0;
};

} // namespace

BOOST_AUTO_TEST_CASE(port_in_use_names_port_and_system_error) {
  Listener taken;
  const std::string port = std::to_string(taken.port());
  const auto r =
    testing::run({testing::actorgrad_binary(), "worker", "--port", port}, std::chrono::seconds(20));
  BOOST_TEST_MESSAGE("worker on a taken port: exit " << r.status << ": " << r.err);
  BOOST_TEST(r.status == 1);
  BOOST_TEST(contains(r.err, "cannot listen on 127.0.0.1:" + port + ": Address already in use"),
             r.err);
  remote::Runtime rt;
  auto [e, s] = timed_error_of([&] { rt.publish(taken.port()); });
  BOOST_TEST(contains(e, "cannot listen on 127.0.0.1:" + port + ": Address already in use"), e);
  std::tie(e, s) = timed_error_of([&] { rt.publish(0, "no-such-host.invalid"); });
  BOOST_TEST(contains(e, "cannot resolve host 'no-such-host.invalid'"), e);
}

BOOST_AUTO_TEST_CASE(nothing_listening_is_connection_refused) {
  std::uint16_t port;
  {
    Listener l;
    port = l.port();
  } // closed: nothing listens there now
  remote::Runtime rt;
  auto [e, s] = timed_error_of([&] { rt.connect("127.0.0.1", port); });
  BOOST_TEST_MESSAGE("nothing listening (" << s << " s): " << e);
  BOOST_TEST(contains(e, "cannot connect to worker 127.0.0.1:" + std::to_string(port) +
                           ": Connection refused (after "),
             e);
  BOOST_TEST(std::regex_search(e, std::regex(R"(after \d+ ms\))")), e);
  BOOST_TEST(s < 5.0);
}

BOOST_AUTO_TEST_CASE(a_plain_tcp_server_is_not_an_actorgrad_worker) {
  GarbageServer garbage;
  remote::Runtime rt;
  auto [e, s] = timed_error_of([&] { rt.connect("127.0.0.1", garbage.port()); });
  BOOST_TEST_MESSAGE("garbage server (" << s << " s): " << e);
  BOOST_TEST(contains(e, "cannot connect to worker 127.0.0.1:" + std::to_string(garbage.port())),
             e);
  BOOST_TEST(contains(e, "not an actorgrad worker"), e);
  BOOST_TEST(!contains(e, "malformed_basp_message"), e);
  BOOST_TEST(s < 5.0);
}

BOOST_AUTO_TEST_CASE(a_silent_server_times_out_saying_how_long_it_waited) {
  Listener silent; // the kernel accepts; nobody speaks
  remote::RuntimeConfig config;
  config.timeout = std::chrono::milliseconds(500);
  remote::Runtime rt(config);
  auto [e, s] = timed_error_of([&] { rt.connect("127.0.0.1", silent.port()); });
  BOOST_TEST_MESSAGE("silent server (" << s << " s): " << e);
  BOOST_TEST(contains(e, "cannot connect to worker 127.0.0.1:" + std::to_string(silent.port()) +
                           ": it accepted the TCP connection but sent no handshake within 500 ms"),
             e);
  BOOST_TEST(s >= 0.45);
  BOOST_TEST(s < 5.0);
}

BOOST_AUTO_TEST_CASE(a_caf_program_that_is_not_actorgrad) {
  FakePeer other(false, [](caf::event_based_actor*) -> caf::behavior { return {[](int) {}}; });
  remote::Runtime rt;
  auto [e, s] = timed_error_of([&] { rt.connect("127.0.0.1", other.port()); });
  BOOST_TEST_MESSAGE("other CAF program: " << e);
  BOOST_TEST(contains(e, "127.0.0.1:" + std::to_string(other.port()) +
                           ": the peer is a CAF program but not actorgrad"),
             e);
}

BOOST_AUTO_TEST_CASE(a_worker_of_another_protocol_version_is_refused) {
  FakePeer future(true, [](caf::event_based_actor*) -> caf::behavior {
    return {[](remote::detail::Hello&) {
      return remote::detail::HelloReply{"", remote::kProtocolVersion + 1, "9.9.9", "future worker"};
    }};
  });
  remote::Runtime rt;
  auto [e, s] = timed_error_of([&] { rt.connect("127.0.0.1", future.port()); });
  BOOST_TEST_MESSAGE("another protocol version: " << e);
  BOOST_TEST(
    contains(e, "cannot connect to worker 127.0.0.1:" + std::to_string(future.port()) +
                  ": it speaks actorgrad protocol " + std::to_string(remote::kProtocolVersion + 1) +
                  " (actorgrad 9.9.9), this process protocol " +
                  std::to_string(remote::kProtocolVersion) + " (actorgrad " ACTORGRAD_VERSION ")"),
    e);
}
