#define BOOST_TEST_MODULE actors_recording_window
#include <boost/test/unit_test.hpp>

// Bounded recording (RecordingOptions::keep_passes, Note [Keeping the last
// passes] in actors/trace/recorder.h): 10,000 passes recorded with a window
// of 5 hold a bounded number of events all along, and the snapshot holds
// exactly the last 5 passes, whole; the window keeps a pass that is still
// running; snapshots taken while other threads record (on the CPU and
// sim:0) and drop chunks see whole passes only; a recording of every pass
// warns once it is large.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "actorgrad/actors/trace/recorder.h"
#include "actorgrad/tools/trace/timeline.h"
#include "tests/actors/trace_test_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

/// The top-level GraphTask ids in `t`, and each one's node_start count.
std::map<std::uint64_t, std::size_t> passes_in(const trace::Trace& t) {
  std::map<std::uint64_t, std::size_t> starts;
  for (const auto& track : t.tracks)
    for (const auto& e : track.events)
      if (e.depth == 0)
        starts[e.graph_task] += e.kind == trace::EventKind::node_start;
  return starts;
}

/// A chain of `n` multiplications, on the CPU or (`hop`) alternating
/// between the CPU and sim:0, so that a pass records on several actors and
/// sends messages.
Tensor chain_loss(const Tensor& x, int n, bool hop = false) {
  Tensor y = x;
  for (int i = 0; i < n; ++i)
    y = (hop ? to_device(y, i % 2 ? Device::sim(0) : Device::cpu()) : y) * 1.001;
  return sum(hop ? to_device(y, Device::cpu()) : y);
}

/// The node_start count of one pass of `loss` recorded alone.
std::size_t nodes_of_one_pass(Engine& engine, const Tensor& loss) {
  engine.start_recording();
  backward({loss}, {.retain_graph = true}, engine);
  const auto passes = passes_in(engine.stop_recording());
  BOOST_TEST_REQUIRE(passes.size() == 1u);
  return passes.begin()->second;
}

EngineConfig sim_engine() {
  EngineConfig c;
  c.devices = {Device::sim(0)};
  return c;
}

} // namespace

BOOST_AUTO_TEST_CASE(ten_thousand_passes_with_a_window_of_five_hold_a_bounded_recording) {
  Engine engine;
  Tensor x = Tensor::randn({4}, 1);
  x.set_requires_grad(true);
  const Tensor loss = chain_loss(x, 6);
  backward({loss}, {.retain_graph = true}, engine); // warm-up, not recorded
  engine.start_recording(trace::RecordingOptions::last(5));
  const trace::Recorder* rec = engine.recording();
  BOOST_TEST_REQUIRE(rec != nullptr);

  // One pass's events: recorded alone first (the window holds it whole).
  backward({loss}, {.retain_graph = true}, engine);
  const std::size_t per_pass = rec->events_held();
  BOOST_TEST_REQUIRE(per_pass > 10u);
  // The bound: 5 passes, the one running, the chunk being filled and the
  // one before it, which may still hold a kept pass's first events (a
  // CPU-only pass records on its caller's buffer only).
  const std::size_t bound = 6 * per_pass + 2 * 256;
  std::size_t most = 0;
  std::vector<std::size_t> held_at;
  for (int i = 1; i < 10'000; ++i) {
    backward({loss}, {.retain_graph = true}, engine);
    if (i % 100 == 0) {
      most = std::max(most, rec->events_held());
      held_at.push_back(rec->events_held());
    }
  }
  BOOST_TEST(rec->passes_finished() == 10'000u);
  BOOST_TEST(most <= bound, "events held stay bounded: at most " << most << " of " << bound);
  // Flat: the second half holds no more than the first did.
  const auto half = held_at.begin() + static_cast<long>(held_at.size() / 2);
  BOOST_TEST(*std::max_element(half, held_at.end()) <=
             *std::max_element(held_at.begin(), half) + 256);
  BOOST_TEST(rec->bytes_held() <= (bound / 256 + 1) * trace::EventBuffer::chunk_bytes(),
             "chunks held: " << rec->bytes_held() / trace::EventBuffer::chunk_bytes());

  // Writing it is bounded work: 5 passes, whatever ran before them.
  const trace::Trace t = engine.stop_recording();
  const auto passes = passes_in(t);
  BOOST_TEST(passes.size() == 5u);
  for (const auto& [task, starts] : passes)
    BOOST_TEST(starts == 8u, "pass " << task << " is whole: its 6 multiplications, sum and leaf");
  std::size_t events = 0;
  for (const auto& track : t.tracks)
    events += track.events.size();
  BOOST_TEST(events == 5 * per_pass);
  const trace::Timeline tl = trace::build_timeline(t); // throws on a pass cut in two
  BOOST_TEST(tl.slices.size() == 5 * 8u);
}

BOOST_AUTO_TEST_CASE(a_running_pass_is_kept_whatever_finishes_meanwhile) {
  Engine engine;
  Tensor x = Tensor::randn({4}, 2);
  x.set_requires_grad(true);
  std::atomic<bool> release{false}, inside{false};
  auto [slow, node] = lambda_op(x, "Slow", [&](variable_list&& g) {
    inside = true;
    while (!release)
      std::this_thread::yield();
    return std::move(g);
  });
  const Tensor slow_loss = sum(slow);
  const Tensor quick_loss = chain_loss(x, 4);
  engine.start_recording(trace::RecordingOptions::last(2));
  std::thread long_pass([&] { backward({slow_loss}, {}, engine); });
  while (!inside)
    std::this_thread::yield();
  for (int i = 0; i < 300; ++i) // long enough to roll many chunks over on this thread
    backward({quick_loss}, {.retain_graph = true}, engine);
  release = true;
  long_pass.join();
  const auto passes = passes_in(engine.stop_recording());
  // Kept: from the oldest of the two that finished last (the slow one) on.
  BOOST_TEST_REQUIRE(!passes.empty());
  BOOST_TEST(passes.begin()->second == 3u, "the pass that ran all along is kept whole "
                                           "(Slow, sum's backward, the leaf)");
  BOOST_TEST(passes.size() == 301u);
}

BOOST_AUTO_TEST_CASE(snapshots_while_threads_record_see_whole_passes) {
  Engine engine(sim_engine());
  Tensor x = Tensor::randn({4}, 3);
  x.set_requires_grad(true);
  const Tensor loss = chain_loss(x, 6, true);
  const std::size_t nodes = nodes_of_one_pass(engine, loss);
  engine.start_recording(trace::RecordingOptions::last(3));
  const trace::Recorder* rec = engine.recording();
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&] {
      while (!stop)
        backward({loss}, {.retain_graph = true}, engine);
    });
  for (int i = 0; i < 50; ++i) {
    const trace::Trace t = rec->snapshot();
    for (const auto& [task, starts] : passes_in(t))
      BOOST_TEST(starts <= nodes);
    BOOST_CHECK_NO_THROW(trace::build_timeline(t)); // no node_end without its start
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop = true;
  for (auto& t : threads)
    t.join();
  const auto passes = passes_in(engine.stop_recording());
  BOOST_TEST(passes.size() >= 3u);
  for (const auto& [task, starts] : passes)
    BOOST_TEST(starts == nodes, "pass " << task << " is whole");
}

BOOST_AUTO_TEST_CASE(a_buffer_drops_chunks_while_readers_walk_it) {
  // Note [Freeing chunks under readers]: a reader sees a gapless run of
  // events while the producer drops old chunks (ASan: no freed chunk read).
  trace::Retention retention;
  trace::EventBuffer buffer("producer", retention);
  constexpr std::uint64_t kEvents = 400'000;
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (std::uint64_t i = 1; i <= kEvents; ++i) {
      trace::Event e;
      e.graph_task = i / 100 + 1; // a "pass" every 100 events
      e.sequence_nr = i;
      buffer.append(std::move(e));
      if (i % 1000 == 0) // keep the last ~10 passes
        retention.drop_below.store(e.graph_task > 10 ? e.graph_task - 10 : 0,
                                   std::memory_order_release);
    }
    done = true;
  });
  bool gapless = true;
  std::size_t walks = 0;
  while (!done) {
    retention.readers.fetch_add(1, std::memory_order_seq_cst);
    const std::vector<trace::Event> events = buffer.published();
    retention.readers.fetch_sub(1, std::memory_order_seq_cst);
    for (std::size_t i = 1; i < events.size(); ++i)
      gapless = gapless && events[i].sequence_nr == events[i - 1].sequence_nr + 1;
    ++walks;
    // A pause: chunks unlinked during a walk are freed once none runs.
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  producer.join();
  BOOST_TEST(gapless);
  BOOST_TEST(walks > 0u);
  // Chunks unlinked while a walk ran (a reader descheduled mid-walk holds
  // them all) are freed when the producer next opens a chunk with no reader
  // about: this thread takes over as the producer (after the join).
  for (std::uint64_t i = kEvents + 1; i <= kEvents + 256; ++i) {
    trace::Event e;
    e.graph_task = kEvents / 100 + 1;
    e.sequence_nr = i;
    buffer.append(std::move(e));
  }
  retention.readers.fetch_add(1, std::memory_order_seq_cst);
  const std::size_t held = buffer.held();
  retention.readers.fetch_sub(1, std::memory_order_seq_cst);
  // The window's last raise (10 passes back) came before the last chunk
  // opened; what is held is those passes, to the chunk, and the new events.
  BOOST_TEST(held <= 11 * 100 + 3 * 256, "old chunks were dropped: " << held << " held");
  BOOST_TEST(retention.chunks.load() <= 16,
             "and freed: " << retention.chunks.load() << " of " << kEvents / 256 << " left");
}

BOOST_AUTO_TEST_CASE(a_recording_of_every_pass_warns_once_when_large) {
  Engine engine;
  Tensor x = Tensor::randn({4}, 4);
  x.set_requires_grad(true);
  const Tensor loss = chain_loss(x, 6);
  std::vector<std::pair<std::uint64_t, std::size_t>> warnings;
  const std::size_t limit = 4 * trace::EventBuffer::chunk_bytes();
  trace::RecordingOptions options;
  options.warn_bytes = limit;
  options.on_large = [&](std::uint64_t passes, std::size_t bytes) {
    warnings.emplace_back(passes, bytes);
  };
  engine.start_recording(std::move(options));
  for (int i = 0; i < 400; ++i)
    backward({loss}, {.retain_graph = true}, engine);
  const auto passes = passes_in(engine.stop_recording());
  BOOST_TEST(passes.size() == 400u, "nothing dropped without keep_passes");
  BOOST_TEST_REQUIRE(warnings.size() == 1u);
  BOOST_TEST(warnings[0].second >= limit);
  BOOST_TEST(warnings[0].first > 0u);
  BOOST_TEST(warnings[0].first < 400u);
}
