#define BOOST_TEST_MODULE doorbell
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actorgrad/actors/detail/doorbell.h"
#include "actorgrad/actors/detail/engine_actor.h"

// Note [Doorbell] and Note [Waking an actor without a lock]: a message sent
// to a sleeping engine actor always wakes it. A lost wake-up shows as a
// sleeper that never finishes; each case gives it a minute, then reports
// and exits (the sleeping thread could not be joined).

using namespace actorgrad::detail;
using namespace std::chrono_literals;

namespace {

constexpr int senders = 4;
constexpr int per_sender = 20000;

/// Waits for `done` at most a minute; past that, fails the whole binary.
void expect_within_a_minute(std::future<void>& done, const char* what) {
  if (done.wait_for(60s) == std::future_status::ready)
    return;
  std::fprintf(stderr, "%s: no progress for a minute, a wake-up was lost\n", what);
  std::fflush(stderr);
  std::_Exit(1);
}

/// Sends senders * per_sender messages through `send(i)`: `senders` threads
/// at once, or (`one_at_a_time`) one thread that waits until `taken()`
/// counts each message before it sends the next, so that each message is
/// the last one, whose wake-up nothing later would make up for.
template <class Send, class Taken>
void send_all(bool one_at_a_time, Send send, Taken taken) {
  if (one_at_a_time) {
    for (int i = 0; i < senders * per_sender; ++i) {
      send(i);
      const auto give_up = std::chrono::steady_clock::now() + 60s;
      while (taken() <= i && std::chrono::steady_clock::now() < give_up)
        std::this_thread::yield();
      if (taken() <= i)
        return; // lost: the caller's wait reports it
    }
    return;
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < senders; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < per_sender; ++i) {
        send(i);
        if (i % 64 == 0)
          std::this_thread::yield(); // let the sleeper run dry and sleep again
      }
    });
  for (auto& t : threads)
    t.join();
}

/// Counts the int messages it receives, through `receive` or `dequeue`.
class Counter final : public EngineActor {
public:
  Counter(caf::actor_config& cfg, bool use_receive, std::atomic<int>* taken)
    : EngineActor(cfg), use_receive_(use_receive), taken_(taken) {}

  void act() override {
    int n = 0;
    if (use_receive_) {
      receive_while([&] { return n < senders * per_sender; })([&](int) { taken_->store(++n); });
    } else {
      while (n < senders * per_sender) {
        auto element = dequeue();
        if (element->content().match_elements<int>())
          taken_->store(++n);
      }
    }
  }

private:
  bool use_receive_;
  /// Written by the actor, read by the test.
  std::atomic<int>* taken_;
};

void every_message_reaches(bool use_receive, bool one_at_a_time) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  std::atomic<int> taken{0};
  auto counter = sys.spawn<Counter>(use_receive, &taken);
  auto done = std::async(std::launch::async, [&] {
    send_all(
      one_at_a_time, [&](int i) { caf::anon_send(counter, i); }, [&] { return taken.load(); });
    while (taken.load() < senders * per_sender)
      std::this_thread::yield();
  });
  expect_within_a_minute(done, use_receive ? "Counter (receive)" : "Counter (dequeue)");
  BOOST_TEST(taken.load() == senders * per_sender);
  caf::scoped_actor self{sys};
  self->wait_for(counter);
}

void the_sleeper_sees_every_ring(bool one_at_a_time) {
  Doorbell bell;
  std::atomic<int> mail{0};  // the "mailbox": how many messages were posted
  std::atomic<int> taken{0}; // how many the sleeper has seen
  auto sleeper = std::async(std::launch::async, [&] {
    while (taken.load() < senders * per_sender) {
      bell.sleep_unless([&] { return mail.load() > taken.load(); });
      taken.store(mail.load());
    }
  });
  send_all(
    one_at_a_time,
    [&](int) {
      mail.fetch_add(1);
      bell.ring();
    },
    [&] { return taken.load(); });
  expect_within_a_minute(sleeper, "Doorbell");
  BOOST_TEST(taken.load() == senders * per_sender);
}

} // namespace

BOOST_AUTO_TEST_CASE(a_doorbell_rung_by_many_threads_wakes_its_sleeper_for_every_message) {
  the_sleeper_sees_every_ring(false);
}

BOOST_AUTO_TEST_CASE(a_doorbell_wakes_its_sleeper_for_each_last_message) {
  the_sleeper_sees_every_ring(true);
}

BOOST_AUTO_TEST_CASE(an_engine_actor_receives_every_message_sent_while_it_sleeps) {
  every_message_reaches(true, false);
  every_message_reaches(true, true);
}

BOOST_AUTO_TEST_CASE(an_engine_actor_dequeues_every_message_sent_while_it_sleeps) {
  every_message_reaches(false, false);
  every_message_reaches(false, true);
}
