#define BOOST_TEST_MODULE cuda_stream_tracks
#include <boost/test/unit_test.hpp>

// Stream tracks on CUDA (Note [Device work timing on CUDA] in
// device/cuda/plugin/device_work_timer.h): a recorded backward of an MLP
// on cuda:0 shows every kernel, copy and wait its nodes launched exactly
// once on its stream's track, timed by CUDA events, after its launch and
// one at a time per stream; the Chrome trace pairs each launch with its
// span; the critical path fits in the call; every block of cuda:0 it
// allocated is free at its end. Exits 77 (skipped) without a
// GPU.

#include <cstdint>
#include <map>
#include <sstream>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/ops.h"
#include "actorgrad/tools/trace/detail/chrome_json.h"
#include "actorgrad/tools/trace/detail/summary.h"
#include "actorgrad/tools/trace/timeline.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/require_gpu.h"
#include "tests/support/chrome_trace_check.h"
#include "tools/cli/mlp.h"

using namespace actorgrad;
using namespace actorgrad::testing;

BOOST_TEST_GLOBAL_FIXTURE(RequireGpu);

namespace {

void check_stream_track() {
  const std::vector<std::int64_t> sizes = {12, 256, 256, 5};
  const std::int64_t batch = 512;
  cli::Mlp mlp(sizes, cli::Activation::relu, DType::f32, {gpu}, 7);
  const auto x = Tensor::randn({batch, sizes.front()}, 11, DType::f32);
  std::vector<std::int64_t> targets;
  for (std::int64_t i = 0; i < batch; ++i)
    targets.push_back(i % sizes.back());
  EngineConfig config;
  config.devices = {gpu};
  Engine engine(config);
  const auto loss = cross_entropy(mlp.forward(x), targets);
  backward({loss}, {.retain_graph = true}, engine); // warm-up: cuBLAS, the allocator
  engine.start_recording();
  backward({loss}, {.retain_graph = true}, engine);
  const trace::Trace t = engine.stop_recording();
  const trace::Timeline tl = trace::build_timeline(t);
  const trace::detail::Summary s = trace::detail::summarize(tl);
  BOOST_TEST_INFO("summary:\n" << trace::detail::format_summary(tl, s));

  std::map<std::uint64_t, int> launches, runs;
  for (const trace::Track& track : t.tracks)
    for (const trace::Event& e : track.events) {
      if (e.kind == trace::EventKind::launch && e.work != DeviceWork::record)
        ++launches[e.message_id];
      if (e.kind == trace::EventKind::device_run)
        ++runs[e.message_id];
    }
  BOOST_TEST_REQUIRE(launches.size() > 10u, "the backward's kernels were seen launched");
  BOOST_TEST(launches == runs, "every launch ran once");

  std::vector<const trace::DeviceSpan*> previous(tl.streams.size(), nullptr);
  std::size_t kernels = 0;
  for (const trace::DeviceSpan& d : tl.device_spans) {
    if (d.kind == DeviceWork::record)
      continue;
    kernels += d.kind == DeviceWork::kernel;
    BOOST_TEST(tl.streams[d.stream].rfind("cuda:0/", 0) == 0u);
    BOOST_TEST(d.start_ns >= d.launch_ns, d.op << " starts after its launch");
    BOOST_TEST(d.end_ns >= d.start_ns);
    if (const trace::DeviceSpan* p = previous[d.stream]) {
      BOOST_TEST(d.point > p->point);
      BOOST_TEST(d.start_ns >= p->end_ns, "one item at a time on " << tl.streams[d.stream]);
    }
    previous[d.stream] = &d;
  }
  BOOST_TEST(kernels > 5u);

  std::ostringstream json;
  trace::detail::write_chrome_json(tl, json);
  BOOST_TEST(testing::check_chrome_structure(json.str(), tl) == tl.slices.size());
  BOOST_TEST_REQUIRE(s.critical_paths.size() == 1u);
  BOOST_TEST(s.critical_paths[0].length_ns <= s.critical_paths[0].wall_ns);
  std::int64_t device_ns = 0;
  for (const trace::detail::OpStats& op : s.ops)
    device_ns += op.device_ns;
  BOOST_TEST(device_ns > 0);
}

} // namespace

BOOST_AUTO_TEST_CASE(mlp_backward_on_its_stream_track) {
  check_frees_its_memory(check_stream_track);
}
