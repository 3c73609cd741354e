#define BOOST_TEST_MODULE stress_dags
#include <boost/test/unit_test.hpp>

// Stress: seeded random DAGs over cpu, sim:0, sim:1 and sim:2 run from 6
// threads at once on one Engine, each thread on its own pool (non-default)
// streams, with create_graph: first-order gradients and the gradients of
// their squared norm (double backward) must equal the ReferenceExecutor's on
// the same graph. Once with synchronous sim devices, once asynchronous with
// random kernel delays and the race detector (no report allowed), and with
// CPU-only graphs on engines whose calls spread over 2 and 4 CPU workers
// (Note [Parallel CPU nodes] in actors/detail/cpu_lanes.h). Calls
// alternate between synchronous grad() and grad_async(). Time-bounded
// (ACTORGRAD_STRESS_SECONDS per phase; 15 s by default); a call that hangs
// fails the test.

#include <array>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/device/guards.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/reference_executor.h"
#include "actorgrad/libengine/ops.h"
#include "tests/actors/actor_test_util.h"
#include "tests/streams/sim_test_util.h"
#include "tests/stress/stress_util.h"
#include "tests/support/random_dag.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

constexpr int kThreads = 6;
constexpr int kMinGraphsPerThread = 2;
constexpr double kTol = 1e-12;       ///< first order (as in test_equivalence)
constexpr double kSecondTol = 1e-10; ///< double backward: longer sums, other orders
const Seconds kCallLimit{60};        ///< one call (TSan builds are slow)
const std::array<Device, 3> kSims{Device::sim(0), Device::sim(1), Device::sim(2)};

struct Counts {
  std::atomic<int> graphs{0}, cross_device{0}, second_order{0}, both_failed{0}, on_pool{0};
};

/// What a thread is doing, for the hang report (written by its thread,
/// read by the main thread after a timeout).
using Stage = std::atomic<const char*>;

/// What the threads of a phase share; on the heap, so that a thread left
/// behind by a hang never writes to a finished test case's stack.
struct PhaseState {
  Counts counts;
  Failures failures;
  std::array<Stage, kThreads> stages;
};

/// sum_i sum(g_i * g_i) on the cpu: differentiating it again exercises the
/// graph create_graph built. Undefined when no g_i requires grad.
Tensor squared_norm(const variable_list& gs) {
  Tensor s;
  for (const auto& g : gs)
    if (g.defined() && g.requires_grad()) {
      Tensor term = sum(mul(g, g)).to(Device::cpu());
      s = s.defined() ? add(s, term) : term;
    }
  return s;
}

/// Runs `call` with `stage` set to `what`; returns its error message ("" on success).
template <class F>
std::string attempt(F call, Stage& stage, const char* what) {
  stage = what;
  try {
    call();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

/// Builds the graph of `seed` on this thread's pool streams of every sim
/// device and checks both orders of gradients against the reference.
/// `async`: the engine's first call goes through grad_async.
/// `devices`: those the graph spreads over.
void check_graph(std::uint64_t seed, bool async, Engine& eng, ReferenceExecutor& reference,
                 Counts& counts, Failures& failures, Stage& stage,
                 const std::vector<Device>& devices) {
  std::vector<std::unique_ptr<StreamGuard>> guards;
  for (Device d : kSims)
    guards.push_back(std::make_unique<StreamGuard>(stream_from_pool(d)));
  stage = "building a graph";
  testing::RandomDag g = testing::RandomDagGenerator(seed, devices).build();
  const std::string& where = g.description;
  counts.graphs++;
  counts.cross_device += g.devices_used > 1;
  for (const auto& r : g.roots)
    if (r.grad_fn() && r.grad_fn()->stream() && !r.grad_fn()->stream()->is_default())
      counts.on_pool++;

  // First order with create_graph, on both executors.
  variable_list ref1, act1;
  const std::string ref_err = attempt(
    [&] {
      ref1 = grad(g.roots, g.leaves, {g.root_grads, true, true, true}, reference);
    },
    stage, "reference grad");
  const std::string act_err = attempt(
    [&] {
      if (!async) {
        act1 = grad(g.roots, g.leaves, {g.root_grads, true, true, true}, eng);
        return;
      }
      auto f = eng.grad_async(g.roots, g.leaves,
                              {.grad_outputs = g.root_grads,
                               .retain_graph = true,
                               .create_graph = true,
                               .allow_unused = true});
      if (!ready_within(f, kCallLimit)) {
        hung() = true;
        throw std::runtime_error("HANG: grad_async did not complete");
      }
      act1 = f.get();
    },
    stage, async ? "engine grad_async (create_graph)" : "engine grad (create_graph)");
  auto outcome = [](const std::string& e) { return e.empty() ? "succeeded" : "failed: " + e; };
  if (ref_err != act_err)
    return failures.add(where + ": first order: reference " + outcome(ref_err) + "; engine " +
                        outcome(act_err));
  if (!ref_err.empty())
    return void(counts.both_failed++);
  if (auto d = difference(ref1, act1, kTol); !d.empty())
    return failures.add(where + ": first order: " + d);

  // Second order: the gradient of the first-order gradients' squared norm
  // (the reference keeps the forward graph, which both second calls cross).
  Tensor s_ref = squared_norm(ref1), s_act = squared_norm(act1);
  if (s_ref.defined() != s_act.defined())
    return failures.add(where + ": first-order results require grad in one executor only");
  if (!s_ref.defined())
    return;
  variable_list ref2, act2;
  const std::string ref2_err = attempt(
    [&] {
      ref2 = grad({s_ref}, g.leaves, {{}, true, false, true}, reference);
    },
    stage, "reference double backward");
  const std::string act2_err = attempt(
    [&] {
      act2 = grad({s_act}, g.leaves, {{}, false, false, true}, eng);
    },
    stage, "engine double backward");
  if (ref2_err != act2_err)
    return failures.add(where + ": second order: reference " + outcome(ref2_err) + "; engine " +
                        outcome(act2_err));
  if (!ref2_err.empty())
    return void(counts.both_failed++);
  if (auto d = difference(ref2, act2, kSecondTol); !d.empty())
    return failures.add(where + ": second order: " + d);
  counts.second_order++;
}

/// One thread: graphs until `deadline` (at least kMinGraphsPerThread),
/// alternating synchronous and asynchronous first calls.
void run_thread(int t, std::uint64_t phase_seed, Clock::time_point deadline, Engine& eng,
                Counts& counts, Failures& failures, Stage& stage,
                const std::vector<Device>& devices) {
  ReferenceExecutor reference;
  for (int i = 0; (i < kMinGraphsPerThread || Clock::now() < deadline) && !hung(); ++i)
    check_graph(phase_seed + static_cast<std::uint64_t>(t) * 1000003 + i, (t + i) % 2 == 1, eng,
                reference, counts, failures, stage, devices);
  stage = "done";
}

/// Runs kThreads threads of run_thread for `phase` and checks what they
/// saw. `cpu_only`: the graphs stay on the CPU, on `eng` (else the shared
/// engine, with sim devices).
void run_phase(const char* phase, std::uint64_t phase_seed, Engine* cpu_only = nullptr) {
  Engine& eng = cpu_only ? *cpu_only : testing::engine();
  const std::vector<Device> devices =
    cpu_only ? std::vector<Device>{Device::cpu()} : testing::default_dag_devices();
  const Seconds length = budget(15);
  const auto deadline = after(length);
  auto state = std::make_shared<PhaseState>();
  Counts& counts = state->counts;
  Failures& failures = state->failures;
  std::vector<std::future<void>> done;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    state->stages[t] = "starting";
    std::packaged_task<void()> task([state, t, phase_seed, deadline, &eng, &devices] {
      run_thread(t, phase_seed, deadline, eng, state->counts, state->failures, state->stages[t],
                 devices);
    });
    done.push_back(task.get_future());
    threads.emplace_back(std::move(task));
  }
  // Each thread ends its last graph after the deadline; a graph takes far
  // less than kCallLimit even under TSan.
  const auto hard_deadline = deadline + 3 * std::chrono::duration_cast<Clock::duration>(kCallLimit);
  for (int t = 0; t < kThreads; ++t)
    if (done[t].wait_until(hard_deadline) != std::future_status::ready) {
      hung() = true;
      BOOST_ERROR(phase << ": thread " << t << " still in '" << state->stages[t].load()
                        << "' long after the deadline (hang)");
    }
  if (hung()) {
    for (auto& th : threads)
      th.detach(); // ExitAfterHang ends the process after the other cases
    return;
  }
  for (auto& th : threads)
    th.join();
  for (auto& f : done)
    f.get();
  BOOST_TEST_MESSAGE(phase << ": " << counts.graphs << " graphs (" << counts.cross_device
                           << " across devices, " << counts.on_pool << " roots on pool streams), "
                           << counts.second_order << " double backward compared, "
                           << counts.both_failed << " calls failed alike in both executors, in "
                           << length.count() << " s");
  BOOST_TEST(failures.count() == 0, failures.count() << " failures; first:\n" << failures.text());
  BOOST_TEST(counts.graphs >= kThreads * kMinGraphsPerThread);
  if (cpu_only) {
    BOOST_TEST(eng.stats().cpu_tasks_shared > 0); // the workers took part
  } else {
    BOOST_TEST(counts.cross_device > counts.graphs / 2);
    BOOST_TEST(counts.on_pool > 0);
  }
  BOOST_TEST(counts.second_order > counts.graphs / 2);
  BOOST_TEST(counts.both_failed < counts.graphs / 10 + 1);
}

} // namespace

using SharedEngineFixture = testing::SharedEngine<3>;
BOOST_TEST_GLOBAL_FIXTURE(SharedEngineFixture);
BOOST_TEST_GLOBAL_FIXTURE(ExitAfterHang);

BOOST_AUTO_TEST_SUITE(stress)

BOOST_AUTO_TEST_CASE(random_dags_from_threads_on_synchronous_sim) {
  sim::configure({.async = false});
  run_phase("synchronous sim", 0x51a00000ULL);
  sim::configure({});
}

BOOST_AUTO_TEST_CASE(random_dags_from_threads_on_asynchronous_sim_with_race_detector) {
  testing::SimSettings sim(7, 30);
  run_phase("asynchronous sim", 0xa5a00000ULL);
  BOOST_TEST(sim::race_reports().empty(), "race reports:\n" << testing::joined_reports());
}

BOOST_AUTO_TEST_CASE(cpu_dags_from_threads_spread_over_cpu_workers) {
  for (std::size_t workers : {2u, 4u}) {
    EngineConfig config;
    config.cpu_workers = workers;
    config.cpu_spread_branch = 1; // spread at the first fork: every call takes the lanes
    Engine eng(config);
    run_phase(workers == 2 ? "2 CPU workers" : "4 CPU workers", 0xc0a00000ULL + workers, &eng);
  }
}

// The graph of seed 2780726407 (the asynchronous phase's thread 2 draws it
// second): a create_graph call from a thread whose current streams are pool
// streams, then a backward through the graph it built. Deterministic on one
// thread; with 3 ms kernel delays a wrong accumulation order shows as wrong
// second-order gradients, not only as a race report.
BOOST_AUTO_TEST_CASE(double_backward_from_pool_streams_seed_2780726407) {
  testing::SimSettings sim(7, 3000);
  Counts counts;
  Failures failures;
  Stage stage{"starting"};
  ReferenceExecutor reference;
  check_graph(2780726407ULL, false, testing::engine(), reference, counts, failures, stage,
              testing::default_dag_devices());
  BOOST_TEST(failures.count() == 0, failures.text());
  BOOST_TEST(counts.second_order.load() == 1);
  BOOST_TEST(sim::race_reports().empty(), "race reports:\n" << testing::joined_reports());
}

BOOST_AUTO_TEST_SUITE_END()
